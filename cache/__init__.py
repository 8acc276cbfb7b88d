"""On-disk compute cache shared by the app pages and the command line.

Results are keyed by everything that determines them (model identity, method and parameters, the exact
texts, the library version), stored as plain arrays beside a small JSON record, and written atomically so
several app sessions can share one cache. See `cache.store` for the layout.

    from cache import cached_encode, default_store
    emb, meta, hit = cached_encode(default_store(), backbone, method, ["A cat sat.", "A dog ran."])
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from cache.store import Entry, Store, make_key

__all__ = ["Store", "Entry", "default_store", "make_key", "cached_encode", "cached_compress_predict"]

_default: Store | None = None


def default_store() -> Store:
    """The process-wide store for the default root (EMBEDSCOPE_CACHE, else <repo>/cache/store)."""
    global _default
    fresh = Store()
    if _default is None or _default.root != fresh.root:  # the env var changed (tests, a second project)
        _default = fresh
    return _default


def cached_encode(store: Store, backbone, method, texts: list[str], *, namespace: str = "embeddings",
                  progress=None, **encode_kwargs) -> tuple[np.ndarray, dict, bool]:
    """Embed ``texts`` with ``method``, reusing a stored result when the same computation was done before.

    Args:
        store: Where results live.
        backbone: Anything with ``identity`` (str) naming the exact weights.
        method: Anything with ``name`` (str), ``params`` (frozen dataclass) and
            ``encode(backbone, texts, progress=..., **kwargs) -> (n, d) array``.
        texts: The texts, exactly as embedded; one changed character is a different entry.
        namespace: Store namespace.
        progress: Passed to ``method.encode``; not part of the key (it does not change the result).
        **encode_kwargs: Passed to ``method.encode`` and part of the key.

    Returns:
        ``(embeddings, meta, hit)``: float32 array (n, d); meta with ``seconds``, ``warnings`` (messages
        raised while computing) and ``n``; whether the result came from the store.

    On a miss the warnings raised by ``method.encode`` are re-emitted as well as recorded; on a hit they
    are only in ``meta["warnings"]``.
    """
    texts = list(texts)
    parts = {"model": backbone.identity, "method": method.name, "params": method.params, "texts": texts,
             "kwargs": encode_kwargs}
    caught: list[warnings.WarningMessage] = []

    def compute():
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")  # a warning already shown once must still be recorded here
            emb = method.encode(backbone, texts, progress=progress, **encode_kwargs)
        caught.extend(record)
        emb = np.asarray(emb, dtype=np.float32)  # (n, d)
        if emb.ndim != 2 or emb.shape[0] != len(texts):
            raise ValueError(f"{method.name}.encode returned shape {emb.shape} for {len(texts)} texts")
        meta = {"seconds": time.perf_counter() - start, "warnings": [str(w.message) for w in record],
                "n": len(texts)}
        return {"embeddings": emb}, meta

    entry, hit = store.get_or_compute(parts, compute, namespace=namespace)
    for w in caught:
        warnings.warn(w.message, stacklevel=2)  # the Warning instance keeps its category
    return entry.arrays["embeddings"], entry.meta, hit


def cached_compress_predict(store: Store, system, items: list, mode: str, *, ids: bool = False,
                            progress=None) -> tuple[list[dict], bool]:
    """Context-compression answers (`CompressionSystem.predict`) for `items`, cached per model, weights digest,
    mode, identifier option and the exact items. Returns (per-item dicts, hit)."""
    import json

    rows = [it if isinstance(it, dict) else it.to_json() for it in items]
    parts = {"kind": "compress-qa", "model": system.backbone.identity, "weights": system.weights_digest,
             "config": system.config, "mode": mode, "ids": bool(ids), "items": rows}

    def compute():
        preds = system.predict(rows, mode, ids=ids, progress=progress)
        arrays = {k: np.asarray([p[k] for p in preds], dtype=np.int64)
                  for k in ("exact", "first_token_ok", "context_tokens", "context_positions")}
        return arrays, {"answers": json.dumps([p["answer"] for p in preds])}

    entry, hit = store.get_or_compute(parts, compute, namespace="compression")
    answers = json.loads(entry.meta["answers"])
    preds = [{"answer": a, "exact": bool(e), "first_token_ok": bool(f), "context_tokens": int(t),
              "context_positions": int(p)}
             for a, e, f, t, p in zip(answers, entry.arrays["exact"], entry.arrays["first_token_ok"],
                                      entry.arrays["context_tokens"], entry.arrays["context_positions"])]
    return preds, hit
