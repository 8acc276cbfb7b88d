"""Every document's vector, stored once per (model, method): a vector store looked up by text digest.

A corpus of thousands of long documents is encoded batch by batch (`cache.compute.encode_documents`); finished
batches go into the store as shards, plain `Store` entries (atomic rename, checksummed, no pickle), so a second
task or a re-run on the same corpus computes nothing and an interrupted run resumes where it stopped. A damaged
shard is discarded by the store like any damaged entry, and its documents are computed again.

Layout: namespace `keys.VECTORS`; a store per `keys.vectors_parts(backbone, method, normalize)` (model, method,
parameters, code version); its shards under `keys.shard_key(store key, digests)`, all in one folder, each with
    digests (n,) S64     sha256 hex of each document's exact text (`keys.text_digest`)
    vectors (n, d) float32
    tokens (n,) int32    tokens the method ran (template included; 0 when the method cannot count them)
    truncated (n,) bool  cut to the model's limit
    seconds (n,) float32 the batch's wall time, shared out by tokens: what the document cost to compute

    vs = VectorStore(store, backbone, method)
    found = vs.find(digests)   # {digest: Row}
    vs.add([Row(...), ...])    # one shard
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from cache.flight import flight
from cache.keys import VECTORS, make_key, shard_key, vectors_parts

# Shards never change once written: what a shard holds is remembered per process, so a lookup reads only the
# shards that hold wanted documents (a page asking for 8 texts does not read a 50,000-document corpus).
_HOLDS: dict[tuple[str, str], frozenset[str]] = {}
_HOLDS_LOCK = threading.Lock()


@dataclass(frozen=True)
class Row:
    """One document's stored vector and what it cost."""

    digest: str
    vector: np.ndarray  # (d,) float32
    tokens: int
    truncated: bool
    seconds: float


class VectorStore:
    """The vectors of one (model, method and parameters, code version, normalisation) in `store`."""

    def __init__(self, store, backbone, method, normalize: bool = True):
        self.store = store
        self.parts = vectors_parts(backbone, method, normalize)
        self.key = make_key(self.parts)

    def shards(self) -> list[str]:
        return self.store.scan(self.key + "-", VECTORS)

    def find(self, digests) -> dict[str, Row]:
        """The stored rows of `digests` (those found; a damaged shard is removed and its documents are missing)."""
        wanted, out = set(digests), {}
        root = str(self.store.root)
        for shard in self.shards():
            if not wanted - out.keys():
                break
            with _HOLDS_LOCK:
                holds = _HOLDS.get((root, shard))
            if holds is not None and not holds & (wanted - out.keys()):
                continue
            entry = self.store.get(shard, VECTORS, _check)
            if entry is None:
                continue
            a = entry.arrays
            names = [d.decode("ascii") for d in a["digests"]]
            with _HOLDS_LOCK:
                _HOLDS[(root, shard)] = frozenset(names)
            for j, d in enumerate(names):
                if d in wanted and d not in out:
                    out[d] = Row(d, a["vectors"][j], int(a["tokens"][j]), bool(a["truncated"][j]),
                                 float(a["seconds"][j]))
        return out

    def add(self, rows: list[Row]) -> None:
        """Store `rows` as one shard (atomically; an unwritable cache folder warns once and stores nothing), leaving
        out the documents already stored: several processes or sessions embedding overlapping corpora at once each
        store a document's vector once. Writers of one vector store take turns (`cache.flight`, a lock file per
        store), and each looks again at what is stored before it writes."""
        if not rows:
            return
        with flight(self.store.root, VECTORS, self.key):
            stored = self.find([r.digest for r in rows])
            self._write([r for r in {r.digest: r for r in rows}.values() if r.digest not in stored])

    def _write(self, rows: list[Row]) -> None:
        if not rows:
            return
        digests = [r.digest for r in rows]
        arrays = {"digests": np.array(digests, dtype="S64"),
                  "vectors": np.stack([np.asarray(r.vector, dtype=np.float32) for r in rows]),  # (n, d)
                  "tokens": np.array([r.tokens for r in rows], dtype=np.int32),
                  "truncated": np.array([r.truncated for r in rows], dtype=bool),
                  "seconds": np.array([r.seconds for r in rows], dtype=np.float32)}
        self.store.put(shard_key(self.key, digests), arrays, {"n": len(rows)}, parts=self.parts, namespace=VECTORS)


def _check(entry) -> None:
    """A shard whose arrays do not fit together is damaged (ValueError: the store removes it)."""
    a = entry.arrays
    n = len(a["digests"])
    if a["digests"].dtype != np.dtype("S64") or a["vectors"].ndim != 2 or a["vectors"].dtype != np.float32 or \
            any(a[k].shape != (n,) for k in ("digests", "tokens", "truncated", "seconds")) or len(a["vectors"]) != n:
        raise ValueError("vector shard arrays do not fit together")
