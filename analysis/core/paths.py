"""Where things live on disk: the one cache root (results and converted models) and the data folder.

Everything the tool writes on its own lives under `cache_root()`: results through `cache.Store` (one folder per
namespace), converted model weights in `models/` (`backbone`), training runs in `runs/` (`training.runs`), a
running sweep's spilled states in the hidden `.scratch/` (`sweep.runner`). Clearing the cache removes results
only. Outside it the tool writes only what a user asks for: an `--output` or `--out` path, data sets fetched into
the data folder, shipped weights replaced with `train --ship`.
"""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
import threading
import warnings
from pathlib import Path

from analysis.core.errors import StorageWarning

PACKAGE = Path(__file__).resolve().parent.parent  # analysis/
REPO = PACKAGE.parent
ARTEFACTS = PACKAGE / "artefacts"  # the shipped trained weights (package data), one folder per system and model


def cache_root() -> Path:
    """EMBEDSCOPE_CACHE when set; else <repo>/cache/store (git-ignored) in a checkout; else, installed from a
    wheel, $XDG_CACHE_HOME/embedscope (~/.cache/embedscope): never inside site-packages, which may be read-only."""
    env = os.environ.get("EMBEDSCOPE_CACHE")
    if env:
        return Path(env).expanduser()
    if (REPO / "pyproject.toml").is_file():
        return REPO / "cache" / "store"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "embedscope"


def records_folder() -> Path:
    """Where the published records are: `docs/results` in a checkout; in an installed wheel, the copy that travels
    as package data (`analysis/experiments/recorded/`, made by the build)."""
    checkout = REPO / "docs" / "results"
    return checkout if checkout.is_dir() else PACKAGE / "experiments" / "recorded"


def data_dir() -> Path:
    """The data folder, where the public data sets live (`analysis.data.fetch` stores and finds them there):
    EMBEDSCOPE_DATA; else EMBEDSCOPE_SHARED_DATA, its older name, still read so existing set-ups keep working;
    else <repo>/../shared/data, the development machine's shared folder (absent elsewhere, hence the variable)."""
    env = os.environ.get("EMBEDSCOPE_DATA") or os.environ.get("EMBEDSCOPE_SHARED_DATA")
    return Path(env).expanduser() if env else REPO.parent / "shared" / "data"


def shared_data_dirs() -> list[Path]:
    """Folders that may hold the STS-B files sts-{split}.csv: <data folder>/stsbenchmark, or the data folder
    itself (the variable may name the stsbenchmark folder directly)."""
    return [data_dir() / "stsbenchmark", data_dir()]


def file_sha256(path) -> str:
    """sha256 hex digest of a file's bytes, read in 1 MiB chunks (model files are hundreds of MB)."""
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()


# errnos that mean "this folder cannot hold our files", as opposed to a bug: the work goes elsewhere, with a warning
STORAGE_ERRORS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR,
                            errno.EEXIST, errno.ENOENT})
_warned: set[str] = set()
_warned_lock = threading.Lock()


def is_storage_error(err: BaseException) -> bool:
    """Whether `err` says a folder cannot be written (read-only or full file system, no permission, a file in the
    way), rather than something wrong with the work itself."""
    return isinstance(err, OSError) and err.errno in STORAGE_ERRORS


def temporary_root() -> Path:
    """Where the tool keeps what it cannot keep under `cache_root()`: a per-user folder in the system's temporary
    folder (which the system may empty), so a read-only cache still gets a right result, computed again later."""
    return Path(tempfile.gettempdir()) / f"embedscope-{os.getuid()}"


def warn_unwritable(root: Path, err: OSError) -> None:
    """The one `StorageWarning` per cache folder and process, whatever could not be written there first (a result,
    a converted model, a sweep's scratch): the reason, and what the tool does instead."""
    reason = err.strerror or type(err).__name__
    with _warned_lock:
        if str(root) in _warned:
            return
        _warned.add(str(root))
    warnings.warn(StorageWarning(f"The cache folder {root} cannot be written ({reason}): results are computed but "
                                 f"not stored, and converted models and scratch files go to {temporary_root()}, "
                                 "which the system may empty."), stacklevel=3)


def writable_folder(preferred: Path) -> Path:
    """`preferred`, created if needed; or, when it cannot be (a read-only or full file system, a path through a
    file), the same path under `temporary_root()`, with the cache folder's one warning. Raises the OSError when the
    temporary folder cannot be written either."""
    try:
        preferred.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=preferred)  # a folder may exist and refuse files
        os.close(fd)
        os.unlink(probe)
        return preferred
    except OSError as err:
        if not is_storage_error(err):
            raise
        try:
            inside = preferred.relative_to(cache_root())
        except ValueError:
            inside = Path(preferred.name)
        fallback = temporary_root() / inside
        fallback.mkdir(parents=True, exist_ok=True)
        warn_unwritable(cache_root(), err)
        return fallback


def can_create(path: Path) -> bool:
    """Whether `path` exists as a writable folder or could be made one, decided without creating anything (so a
    command refused before any work leaves no folder behind): the nearest existing ancestor must be a folder this
    process may write. `os.access` sees a read-only file system even as root."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


# errnos that mean the disk or the folder refused a file the user asked for, said in one sentence by the command line
WRITE_ERRORS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
                errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
                errno.EPERM: "permission denied"}


def write_problem(err: BaseException) -> str | None:
    """The one sentence for an OSError that says a file could not be written where it was asked for (a full disk
    halfway through a run, a folder made read-only meanwhile), or None for any other error (a bug, shown as one)."""
    if not isinstance(err, OSError) or err.errno not in WRITE_ERRORS:
        return None
    where = f" {err.filename}" if err.filename else ""
    return (f"Could not write{where}: {WRITE_ERRORS[err.errno]} ({err.strerror or err}). Free some space or choose "
            "a folder that can be written, and run the command again: results already in the cache are not "
            "computed again.")
