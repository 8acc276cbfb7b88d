"""The model report's hooks (`analysis.report.build.Hooks`) served from the compute cache, for the command and
the Report page alike: embeddings through `cached_encode`, the `layers=auto` window through `auto_window`, the
layer map through `cached_sweep` (one entry per cell) and the soft-token curve under the Soft tokens page's key.
So an interrupted report, run again, recomputes nothing it had finished, and the pages and commands that did the
same work before it (`sts`, `sweep`, the Layer explorer) have already paid for part of it."""

from __future__ import annotations

from cache import auto_window, cached_encode
from cache.claims import report_summary
from cache.compute import soft_scaling


def report_hooks(store, backbone, pairs, *, batch_size: int = 16, executor: str = "local",
                 address: str | None = None, model: str | None = None):
    """`Hooks` reading and writing `store` (None: `local_hooks`, nothing stored)."""
    from analysis.methods import get_method
    from analysis.report.build import KV_BASE, Hooks, local_hooks
    from cache.sweep import cached_sweep

    if store is None:
        return local_hooks(backbone, pairs, batch_size=batch_size)

    def encode(method, texts):
        emb, meta, hit = cached_encode(store, backbone, method, texts)
        return emb, {"cached": hit, "seconds": float(meta.get("seconds", 0.0))}

    def sweep(cells, progress=None, should_stop=None):
        told = None if progress is None else lambda done, total, message: progress(done, total, {"cell": message})
        return cached_sweep(store, backbone, pairs, cells, base=KV_BASE, executor=executor, address=address,
                            model=model, batch_size=batch_size, progress=told, should_stop=should_stop)

    def soft_curve(few, ks):  # every generation setting but the adapter at its default
        return soft_scaling(store, backbone, few, ks, {"adapter": "shipped"}, batch_size=batch_size)[0]

    return Hooks(encode, lambda: auto_window(store, backbone, get_method("kv_embedding", **KV_BASE)), sweep,
                 soft_curve, lambda: report_summary(store, backbone))
