"""An experiment's hooks (`analysis.experiments.hooks.Hooks`) served from the compute cache: embeddings through
`cached_encode` (KV-Embedding's `layers=auto` window through the store), context-compression answers through
`cached_compress_predict`, the model report's hooks through `cache.report`, and the claims board's timings through
`cache.claims`; what is stored is asked through `encoded_stored` and `auto_window(compute=False)`. So `python -m
analysis measure` run twice computes once, an interrupted measurement resumes, and the pages that did the same work
before it (Benchmark, Context compression, the Layer explorer) have already paid for part of it."""

from __future__ import annotations

from cache import auto_window, cached_compress_predict, cached_encode
from cache.compute import encoded_stored


def cached_hooks(store, *, batch_size: int = 16):
    """`Hooks` reading and writing `store`."""
    from analysis.experiments.hooks import Hooks
    from analysis.methods import get_method
    from analysis.models.backbone import load_backbone
    from analysis.report.build import KV_BASE
    from cache.claims import remember
    from cache.report import report_hooks

    def encode(backbone, method, texts):
        emb, meta, hit = cached_encode(store, backbone, method, texts)
        return emb, {"cached": hit, "seconds": float(meta.get("seconds", 0.0))}

    def compress_predict(system, items, mode, ids=False):
        return cached_compress_predict(store, system, items, mode, ids=ids)[0]

    return Hooks(load_backbone, encode, compress_predict,
                 lambda backbone, pairs: report_hooks(store, backbone, pairs, batch_size=batch_size),
                 lambda parts, compute: remember(store, parts, compute),
                 lambda backbone, method, texts: encoded_stored(store, backbone, method, texts),
                 lambda backbone: auto_window(store, backbone, get_method("kv_embedding", **KV_BASE), compute=False))
