"""A whole trained system in a few lines, for the tests of the machinery every system shares (`systems.run`, the
`train all` queue): it learns one scalar towards `target`, sleeping `step_seconds` a step so a test can kill it
halfway. Registered by `register()` (one line in `systems.SYSTEMS`, as a real system's is)."""

from __future__ import annotations

import json
import sys
import time
import types
from dataclasses import dataclass

import torch

from analysis.training import systems
from analysis.core.params import param
from analysis.training.options import RunOptions


@dataclass(frozen=True)
class DummyConfig(RunOptions):
    steps: int = param(2, "optimiser steps", min=1, limit=100)
    eval_every: int = param(1, "validate every N steps", min=1)
    lr: float = param(0.1, "learning rate", above=0.0, max=1.0)
    target: float = param(3.0, "the value the weight learns", min=-10.0, max=10.0)
    poison_at: int = param(0, "make the loss NaN from this step on (0 = never)", min=0)
    step_seconds: float = param(0.0, "sleep this long in every step (a slow system, to be killed halfway)", min=0.0)


def module() -> types.ModuleType:
    dummy = types.ModuleType("dummy_system_module")
    dummy.NAME, dummy.HELP, dummy.Config = "dummy", "a dummy trained system", DummyConfig

    def setup(config, backbone):
        w = torch.zeros(1, requires_grad=True)
        seen = {"step": 0}

        def loss_fn(batch):
            seen["step"] += 1
            time.sleep(config.step_seconds)
            loss = (w - config.target).square().sum()
            if config.poison_at and seen["step"] >= config.poison_at:
                loss = loss * float("nan")
            return loss, {}

        def batches():
            while True:
                yield None

        return systems.Job(parameters={"w": w}, loss_fn=loss_fn, batches=batches(),
                           evaluate=lambda: {"score": -float((w - config.target).abs())},
                           tensors=lambda: {"w": w.detach().clone()}, restore=lambda t: w.copy_(t["w"]),
                           data={"train": "none"}, examples_per_step=1, finish=lambda: {"w": float(w.detach())},
                           warmup_steps=1)

    dummy.setup = setup
    dummy.load = lambda folder, backbone: json.loads((folder / "manifest.json").read_text())["results"]["w"]
    return dummy


def register(monkeypatch=None) -> str:
    """Register the dummy under the name "dummy" (through `monkeypatch` in a test, for good in a subprocess)."""
    if monkeypatch is not None:
        monkeypatch.setitem(sys.modules, "dummy_system_module", module())
        monkeypatch.setitem(systems.SYSTEMS, "dummy", "dummy_system_module")
    else:
        sys.modules["dummy_system_module"] = module()
        systems.SYSTEMS["dummy"] = "dummy_system_module"
    return "dummy"
