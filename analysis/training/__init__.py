"""Training every trained system the same way (Causal2Vec bridge + LoRA, GIRCSE adapter, context compression).

- `systems`: the registry `SYSTEMS` (one line per system) and `run(name, config)`, the one runner.
- `options`: `RunOptions`, `param(...)`: a system's Config dataclass, its CLI flags and their checks.
- `runs`: the run's folder, checked before the first step; `--ship` into the shipped artefacts.
- `loop`: `TrainConfig`, `train(...) -> TrainResult` (seeded AdamW loop, eval/early stopping, resumable).
- `losses`, `icr`: the loss functions (pure, known-answer tests).
The manifest schema and the artefact folders are `analysis.weights.manifest` and `analysis.weights.artefacts`.
"""
