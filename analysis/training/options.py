"""What every training run takes, as a frozen dataclass of `analysis.core.options` fields (each its own flag).

    @dataclass(frozen=True)
    class Config(RunOptions):
        k: int = param(5, "soft tokens generated in training", min=1, limit=32)

`hyperparameters(config)` is what shapes the weights (for the manifest); `command(system, config)` the command that
reproduces the run, derived from the settings.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from analysis.core.options import flags
from analysis.core.params import param, shown


@dataclass(frozen=True)
class RunOptions:
    """What every training run takes (the loop's settings, where the model and the result live)."""

    model: str = param("default", "decoder: 'default', a built-in name, a Hugging Face folder or a .gguf file")
    steps: int = param(200, "optimiser steps", min=1, limit=100_000)
    batch_size: int = param(16, "examples per micro-batch", min=2, limit=1024)
    grad_accum: int = param(1, "micro-batches per optimiser step", min=1, limit=64)
    lr: float = param(2e-4, "AdamW learning rate", above=0.0, max=1.0)
    eval_every: int = param(25, "validate every N steps", min=1)
    patience: int = param(0, "evaluations without improvement before stopping (0 = never stop early)", min=0)
    seed: int = param(0, "seed of the data order and of every initialisation", min=0)
    max_minutes: float = param(60.0, "stop cleanly (best weights kept) after this much training wall time",
                                above=0.0, limit=24 * 60)
    threads: int = param(0, "torch threads (0 = torch's choice; 1 is fastest on a CPU shared with other jobs)",
                          min=0, limit=256)
    out: str = param("", "result folder (default: <cache>/runs/<system>/<model>); the shipped artefacts are "
                          "written only with --ship")
    resume: bool = param(False, "continue from the checkpoint in the result folder")
    precision: str = param("float32", "the training forward's precision: bfloat16 runs it under autocast (the "
                                       "trained tensors, their optimiser state and validation stay float32)",
                            choices=("float32", "bfloat16"))
    ship: bool = param(False, "also copy the result into the repository's shipped artefacts "
                               "(analysis/artefacts/<system>/<model>/), replacing what is there")


def hyperparameters(config) -> dict:
    """The settings that shape the weights (for the manifest): everything but where things live."""
    skip = {"out", "resume", "ship", "threads", "model"}
    return {f.name: shown(f, getattr(config, f.name)) for f in dataclasses.fields(config) if f.name not in skip}


def command(system: str, config) -> str:
    """The command that reproduces this run: the non-default flags, never a path of this machine."""
    return " ".join(["python -m analysis train", system, *flags(config, skip=("out", "resume"))])
