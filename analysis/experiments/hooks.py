"""What an experiment asks of the world outside the library: results that may already be stored.

The library never imports the cache (`tests/test_layers.py`), so the cache is injected, as the model report's
hooks are: `python -m analysis measure` passes `cache.experiments.cached_hooks(store)`, so a measurement run twice
computes once and an interrupted one resumes; tests pass `local_hooks()`, which computes everything and stores
nothing. Both give the same numbers (the cache stores exactly what the computation returns).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Hooks:
    backbone: Callable  # (model name) -> Backbone (tests hand out tiny random models by name)
    encode: Callable  # (backbone, method, texts) -> (emb (n, d), {"cached": bool, "seconds": float})
    compress_predict: Callable  # (system, items, mode, ids) -> one prediction dict per item
    report: Callable  # (backbone, pairs) -> analysis.report.build.Hooks (window, sweep, soft-token curve)
    # (parts, compute) -> compute()'s JSON-able value, kept under `parts`: what cannot be recomputed from stored
    # vectors (a timing); the claims board's cost claims resume from it
    remember: Callable = lambda parts, compute: compute()
    # What is already stored, asked without computing anything, so a budget counts only the work left (the claims
    # board's plan): (backbone, method, texts) -> whether `encode` would only read; a method still choosing its
    # `layers=auto` window says False
    stored: Callable = lambda backbone, method, texts: False
    # (backbone) -> the `report` hooks' `window()` when it is stored, else None
    stored_window: Callable = lambda backbone: None


def local_hooks(batch_size: int = 16) -> Hooks:
    """Everything computed in this process, nothing stored."""
    from analysis.models.backbone import load_backbone
    from analysis.report.build import local_hooks as report_hooks

    def encode(backbone, method, texts):
        began = time.perf_counter()
        emb = method.encode(backbone, texts, batch_size=batch_size)
        return emb, {"cached": False, "seconds": time.perf_counter() - began}

    def compress_predict(system, items, mode, ids=False):
        return system.predict([it if isinstance(it, dict) else it.to_json() for it in items], mode, ids=ids)

    return Hooks(load_backbone, encode, compress_predict,
                 lambda backbone, pairs: report_hooks(backbone, pairs, batch_size=batch_size))
