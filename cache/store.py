"""Content-addressed on-disk store for computed arrays (embeddings, traces, scores).

Each entry is a directory ``<root>/<namespace>/<key[:2]>/<key>/`` holding ``data.npz`` (plain arrays, never
pickled) and ``meta.json`` (sha256 of data.npz, the key parts, creation time, the caller's meta). An entry
is built in a hidden temp directory beside its final place and renamed into place, so two processes that
compute the same entry at once cannot corrupt it: the first rename wins, the loser discards its copy.
Anything that fails to read back exactly is treated as a miss, removed and recomputed.

    store = Store(tmp_path)
    entry, hit = store.get_or_compute({"model": "m", "texts": ["a"]}, lambda: ({"x": np.zeros(3)}, {}))
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.core.errors import StorageWarning
from analysis.core.paths import cache_root, warn_unwritable
from cache.flight import flight
from cache.keys import jsonable, make_key
from cache.progress import Progress

DATA, META = "data.npz", "meta.json"
MODELS = "models"  # converted model weights (analysis.models.backbone): slow to rebuild, only cleared on request
RUNS = "runs"  # training runs (analysis.training.runs): a user's trained weights, not results; never cleared here
STALE_SECONDS = 3600  # a hidden temp dir younger than this may belong to a writer that is still running
_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{1,127}")  # no dots or slashes: a key can never leave root
_NS_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# Everything a damaged entry can raise on read; each means "recompute", never "trust". RecursionError: a
# meta.json nested deeper than the JSON parser's recursion limit.
_BROKEN = (OSError, ValueError, KeyError, TypeError, EOFError, RecursionError, zipfile.BadZipFile)


CacheWarning = StorageWarning  # the cache folder cannot be written (read-only, full): computed, not stored


@dataclass(frozen=True)
class Entry:
    """One cached result: the arrays and the meta given to ``Store.put``."""

    arrays: dict[str, np.ndarray]
    meta: dict
    key: str
    created: float  # time.time() when the entry was written


class Store:
    """The cache under one root directory. Safe to share between threads and processes."""

    def __init__(self, root: str | Path | None = None, *, seeds: "Store | None" = None, read_only: bool = False):
        """`seeds`: a read-only store of precomputed entries (`cache.seeds`) asked on a miss; an entry found there
        is copied into this store and returned as a hit. `read_only`: never write or remove anything (a damaged
        entry is a miss, left in place): the seeds themselves, which are package data."""
        self.root = Path(root).expanduser() if root is not None else cache_root()
        self.seeds = seeds
        self.read_only = read_only
        self._warned = False  # one warning per store when writing fails

    def path_for(self, key: str, namespace: str = "default") -> Path:
        if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
            raise ValueError(f"invalid cache key {key!r}")
        return self._ns_dir(namespace) / key[:2] / key

    def get(self, key: str, namespace: str = "default", validate: Callable[[Entry], object] | None = None
            ) -> Entry | None:
        """The entry for ``key``, or None on a miss. A damaged entry is removed and reported as a miss, and so is
        one that ``validate(entry)`` rejects by raising ValueError (e.g. a hand-edited record)."""
        path = self.path_for(key, namespace)
        if not path.is_dir():
            return self._seeded(key, namespace, validate)
        try:
            entry = _read(path, key)
            if validate is not None:
                validate(entry)
            return entry
        except _BROKEN:
            if not self.read_only:
                _discard(path)
            return self._seeded(key, namespace, validate)

    def contains(self, key: str, namespace: str = "default") -> bool:
        """Whether an entry for `key` is here or in the seeds, without reading it: a page asks this before it offers
        long work. A damaged entry still counts; `get` finds the damage and the caller recomputes it."""
        if self.path_for(key, namespace).is_dir():
            return True
        return self.seeds is not None and self.seeds.contains(key, namespace)

    def _seeded(self, key: str, namespace: str, validate) -> Entry | None:
        """The seeds' entry for `key`, copied into this store first (so the next read is local), or None."""
        if self.seeds is None:
            return None
        entry = self.seeds.get(key, namespace, validate)
        if entry is None:
            return None
        path = self.seeds.path_for(key, namespace)
        with contextlib.suppress(*_BROKEN):
            parts = json.loads((path / META).read_text(encoding="utf-8")).get("parts")
            return self.put(key, entry.arrays, entry.meta, parts=parts, namespace=namespace)
        return entry

    def put(self, key: str, arrays: dict[str, np.ndarray], meta: dict | None = None,
            parts: dict | None = None, namespace: str = "default") -> Entry:
        """Write an entry atomically; if another writer got there first, return its (equally valid) entry.

        A cache folder that cannot be written (read-only, full disk) is not an error: the entry is returned
        unstored, with one `CacheWarning` per store.

        Raises:
            TypeError: an object-dtype array (storable only by pickling), or non-JSON-like meta/parts.
        """
        if self.read_only:
            raise PermissionError(f"the store at {self.root} is read-only")
        final = self.path_for(key, namespace)
        arrays = _check_arrays(arrays)
        meta = jsonable(dict(meta or {}))
        record = {"key": key, "created": time.time(), "parts": jsonable(parts), "meta": meta}
        blob = _npz_bytes(arrays)
        record["sha256"] = hashlib.sha256(blob).hexdigest()
        try:
            return self._write(key, namespace, final, arrays, meta, record, blob)
        except OSError as err:
            self._warn_unwritable(err)
            return Entry(arrays, meta, key, record["created"])

    def _warn_unwritable(self, err: OSError) -> None:
        if not self._warned:  # one warning per store, and one per folder and process (`warn_unwritable`)
            self._warned = True
            warn_unwritable(self.root, err)

    def _write(self, key, namespace, final, arrays, meta, record, blob) -> Entry:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key[:16]}-", dir=final.parent))
        try:
            (tmp / DATA).write_bytes(blob)
            (tmp / META).write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
            for path in (tmp / DATA, tmp / META, tmp):  # on disk before the rename makes them visible
                _fsync(path)
            for _ in range(3):
                try:
                    os.rename(tmp, final)  # atomic; fails if `final` exists and is not empty
                    _fsync(final.parent)
                    return Entry(arrays, meta, key, record["created"])
                except OSError:
                    if not final.exists():
                        raise
                winner = self.get(key, namespace)  # a broken one is removed, and we retry the rename
                if winner is not None:
                    return winner
            return Entry(arrays, meta, key, record["created"])  # kept losing races: still a correct result
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def get_or_compute(self, parts: dict, compute: Callable[..., tuple[dict[str, np.ndarray], dict]],
                       namespace: str = "default", validate: Callable[[Entry], object] | None = None,
                       progress: Progress | None = None) -> tuple[Entry, bool]:
        """Return ``(entry, hit)``; on a miss call ``compute() -> (arrays, meta)`` and store its result.
        ``validate(entry)`` (raising ValueError to reject) checks a stored entry beyond its checksum.

        The same key asked by several threads or processes at once is computed once (`cache.flight`): the others
        wait, then read the stored entry. With `progress` (the caller's `progress(done, total, message)`), a
        waiting caller is told whose work it waits for and about how long, and `compute` is called as
        `compute(progress)` with a progress that the waiters see too."""
        key = make_key(parts)
        entry = self.get(key, namespace, validate)
        if entry is not None:
            return entry, True
        if self.read_only:
            raise PermissionError(f"the store at {self.root} is read-only")
        with flight(self.root, namespace, key, progress) as held:
            entry = self.get(key, namespace, validate)  # stored meanwhile: by the one we waited for, or a process
            if entry is not None:
                return entry, True
            arrays, meta = compute() if progress is None else compute(held.progress)
            return self.put(key, arrays, meta, parts=parts, namespace=namespace), False

    def scan(self, prefix: str, namespace: str = "default") -> list[str]:
        """Keys of the complete-looking entries of `namespace` that start with `prefix` (at least its first two
        characters: the folder every such entry is in), sorted. Nothing is read: `get` each key to verify it."""
        if not isinstance(prefix, str) or len(prefix) < 2 or not _KEY_RE.fullmatch(prefix):
            raise ValueError(f"invalid cache key prefix {prefix!r}")
        folder = self._ns_dir(namespace) / prefix[:2]
        return sorted(d.name for d in _subdirs(folder)
                      if d.name.startswith(prefix) and (d / DATA).is_file() and (d / META).is_file())

    def size_bytes(self) -> int:
        """Total bytes of all files under root, model weights included (0 if root does not exist)."""
        total = 0
        for folder, _, files in os.walk(self.root):  # does not follow symlinked folders
            for name in files:
                with contextlib.suppress(FileNotFoundError):  # removed by another process meanwhile
                    total += os.lstat(os.path.join(folder, name)).st_size
        return total

    def count(self) -> int:
        """Number of complete-looking entries in all namespaces (not verified byte by byte)."""
        return sum(1 for ns in _subdirs(self.root) for shard in _subdirs(ns) for d in _subdirs(shard)
                   if d.name.startswith(shard.name) and (d / DATA).is_file() and (d / META).is_file())

    def clear(self, namespace: str | None = None) -> int:
        """Remove entries of one namespace, or of all but ``models/`` and ``runs/`` when None; return how many.

        Hidden temp directories of writers that may still be running are left alone; stale ones go.
        Symlinks are unlinked, never followed, so nothing outside root is touched. Another process writing or
        clearing at the same time is expected: whatever vanishes or appears meanwhile is skipped, never raised.
        """
        if namespace is None:
            dirs = [d for d in _subdirs(self.root) if d.name not in (MODELS, RUNS)]
        else:
            ns_dir = self._ns_dir(namespace)
            dirs = [ns_dir] if ns_dir.is_dir() and not ns_dir.is_symlink() else []
        removed = 0
        for ns_dir in dirs:
            if ns_dir.name == MODELS:  # one folder per model; .lock files and .convert-* dirs are in use
                removed += sum(_discard(d) for d in _listdir(ns_dir) if not d.name.startswith("."))
                continue
            for item in _listdir(ns_dir):
                if item.name.startswith(".") or not _is_dir(item):
                    if not item.name.startswith("."):  # a stray file (an old layout's record) is a result too
                        _discard(item)
                        removed += not os.path.lexists(item)
                    continue
                for entry in _listdir(item):  # item is a shard
                    if not entry.name.startswith("."):
                        removed += _discard(entry)
                    elif _stale(entry):  # a crashed writer's leftovers; not an entry, so not counted
                        _discard(entry)
                with contextlib.suppress(OSError):  # not empty: a writer is busy there
                    item.rmdir()
            with contextlib.suppress(OSError):
                ns_dir.rmdir()
        return removed

    def _ns_dir(self, namespace: str) -> Path:
        if not isinstance(namespace, str) or not _NS_RE.fullmatch(namespace):
            raise ValueError(f"invalid cache namespace {namespace!r}")
        return self.root / namespace


def _check_arrays(arrays: dict) -> dict[str, np.ndarray]:
    if not isinstance(arrays, dict) or not all(isinstance(k, str) and k for k in arrays):
        raise TypeError("arrays must be a dict of non-empty str names to numpy arrays")
    out = {name: np.asarray(a) for name, a in arrays.items()}
    for name, a in out.items():
        if a.dtype.hasobject:
            raise TypeError(f"array {name!r} has an object dtype; the cache stores plain arrays only, "
                            "never pickles (convert to a numeric or fixed-width string dtype)")
    return out


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """The bytes np.savez would write, built here with allow_pickle=False and no name clash with savez's args."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, a in arrays.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, a, allow_pickle=False)
    return buf.getvalue()


def _read(path: Path, key: str) -> Entry:
    record = json.loads((path / META).read_text(encoding="utf-8"))
    blob = (path / DATA).read_bytes()  # read once: what we hash is exactly what we load
    if record["key"] != key or record["sha256"] != hashlib.sha256(blob).hexdigest() or \
            not isinstance(record["meta"], dict):
        raise ValueError(f"cache entry {path} does not match its record")
    with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    return Entry(arrays, record["meta"], key, float(record["created"]))


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)  # POSIX: directories too (the project already relies on fcntl)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _listdir(path: Path) -> list[Path]:
    """The items of a folder; [] when it vanished or is unreadable (another process cleared it)."""
    try:
        return list(path.iterdir())
    except OSError:
        return []


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir() and not path.is_symlink()
    except OSError:
        return False


def _subdirs(path: Path) -> list[Path]:
    """Real (non-symlink) visible subdirectories of ``path``; [] if it does not exist."""
    return [d for d in _listdir(path) if not d.name.startswith(".") and _is_dir(d)]


def _stale(path: Path) -> bool:
    try:
        return path.name.startswith(".trash-") or time.time() - path.lstat().st_mtime > STALE_SECONDS
    except OSError:
        return False


def _discard(path: Path) -> bool:
    """Remove a file, symlink or folder (renamed aside first: no reader sees half of one); True if a folder went.
    A path that vanished (another process removed it first) or cannot be removed (read-only) is left alone."""
    try:
        if path.is_symlink() or not path.is_dir():
            path.unlink()
            return False
        trash = path.with_name(f".trash-{uuid.uuid4().hex}")
        os.rename(path, trash)
    except OSError:
        return False
    shutil.rmtree(trash, ignore_errors=True)
    return True
