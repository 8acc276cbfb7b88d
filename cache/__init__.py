"""On-disk compute cache shared by the app pages, the command line and the scripts.

Results are keyed by everything that determines them (`cache.keys`: model identity, method and parameters, the
exact texts, the code version of the modules that computed them), stored as plain arrays beside a small JSON record, and written
atomically so several app sessions can share one cache (`cache.store`). A folder that cannot be written
degrades to "computed but not stored" with one `CacheWarning`.

Every result is computed and stored by one function of `cache.compute` (one per kind of result; `progress(done,
total, message)` the one progress convention, `cache.progress`); a corpus's document vectors are kept one by one
(`cache.vectors`), so a page's list of texts, a benchmark task and a re-run share what was computed.

    from cache import cached_encode, default_store
    emb, meta, hit = cached_encode(default_store(), backbone, method, ["A cat sat.", "A dog ran."])
"""

from __future__ import annotations

from cache.compute import (
    auto_window,
    cached_compress_predict,
    cached_encode,
    encode_documents,
    needs_window,
    resolve_method,
)
from cache.keys import make_key
from cache.seeds import seed_store
from cache.store import CacheWarning, Entry, Store

__all__ = ["Store", "Entry", "CacheWarning", "default_store", "make_key", "cached_encode", "encode_documents",
           "auto_window", "needs_window", "resolve_method", "cached_compress_predict"]

_default: Store | None = None


def default_store() -> Store:
    """The process-wide store for the default root (`analysis.core.paths.cache_root()`)."""
    global _default
    fresh = Store(seeds=seed_store())  # a miss asks the precomputed results shipped for the built-in models
    if _default is None or _default.root != fresh.root:  # the env var changed (tests, a second project)
        _default = fresh
    return _default
