"""Training foundation shared by every trained method (Causal2Vec bridge, GIRCSE adapter, context compression).

- `losses`: info_nce, cosent, answer_cross_entropy (pure functions, known-answer tests).
- `loop`: `TrainConfig`, `train(...) -> TrainResult` (seeded AdamW loop, eval/early stopping, resumable).
- `artefacts`: `save_artefact`, `load_artefact`, `artefact_digest` (safetensors + manifest.json).
- `TRAINERS`: `python -m analysis train <name>` dispatches here. Each value is the dotted path of a module with
  `add_arguments(parser)` and `run(args) -> dict`; keep such modules cheap to import (torch inside `run`).
"""

from __future__ import annotations

import importlib

TRAINERS: dict[str, str] = {
    "causal2vec": "analysis.training.causal2vec",
    "gircse": "analysis.training.gircse",
    "compression": "analysis.training.compression",
}


def trainer(name: str):
    """The trainer module registered under `name`."""
    from analysis.core.errors import UserError

    if name not in TRAINERS:
        raise UserError(f"No trainer for '{name}'. Available: {', '.join(sorted(TRAINERS))}.")
    return importlib.import_module(TRAINERS[name])
