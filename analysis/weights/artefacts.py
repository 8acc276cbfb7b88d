"""Trained weights on disk: `weights.safetensors` + `manifest.json`, one folder per artefact.

    save_artefact(folder, {"w1": w1, ...}, {"method": "causal2vec", "model_identity": bb.identity, ...})
    tensors, manifest = load_artefact(folder, method="causal2vec", model_identity=bb.identity, encoder=enc)
    key_part = artefact_digest(folder)   # goes into cache keys: code_version() only covers .py files

The manifest records what produced the weights (method, model identity, encoder, data digest, steps, seed,
hyperparameters, code version, validation curve, final scores, wall time, command line). Loading checks the
method, model and encoder, so a bridge trained for one model is never silently used with another.
Shipped artefacts live under `analysis/artefacts/<method>/<model-short-name>/` (`shipped_dir`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path

from analysis import code_version
from analysis.core.errors import UserError
from analysis.core.paths import ARTEFACTS, cache_root, file_sha256
from analysis.models.backbone import builtin, weights_identity
from analysis.weights import safefile

WEIGHTS, MANIFEST = "weights.safetensors", "manifest.json"


def runs_root(system: str) -> Path:
    """<cache>/runs/<system>: every run of a system on this machine, one folder per model and run name (the trainers
    write there; the methods list a system's finished runs from there)."""
    return cache_root() / "runs" / system


def model_folder_name(facts) -> str:
    """A model's folder among the shipped artefacts: its built-in short name ("smollm2-135m" for the default
    model), else a filesystem-safe form of its name. The one rule every trained system uses. `facts` may also be
    the model's name as a manifest records it, so a finished run is shipped without loading its model."""
    name = facts if isinstance(facts, str) else facts.name
    known = builtin(name)
    if known is not None:
        return known.short
    return re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip("-.")[:80] or "model"


def shipped_root(system: str) -> Path:
    """analysis/artefacts/<system>: every model's shipped weights of `system`, one folder per model."""
    return ARTEFACTS / system


def shipped_dir(system: str, facts) -> Path:
    """Where the repository's own trained weights of `system` for the model described by `facts` (or named by it)
    live (they may not exist: check for the manifest)."""
    return shipped_root(system) / model_folder_name(facts)


def save_artefact(folder, tensors: dict, manifest: dict) -> Path:
    """Write the weights and the manifest (adds code_version, created and weights_sha256; the command that made
    them is the caller's to record, without paths of this machine).

    Both files are written under temporary names and renamed, so a reader never sees half an artefact."""
    from safetensors.torch import save_file  # lazy: keeps torch off the pages' and the command line's start

    if "method" not in manifest:
        raise ValueError("an artefact manifest needs at least 'method'")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp_w = folder / f".{WEIGHTS}.tmp{os.getpid()}"
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp_w),
              metadata={"method": str(manifest["method"])})
    full = {"code_version": code_version(), "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **manifest, "weights_sha256": file_sha256(tmp_w)}
    tmp_m = folder / f".{MANIFEST}.tmp{os.getpid()}"
    tmp_m.write_text(json.dumps(full, indent=1, sort_keys=False))
    os.replace(tmp_w, folder / WEIGHTS)
    os.replace(tmp_m, folder / MANIFEST)
    return folder


def read_manifest(folder) -> dict:
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise UserError(f"{folder} is not a trained artefact: it has no {MANIFEST}.") from err
    except (OSError, ValueError, RecursionError) as err:
        raise UserError(f"{folder / MANIFEST} is unreadable ({str(err)[:120]}).") from None
    if not isinstance(manifest, dict):
        raise UserError(f"{folder / MANIFEST} is not a manifest: it holds a {type(manifest).__name__}, not a table.")
    return manifest


def same_weights(trained_for, identity: str) -> bool:
    """Whether an artefact trained for the model `trained_for` (its manifest's identity) fits the loaded model
    `identity`: the same weights, in whatever dtype or on whatever device each ran."""
    return isinstance(trained_for, str) and weights_identity(trained_for) == weights_identity(identity)


def load_artefact(folder, *, method: str, model_identity: str | None = None, encoder: str | None = None,
                  shapes: dict[str, tuple] | None = None):
    """(tensors, manifest) of the artefact in `folder`, after checking it was trained for this method, model
    (when `model_identity` is given) and encoder (when `encoder` is given), that the weights are the bytes the
    manifest recorded, and that their header is whole and holds the tensor `shapes` the loaded model needs (None
    in a dimension: any size), all before a tensor is read; each failure raises one UserError naming the file."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest.get("method") != method:
        raise UserError(f"{folder} holds weights for the method '{manifest.get('method')}', not '{method}'.")
    if model_identity is not None and not same_weights(manifest.get("model_identity"), model_identity):
        raise UserError(f"{folder} was trained for the model '{manifest.get('model_identity')}', not for the "
                        f"loaded model '{model_identity}'.")
    if encoder is not None and manifest.get("encoder") != encoder:
        raise UserError(f"{folder} was trained with the encoder '{manifest.get('encoder')}', not '{encoder}'.")
    weights = folder / WEIGHTS
    if not weights.is_file():
        raise UserError(f"{folder} is not a whole artefact: it has no {WEIGHTS}.")
    if manifest.get("weights_sha256") not in (None, file_sha256(weights)):
        raise UserError(f"{weights}: the weights do not match their manifest (damaged or replaced).")
    safefile.check_shapes(weights, safefile.read_shapes(weights), shapes or {})
    return safefile.load(weights), manifest


def artefact_digest(folder) -> str:
    """sha256 (hex, 16 chars) of the weights and the manifest: a cache-key part that changes with the weights."""
    folder = Path(folder)
    h = hashlib.sha256()
    for name in (WEIGHTS, MANIFEST):
        path = folder / name
        if not path.exists():
            raise UserError(f"{folder} is not a trained artefact: it has no {name}.")
        h.update(name.encode())
        h.update(file_sha256(path).encode())
    return h.hexdigest()[:16]
