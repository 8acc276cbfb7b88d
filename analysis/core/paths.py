"""Where things live on disk: the one cache root (results and converted models) and the shared data folder.

The library writes only converted model weights (`backbone`), under `cache_root() / "models"`; every other file
on disk goes through `cache.Store`, whose default root is this same function.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # analysis/
REPO = PACKAGE.parent
ARTEFACTS = PACKAGE / "artefacts"  # the shipped trained weights (package data), one folder per system and model


def cache_root() -> Path:
    """EMBEDSCOPE_CACHE when set, else <repo>/cache/store (git-ignored)."""
    env = os.environ.get("EMBEDSCOPE_CACHE")
    return Path(env).expanduser() if env else REPO / "cache" / "store"


def shared_data_dirs() -> list[Path]:
    """Folders that may hold stsbenchmark/ files: EMBEDSCOPE_SHARED_DATA (the shared data folder or the
    stsbenchmark folder itself), else <repo>/../shared/data/stsbenchmark."""
    env = os.environ.get("EMBEDSCOPE_SHARED_DATA")
    if env:
        return [Path(env) / "stsbenchmark", Path(env)]
    return [REPO.parent / "shared" / "data" / "stsbenchmark"]


def file_sha256(path) -> str:
    """sha256 hex digest of a file's bytes, read in 1 MiB chunks (model files are hundreds of MB)."""
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()
