"""Single flight: the same computation asked by several app sessions or processes at once runs once.

A class opening one lesson step together asks the server for the same result thirty times in the same second.
Without coordination every session computes it (thirty forward passes sharing two cores, each thirty times slower)
and every one stores it. With a flight per store key, the first caller computes; every other one waits, is told so
with the first one's progress and an estimate of the time left, and then reads the stored result.

Two locks make a flight, both held while the result is computed and stored:
- an in-process lock per key (the app's sessions are threads of one process);
- an exclusive `flock` on `<root>/.locks/<namespace>/<key>.lock` (a command line run or a second server beside the
  app). The kernel drops it when its holder dies, so a killed process never leaves a key locked (and the next
  holder removes the status it left behind, so no waiter is told a dead process's progress).
The holder publishes its progress (in memory, and in `<key>.json` beside the lock file for other processes), so a
waiter can say how far the computation is. A store that cannot be written has no lock files: its flights are
per process only (other processes compute the same result themselves, as before).

    with flight(store.root, "embeddings", key, progress) as f:
        if not f.waited or (entry := store.get(key)) is None:
            compute(f.progress)   # progress that waiters see too
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cache.progress import Progress, duration

LOCKS = ".locks"  # under the store's root; hidden, so `Store.clear`, `count` and `scan` never see it
POLL_SECONDS = 0.25  # how often a waiter looks again (and can be stopped: its progress callback may raise)
TELL_SECONDS = 1.0  # how often a waiter is told how the computation it waits for is going
PUBLISH_SECONDS = 1.0  # how often the holder writes its progress for other processes


@dataclass
class Status:
    """How far the holder of a flight is: what a waiting session is shown."""

    started: float  # time.time() when the holder began
    done: int = 0
    total: int = 0
    message: str = ""
    published: float = 0.0  # time.monotonic() of the last write to the status file

    def as_json(self) -> dict:
        return {"started": self.started, "done": self.done, "total": self.total, "message": self.message}


@dataclass
class Flight:
    """What `flight` yields: whether this caller waited for another one (then the result is probably stored: read
    it before computing), and the progress callback the computation should report to (waiters see it too)."""

    waited: bool
    progress: Progress | None
    status: Status = field(repr=False, default=None)


_lock = threading.Lock()  # guards the three tables below
_keys: dict[tuple, list] = {}  # ident -> [threading.Lock, users]; an entry lives while someone holds or waits
_status: dict[tuple, Status] = {}  # ident -> the holder's progress, for waiters in this process
_held = threading.local()  # idents this thread holds: a nested flight on the same key does not wait for itself


@contextlib.contextmanager
def flight(root: str | Path, namespace: str, key: str, progress: Progress | None = None) -> Iterator[Flight]:
    """Hold the flight of (`root`, `namespace`, `key`) for the duration of the block, waiting for any other holder
    first (thread or process); while waiting, `progress(done, total, message)` is told about the holder's work
    about once a second. Re-entrant in one thread."""
    ident = (str(Path(root)), namespace, key)
    held = _held.__dict__.setdefault("idents", set())
    if ident in held:
        yield Flight(False, progress)
        return
    told = {"at": 0.0}
    local = _local_lock(ident)
    try:
        waited = _acquire_local(local, ident, progress, told)
        try:
            handle = _lock_file(root, namespace, key)
            try:
                waited = _acquire_file(handle, ident, progress, told) or waited
                _forget_status(handle)
                status = Status(started=time.time())
                with _lock:
                    _status[ident] = status
                held.add(ident)
                try:
                    yield Flight(waited, _publishing(progress, status, ident, handle), status)
                finally:
                    held.discard(ident)
                    with _lock:
                        _status.pop(ident, None)
            finally:
                _release_file(handle)
        finally:
            local.release()
    finally:
        _forget(ident)


def _local_lock(ident: tuple) -> threading.Lock:
    with _lock:
        slot = _keys.setdefault(ident, [threading.Lock(), 0])
        slot[1] += 1
        return slot[0]


def _forget(ident: tuple) -> None:
    with _lock:
        slot = _keys.get(ident)
        if slot is not None:
            slot[1] -= 1
            if slot[1] <= 0:
                del _keys[ident]


def _acquire_local(lock: threading.Lock, ident: tuple, progress, told) -> bool:
    """Take the in-process lock; True when another thread held it (this one waited)."""
    if lock.acquire(blocking=False):
        return False
    while not lock.acquire(timeout=POLL_SECONDS):
        _tell(progress, ident, told)
    return True


@dataclass
class _Handle:
    path: Path
    fh: object  # the open lock file


def _lock_file(root, namespace: str, key: str) -> _Handle | None:
    """The open lock file of this key, or None when the store cannot be written (then the flight is per process)."""
    path = Path(root) / LOCKS / namespace / f"{key}.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return _Handle(path, open(path, "a+b"))
    except OSError:
        return None


def _acquire_file(handle: _Handle | None, ident: tuple, progress, told) -> bool:
    """Take the file lock; True when another process held it. A lock file removed by its holder while we waited is
    opened again (the holder unlinks it before unlocking, so a lock on an unlinked file protects nothing)."""
    if handle is None:
        return False
    waited = False
    while True:
        try:
            fcntl.flock(handle.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno not in (errno.EAGAIN, errno.EACCES):
                return waited  # a file system without locks: per process only
            waited = True
            _tell(progress, ident, told, handle.path)
            time.sleep(POLL_SECONDS)
            continue
        if _same_file(handle):
            return waited
        handle.fh.close()  # the holder removed it: lock the new one
        try:
            handle.fh = open(handle.path, "a+b")
        except OSError:
            handle.fh = None
            return waited


def _same_file(handle: _Handle) -> bool:
    try:
        return os.fstat(handle.fh.fileno()).st_ino == os.stat(handle.path).st_ino
    except OSError:
        return False


def _forget_status(handle: _Handle | None) -> None:
    """Remove the status a holder killed mid-computation left (it could not remove it): until this holder reports,
    its waiters are told nothing rather than a dead process's progress and estimate."""
    if handle is not None and handle.fh is not None:
        with contextlib.suppress(OSError):
            handle.path.with_suffix(".json").unlink()


def _release_file(handle: _Handle | None) -> None:
    """Remove the lock file and its status, then unlock: nothing is left behind per key."""
    if handle is None or handle.fh is None:
        return
    for path in (handle.path.with_suffix(".json"), handle.path):
        with contextlib.suppress(OSError):
            path.unlink()
    with contextlib.suppress(OSError):
        fcntl.flock(handle.fh, fcntl.LOCK_UN)
    handle.fh.close()


def _publishing(progress: Progress | None, status: Status, ident: tuple, handle: _Handle | None) -> Progress:
    """The holder's progress: the caller's, also recorded in `status` (and written for other processes about once a
    second), so waiters can be told how far it is."""
    def report(done: int, total: int, message: str = "") -> None:
        status.done, status.total, status.message = done, total, message
        now = time.monotonic()
        if handle is not None and now - status.published >= PUBLISH_SECONDS:
            status.published = now
            _write_status(handle.path.with_suffix(".json"), status)
        if progress is not None:
            progress(done, total, message)

    return report


def _write_status(path: Path, status: Status) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        tmp.write_text(json.dumps(status.as_json()), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _read_status(path: Path | None) -> Status | None:
    if path is None:
        return None
    try:
        raw = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        return Status(float(raw["started"]), int(raw["done"]), int(raw["total"]), str(raw["message"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _tell(progress: Progress | None, ident: tuple, told: dict, path: Path | None = None) -> None:
    """Tell a waiting caller about the computation it waits for, at most once per TELL_SECONDS."""
    now = time.monotonic()
    if progress is None or now - told["at"] < TELL_SECONDS:
        return
    told["at"] = now
    with _lock:
        status = _status.get(ident)
    status = status or _read_status(path)
    progress(status.done if status else 0, status.total if status else 0, waiting_message(status))


def waiting_message(status: Status | None, now: float | None = None) -> str:
    """One line for a session waiting behind another's computation: since when, how far, about how long."""
    if status is None:
        return "Waiting for the same computation, started by another session or process; its result will be read " \
               "from the cache."
    age = max((now or time.time()) - status.started, 0.0)
    text = f"Waiting for the same computation, started {duration(age)} ago by another session"
    if status.message:
        text += f": {status.message}"
    elif status.total:
        text += f": {status.done:,}/{status.total:,}"
    left = estimate_left(status, now)
    if left is not None and "left" not in status.message:
        text += f", about {duration(left)} left"
    elif left is None and "left" not in status.message:
        text += " (no estimate yet)"
    return text + "; its result will be read from the cache."


def estimate_left(status: Status, now: float | None = None) -> float | None:
    """Seconds the holder still needs at its rate so far, or None before it has reported any progress."""
    if status.done <= 0 or status.total <= status.done:
        return None
    spent = max((now or time.time()) - status.started, 0.0)
    return spent / status.done * (status.total - status.done)


def lock_path(root: str | Path, namespace: str, key: str) -> Path:
    """Where the flight of a key keeps its lock file (tests; a status line of the app)."""
    return Path(root) / LOCKS / namespace / f"{key}.lock"

