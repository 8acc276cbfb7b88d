"""`Cached`: the library's `Compute` door (`analysis.compute`) served from the store, for the command line and the
pages alike: embeddings through `cached_encode` (every document's vector reused), the `layers=auto` window through
`auto_window`, layer-map cells through `cached_sweep` (one entry per cell, on Ray when asked), the soft-token curve
under the Soft tokens page's key, compression answers through `cached_compress_predict`, other values through
`remember`. So a report, a measurement or a claims board run twice computes once, an interrupted one resumes, and
the pages and commands that did the same work before (`sts`, `sweep`, the Layer explorer, Benchmark) have already
paid for part of it.

    compute = Cached(default_store())
    enc = compute.encode(backbone, method, texts)        # enc.cached: read, nothing computed
"""

from __future__ import annotations

import numpy as np

from analysis.compute import KV_BASE, Encoded
from analysis.methods import get_method
from analysis.models.backbone import load_backbone
from cache import keys
from cache.claims import report_summary
from cache.compute import (
    auto_window,
    cached_compress_predict,
    cached_encode,
    computed,
    encoded_stored,
    ledger,
    soft_scaling,
)
from cache.sweep import cached_sweep


class Cached:
    """`Compute` reading and writing `store`. `executor`, `address`, `model`: where layer-map cells run
    (`cache.sweep.cached_sweep`: "local" or "ray")."""

    def __init__(self, store, *, batch_size: int = 16, executor: str = "local", address: str | None = None,
                 model: str | None = None, backbones=load_backbone):
        self.store, self.batch_size = store, batch_size
        self.executor, self.address, self.model, self._backbones = executor, address, model, backbones

    def backbone(self, name):
        return self._backbones(name)

    def ledger(self):
        """A context counting the values read from the store and those computed (`cache.compute.ledger`)."""
        return ledger()

    def backbone_in(self, backbone, dtype):
        return backbone if backbone.facts.dtype == dtype else self._backbones(backbone.facts.name, dtype=dtype)

    def encode(self, backbone, method, texts):
        vectors, meta, hit = cached_encode(self.store, backbone, method, texts, batch_size=self.batch_size)
        return Encoded(vectors, float(meta.get("seconds", 0.0)), hit)

    def is_stored(self, backbone, method, texts):
        return encoded_stored(self.store, backbone, method, texts)

    def window(self, backbone, *, compute=True):
        return auto_window(self.store, backbone, get_method("kv_embedding", **KV_BASE), compute=compute)

    def sweep(self, backbone, data, cells, progress=None, should_stop=None):
        told = None if progress is None else lambda done, total, message: progress(done, total, {"cell": message})
        return cached_sweep(self.store, backbone, data, cells, base=KV_BASE, executor=self.executor,
                            address=self.address, model=self.model, batch_size=self.batch_size, progress=told,
                            should_stop=should_stop)

    def soft_curve(self, backbone, pairs, ks):  # every generation setting but the adapter at its default
        return soft_scaling(self.store, backbone, pairs, ks, {"adapter": "shipped"}, batch_size=self.batch_size)[0]

    def compress_predict(self, system, items, mode, ids=False):
        return cached_compress_predict(self.store, system, items, mode, ids=ids)[0]

    def remember(self, parts, compute, *, modules=()):
        def run(progress):
            return {"stored": np.zeros(1)}, {"value": compute()}

        _, meta, _ = computed(self.store, keys.VALUES, keys.value_parts(parts, modules), run)
        return meta["value"]

    def claims_board(self, backbone):
        return report_summary(self.store, backbone)
