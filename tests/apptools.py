"""Helpers shared by the AppTest modules: an isolated cache root, and reading what a page drew."""

import base64
import json
import re
from contextlib import contextmanager

import numpy as np
import pytest


@contextmanager
def isolated_cache(tmp_path_factory, shared=("models",)):
    """A fresh EMBEDSCOPE_CACHE for one test module. The `shared` sub-stores are symlinks to the real ones, so the
    converted default model (a ~30 s GGUF conversion) is made at most once and never per test run."""
    from analysis.core.paths import cache_root

    root = tmp_path_factory.mktemp("embedscope_cache")
    for name in shared:
        real = cache_root() / name
        real.mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(real, target_is_directory=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EMBEDSCOPE_CACHE", str(root))
        yield root


def errors(at) -> list[str]:
    """The error boxes' text as a reader sees it: pages escape user text for Markdown (ui.md), so CommonMark's
    backslash escapes are undone here."""
    return [shown(e.value) for e in at.error]


def shown(markdown: str) -> str:
    """Undo CommonMark backslash escapes (any ASCII punctuation) and hard line breaks."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown).replace("  \n", "\n")


def figures(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def figure(at, i: int = 0) -> dict:
    return figures(at)[i]


def values(v) -> np.ndarray:
    """A trace's data array: a plain list (None = a gap, read as NaN) or Plotly's typed-array form
    {"dtype", "bdata" (base64), optional "shape"}."""
    if isinstance(v, dict) and "bdata" in v:
        arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        if "shape" in v:
            arr = arr.reshape([int(x) for x in str(v["shape"]).split(",")])
        return arr
    if any(x is None for x in np.ravel(np.asarray(v, dtype=object))):
        return np.asarray([np.nan if x is None else x for x in v], dtype=float)
    return np.asarray(v)


def tables(at) -> list:
    """The static tables (ui.show_table) as a reader sees them: escapes undone, and a column whose every cell reads
    as a number (blanks as NaN) given back as numbers."""
    import pandas as pd

    found = []
    for t in at.table:
        frame = t.value.copy()
        frame.columns = [shown(str(c)) for c in frame.columns]
        index = [shown(str(i)) for i in frame.index]
        frame.index = [int(i) for i in index] if all(i.isdigit() for i in index) else index  # a hidden RangeIndex
        frame = frame.map(lambda v: shown(str(v)))
        for c in frame.columns:
            numbers = pd.to_numeric(frame[c].replace("", np.nan), errors="coerce")
            if numbers.notna().sum() == (frame[c] != "").sum():
                frame[c] = numbers
        found.append(frame)
    return found
