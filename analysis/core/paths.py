"""Where things live on disk: the one cache root (results and converted models) and the data folder.

Everything the tool writes on its own lives under `cache_root()`: results through `cache.Store` (one folder per
namespace), converted model weights in `models/` (`backbone`), training runs in `runs/` (`training.runs`), a
running sweep's spilled states in the hidden `.scratch/` (`sweep.runner`). Clearing the cache removes results
only. Outside it the tool writes only what a user asks for: an `--output` or `--out` path, data sets fetched into
the data folder, shipped weights replaced with `train --ship`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

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
