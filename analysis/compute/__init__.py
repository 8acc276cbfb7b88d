"""The one door between a measurement and stored results: `Compute`, a small typed interface that the model report,
the experiments, the claims board and the pages ask for every costly result.

The library never imports the cache (`tests/test_layers.py`), so the cache is injected: `Direct` (this package)
computes everything in this process and stores nothing (tests, `--no-cache`); `cache.Cached` serves the same calls
from the on-disk store, so a measurement run twice computes once and an interrupted one resumes. Both return the
same numbers: the store keeps exactly what the computation returns. A new experiment needs no new door: what it
computes beyond embeddings, windows, sweeps, soft-token curves and compression answers goes through `remember`
(a JSON value under the key parts it names, with the code version of the modules that compute it).

    compute = Direct()                                       # or cache.Cached(store)
    bb = compute.backbone("default")
    enc = compute.encode(bb, get_method("prompteol"), texts)  # enc.vectors (n, d), enc.seconds, enc.cached
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

KV_BASE = {"prompt": "document", "pooling": "hybrid"}  # KV-Embedding's settings in every layer-map cell and window


@dataclass(frozen=True)
class Encoded:
    """Embeddings of a list of texts, with what they cost here."""

    vectors: np.ndarray  # (n, d) float32, input order
    seconds: float  # the computation's wall time (when read from the store: the time it took when computed)
    cached: bool  # read from the store, nothing computed


class Compute(Protocol):
    """What a measurement asks of the world outside the library. `progress(done, total, message)` where offered."""

    def backbone(self, name: str):
        """The model `name` (a built-in name, a folder, a .gguf file; tests hand out tiny random models)."""

    def backbone_in(self, backbone, dtype: str):
        """The same model in another precision ("bfloat16", "float32"): its identity carries the dtype, so the two
        never share a stored result."""

    def encode(self, backbone, method, texts: list[str]) -> Encoded:
        """`method`'s embeddings of `texts` on `backbone`."""

    def is_stored(self, backbone, method, texts: list[str]) -> bool:
        """Whether `encode` would only read (a budget counts only the work left); False when not storing."""

    def window(self, backbone, *, compute: bool = True):
        """(Selection, ID per hidden state) of KV-Embedding's `layers=auto` window (`KV_BASE`); with
        compute=False, None unless it is already known."""

    def sweep(self, backbone, data, cells: list, progress: Callable | None = None,
              should_stop: Callable[[], bool] | None = None):
        """`analysis.sweep.runner.SweepRun` of layer-map cells (`KV_BASE` plus each cell) on pairs or a task."""

    def soft_curve(self, backbone, pairs, ks: list[int]) -> dict:
        """`analysis.inspect.generation.scaling_curve` arrays with the shipped adapter."""

    def compress_predict(self, system, items: list, mode: str, ids: bool = False) -> list[dict]:
        """One prediction dict per item from a `CompressionSystem`."""

    def remember(self, parts: dict, compute: Callable[[], object], *, modules: tuple = ()):
        """`compute()`'s JSON-able value, kept under `parts` and the code version of `modules`: what stored vectors
        cannot give back (a timing, a count, a small table)."""

    def claims_board(self, backbone) -> dict:
        """The model's newest claims board as the report's Claims section shows it (read, never run)."""
