"""Computations through the on-disk cache (`cache.compute`, one function per kind of result), with a progress bar,
timing, hit/miss and warnings shown."""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable

import numpy as np
import streamlit as st

import cache
from analysis.core.errors import UserError
from ui.figures import start_page
from ui.model import get_backbone, store
from ui.nav import hand_over_to_app
from ui.text import md


@contextlib.contextmanager
def user_errors():
    """Run a page body: a UserError becomes its message on the page, and the page stops there. On a fresh
    server's first run of a page opened by its link, hands the run over to app.py first (`ui.nav`). Starts the
    collection of the page's figures (`ui.figures`)."""
    hand_over_to_app()
    start_page()
    try:
        yield
    except UserError as err:
        st.error(md(err))  # messages quote user input (a model name, a file name): shown as typed
        st.stop()


def progress_bar(label: str, first: str | None = None):
    """(bar, progress): a Streamlit progress bar showing `label` (`first` until the first report) and the cache's
    `progress(done, total, message)` that fills it (`cache.progress`); `bar.empty()` removes it."""
    label = md(label)  # labels name data sets, which may be the user's file names
    bar = st.progress(0.0, text=label if first is None else md(first))

    def progress(done: int, total: int, message: str = "") -> None:
        text = md(message) if message else f"{done:,}/{total:,}"
        bar.progress(min(done / max(total, 1), 1.0), text=f"{label} {text}")

    return bar, progress


def _report(label: str, hit: bool, meta: dict, wall: float, quiet: bool) -> None:
    label = md(label)
    for message in meta.get("warnings") or []:
        st.warning(f"{label}: {md(message)}")
    if quiet:
        return
    if hit:
        st.caption(f"{label}: from the cache in {wall:.2f} s (computed earlier in {meta.get('seconds', 0):.1f} s)")
    else:
        st.caption(f"{label}: computed in {wall:.1f} s and stored in the cache")


def ready(method):
    """The method ready to run on the chosen model: KV-Embedding's `layers=auto` window looked up in the cache,
    or computed into it once per model and prompt (with a progress bar)."""
    backbone = get_backbone()
    if not cache.needs_window(method, backbone):  # nothing to resolve: no progress bar
        return method
    bar, progress = progress_bar(f"{method.title}: the layers=auto window (intrinsic dimension, once per model "
                                 "and prompt)…")
    try:
        return cache.resolve_method(store(), backbone, method, progress)
    finally:
        bar.empty()


def encode_with_info(method, texts, *, quiet: bool = False, **encode_kwargs) -> tuple[np.ndarray, dict]:
    """Like `encode`, also returning {"hit", "seconds" (this call), "computed_seconds", "warnings", "n"}."""
    texts = list(getattr(texts, "texts", texts))  # Texts or a list of strings
    backbone = get_backbone()
    label = getattr(method, "title", method.name)
    bar, progress = progress_bar(f"{label}: embedding {len(texts):,} text(s)…")
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():  # shown below from meta, on hits and misses alike
            warnings.simplefilter("ignore")
            emb, meta, hit = cache.cached_encode(store(), backbone, method, texts, progress=progress,
                                                 **encode_kwargs)
    finally:
        bar.empty()
    wall = time.perf_counter() - start
    _report(label, hit, meta, wall, quiet)
    return emb, {"hit": hit, "seconds": wall, "computed_seconds": float(meta.get("seconds", wall)),
                 "warnings": list(meta.get("warnings") or []), "n": len(texts)}


def encode(method, texts, **encode_kwargs) -> np.ndarray:
    """Embeddings (n, d) of `texts` (a list or `analysis.data.corpora.Texts`) with a configured method, through the
    cache; shows a progress bar while computing, then where the result came from and how long it took, and
    any truncation warning (also when the result comes from the cache)."""
    return encode_with_info(method, texts, **encode_kwargs)[0]


def shown(label: str, run: Callable, *, quiet: bool = False):
    """Run one of `cache.compute`'s functions for a page: `run(progress) -> (value, meta, hit)` with a progress bar,
    then where the result came from and how long it took, and the warnings it raised (on hits too).

        curve, meta = ui.shown("Anisotropy", lambda progress: cache.compute.anisotropy(ui.store(), bb, m, texts,
                                                                                       progress))

    Returns:
        (value, meta); meta is a copy with "cache_hit" (bool) and "wall_seconds" (this call) added.
    """
    bar, progress = progress_bar(f"{label}…")
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():  # shown below from meta, on hits and misses alike
            warnings.simplefilter("ignore")
            value, meta, hit = run(progress)
    finally:
        bar.empty()
    wall = time.perf_counter() - start
    _report(label, hit, meta, wall, quiet)
    return value, {**meta, "cache_hit": hit, "wall_seconds": wall}
