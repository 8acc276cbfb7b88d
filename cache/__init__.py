"""On-disk compute cache shared by the app pages, the command line and the scripts.

Results are keyed by everything that determines them (`cache.keys`: model identity, method and parameters, the
exact texts, the code version of the modules that computed them), stored as plain arrays beside a small JSON record, and written
atomically so several app sessions can share one cache (`cache.store`). A folder that cannot be written
degrades to "computed but not stored" with one `CacheWarning`.

    from cache import cached_encode, default_store
    emb, meta, hit = cached_encode(default_store(), backbone, method, ["A cat sat.", "A dog ran."])
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from cache import keys
from cache.keys import make_key
from cache.store import CacheWarning, Entry, Store

__all__ = ["Store", "Entry", "CacheWarning", "default_store", "make_key", "cached_encode", "auto_window",
           "needs_window", "resolve_method", "cached_compress_predict"]

_default: Store | None = None


def default_store() -> Store:
    """The process-wide store for the default root (`analysis.core.paths.cache_root()`)."""
    global _default
    fresh = Store()
    if _default is None or _default.root != fresh.root:  # the env var changed (tests, a second project)
        _default = fresh
    return _default


def auto_window(store: Store, backbone, method, progress=None, *, compute: bool = True):
    """(Selection, ID per hidden state) behind a method's `layers=auto` (KV-Embedding), as a store entry.

    `method` is the method itself (any with `prompt_only()`); the entry is keyed by the model and the prompt-only
    method. A stored record whose selection differs from what the rules pick from its own trajectory (damaged or
    hand-edited) is removed and recomputed. With compute=False, None when it has not been computed yet.
    """
    from analysis.inspect import intrinsic_dim as idm

    prompt = method.prompt_only()
    L = backbone.facts.n_layers
    parts = keys.auto_window_parts(backbone, prompt)
    validate = lambda entry: idm.window_from_record(entry.arrays, entry.meta, L)  # noqa: E731 - raises ValueError
    if not compute:
        entry = store.get(make_key(parts), keys.AUTO_LAYERS, validate)
        return None if entry is None else idm.window_from_record(entry.arrays, entry.meta, L)
    entry, _ = store.get_or_compute(parts, lambda: idm.window_record(*idm.auto_trajectory(backbone, prompt, progress)),
                                    keys.AUTO_LAYERS, validate)
    return idm.window_from_record(entry.arrays, entry.meta, L)


def needs_window(method, backbone) -> bool:
    """Whether `method` still has a `layers=auto` window to resolve on `backbone` (KV-Embedding's
    `needs_window`; a method without one never has)."""
    return getattr(method, "needs_window", lambda backbone: False)(backbone)


def resolve_method(store: Store, backbone, method, progress=None):
    """The method ready to run on `backbone`: a `layers=auto` window looked up in (or computed into) the store.
    Methods without such a choice are returned as they are."""
    if not needs_window(method, backbone):
        return method
    sel, _ = auto_window(store, backbone, method, progress)
    return method.with_window(backbone, sel.layers)


def cached_encode(store: Store, backbone, method, texts: list[str], *, namespace: str = keys.EMBEDDINGS,
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
    parts = keys.encode_parts(backbone, method, texts, encode_kwargs)
    caught: list[warnings.WarningMessage] = []

    def compute():
        start = time.perf_counter()
        ready = resolve_method(store, backbone, method)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")  # a warning already shown once must still be recorded here
            emb = ready.encode(backbone, texts, progress=progress, **encode_kwargs)
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
    parts = keys.compress_parts(system, rows, mode, ids)

    def compute():
        preds = system.predict(rows, mode, ids=ids, progress=progress)
        arrays = {k: np.asarray([p[k] for p in preds], dtype=np.int64)
                  for k in ("exact", "first_token_ok", "context_tokens", "context_positions")}
        return arrays, {"answers": json.dumps([p["answer"] for p in preds])}

    entry, hit = store.get_or_compute(parts, compute, namespace=keys.COMPRESSION)
    answers = json.loads(entry.meta["answers"])
    preds = [{"answer": a, "exact": bool(e), "first_token_ok": bool(f), "context_tokens": int(t),
              "context_positions": int(p)}
             for a, e, f, t, p in zip(answers, entry.arrays["exact"], entry.arrays["first_token_ok"],
                                      entry.arrays["context_tokens"], entry.arrays["context_positions"])]
    return preds, hit
