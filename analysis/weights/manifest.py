"""One manifest schema for every trained system, and one reader for the curves of any manifest.

Schema 1 (written by `analysis.training.systems.run`):

    {"schema": 1, "system": "causal2vec", "method": "causal2vec",
     "model_identity": "...", "model": "smollm2-135m",
     "command": "python -m analysis train causal2vec --steps 180",     # never a path of the training machine
     "data": {...names, sizes, digests...}, "seed": 0, "hyperparameters": {...},
     "curves": {"train": [{"step": 1, "loss": 2.3, ...}], "validation": [{"step": 0, "score": 0.28, ...}]},
     "steps_done": 180, "best_step": 160, "best_score": 0.71, "stopped": "completed", "partial": false,
     "wall_seconds": 3540.2, "examples_per_second": 0.81, "results": {...final numbers...},
     "code_version": "...", "created": "...", "weights_sha256": "..."}

`partial: true` marks the best weights of a run that has not finished (or never will: killed, stopped on a
non-finite loss). The artefacts shipped before schema 1 were rewritten into it (weights untouched; a `note` says
what differed in the code that trained them).
"""

from __future__ import annotations

SCHEMA = 1


def make(*, system: str, backbone, command: str, data: dict, seed: int, hyperparameters: dict, curves: dict,
         steps_done: int, best_step: int, best_score: float, stopped: str, partial: bool, wall_seconds: float,
         examples_per_second: float | None, results: dict | None = None, extra: dict | None = None) -> dict:
    """A schema-1 manifest (save_artefact adds code_version, created and weights_sha256)."""
    return {"schema": SCHEMA, "system": system, "method": system, "model_identity": backbone.identity,
            "model": backbone.facts.name, "command": command, "data": data, "seed": seed,
            "hyperparameters": hyperparameters, "curves": curves, "steps_done": steps_done, "best_step": best_step,
            "best_score": best_score, "stopped": stopped, "partial": partial, "wall_seconds": round(wall_seconds, 1),
            "examples_per_second": None if examples_per_second is None else round(examples_per_second, 3),
            "results": results or {}, **(extra or {})}


def curves(manifest: dict) -> tuple[list[dict], list[dict]]:
    """(train rows {"step", "loss", ...}, validation rows {"step", "score", ...}) of a manifest or a run's log.json."""
    if "curves" in manifest:
        c = manifest["curves"]
        return list(c.get("train", [])), list(c.get("validation", []))
    return list(manifest.get("train", [])), list(manifest.get("eval", []))  # the loop's log.json
