"""Options and steps shared by the commands that embed texts with a method (`embed`, `sts`, ...):
--method/--param/--model/--batch-size/--no-cache, building the method, loading the model, and encoding
through the compute cache with warnings turned into one stderr line each."""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings

import numpy as np

from analysis.errors import UserError


def add_method_arguments(parser) -> None:
    parser.add_argument("--method", required=True, help="embedding method name (see `list_methods()`), e.g. prompteol")
    parser.add_argument("--param", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                        help="method parameter, e.g. --param layer=20 (repeatable)")
    parser.add_argument("--model", default="default", help="'default', a Hugging Face id in the local cache, or a folder")
    parser.add_argument("--batch-size", type=int, default=16, help="texts per forward pass (default 16)")
    parser.add_argument("--no-cache", action="store_true", help="always compute; neither read nor write the cache")


def method_from_args(args):
    """The configured method; raises UserError for an unknown name or a bad parameter (before any model loads)."""
    from analysis.methods import get_method, parse_params

    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}.")
    return get_method(args.method, **parse_params(args.method, args.param))


def load_model(name: str):
    from transformers.utils import logging as hf_logging

    from analysis.backbone import load_backbone

    hf_logging.disable_progress_bar()  # stdout carries one JSON line; keep stderr for messages
    return load_backbone(name)


def ready(args, backbone, method):
    """The method ready to run: KV-Embedding's `layers=auto` window from the compute cache (computed into it once
    per model and prompt); with --no-cache computed in memory and not stored."""
    if getattr(args, "no_cache", False) or not getattr(method, "needs_window", lambda b: False)(backbone):
        return method
    from cache import default_store, resolve_method

    return resolve_method(default_store(), backbone, method)


def params_dict(method) -> dict:
    return dataclasses.asdict(method.params)


class _FixedBatch:
    """A method seen by the cache with a fixed batch size. The batch size is left out of the cache key on
    purpose: results do not depend on it (tested to 1e-4), so the app and the command line share entries."""

    def __init__(self, method, batch_size: int):
        self.method, self.batch_size = method, batch_size
        self.name, self.params = method.name, method.params
        self.seconds = None  # time of our own encode call, if the cache made one

    def encode(self, backbone, texts, **kwargs):
        start = time.perf_counter()
        emb = self.method.encode(backbone, texts, batch_size=self.batch_size, **kwargs)
        self.seconds = time.perf_counter() - start
        return emb


def encode(args, backbone, method, texts: list[str]) -> tuple[np.ndarray, dict]:
    """Embed `texts`; returns (emb (n, d) float32, {"seconds", "cached", "warnings"}).

    `seconds` is the time the embeddings took to compute; on a cache hit, the time recorded when they were
    computed (the lookup itself is in `lookup_seconds`). Warnings (e.g. truncation) go to stderr as one
    `warning: ...` line each, on hits too."""
    progress = _stderr_progress(method.name) if sys.stderr.isatty() else None
    fixed = _FixedBatch(ready(args, backbone, method), args.batch_size)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.no_cache:
            emb, hit, meta = fixed.encode(backbone, texts, progress=progress), False, {}
        else:
            from cache import cached_encode, default_store

            emb, meta, hit = cached_encode(default_store(), backbone, fixed, texts, progress=progress)
    wall = time.perf_counter() - start
    if progress is not None:
        print(file=sys.stderr)
    messages = list(dict.fromkeys([str(w.message) for w in caught] + list(meta.get("warnings") or [])))
    for m in messages:
        print(f"warning: {m}", file=sys.stderr)
    # Our own encode time when we computed (the cache's record may be another process's that won the race to
    # store the same entry); on a hit, the time recorded when the entry was computed.
    seconds = fixed.seconds if fixed.seconds is not None else float(meta.get("seconds", wall))
    info = {"seconds": seconds, "cached": hit, "warnings": messages}
    if hit:
        info["lookup_seconds"] = wall
    return np.asarray(emb, dtype=np.float32), info


def _stderr_progress(label: str):
    def progress(done: int, total: int) -> None:
        print(f"\r{label}: {done}/{total} texts", end="", file=sys.stderr, flush=True)

    return progress
