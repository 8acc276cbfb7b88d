"""What this repository trained and shipped, per system and model, kept in git even where the weights are not.

Weights over the size the repository ships (Gemma 3's Causal2Vec parts, 6-9 MB each) stay out of git, and their
manifests with them, so a fresh clone would no longer know how long each part took here, which `train all --help`
and the README promise for every built-in model. `runs.ship` notes each artefact it ships here, copied from its
manifest; `queue.took_here` reads the manifest when the weights are present and this ledger when they are not.

    analysis/artefacts/<system>/trained_here.json    {"<model folder>": {"<place>": {"wall_seconds": ..., ...}}}
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

FILE = "trained_here.json"
KEPT = ("wall_seconds", "steps_done", "created", "weights_sha256", "command")  # a manifest's fields worth keeping


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def note(model_dir: Path, place: str, manifest: dict) -> None:
    """Remember the artefact shipped at `place` ("" = the folder itself) below `model_dir`, a system's folder for one
    model (`analysis.weights.artefacts.shipped_dir`); the ledger is the system folder's."""
    path = Path(model_dir).parent / FILE
    ledger = _read(path)
    ledger.setdefault(Path(model_dir).name, {})[place or "."] = {k: manifest.get(k) for k in KEPT}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{FILE}-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(ledger, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)  # a reader sees the old ledger or the new one


def entry(model_dir: Path, place: str) -> dict | None:
    """What `note` kept for the artefact at `place` below `model_dir`, or None when none was shipped there."""
    return _read(Path(model_dir).parent / FILE).get(Path(model_dir).name, {}).get(place or ".")
