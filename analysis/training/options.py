"""A trained system's settings as one frozen dataclass whose fields declare their own flag, help and limits.

    @dataclass(frozen=True)
    class Config(RunOptions):
        k: int = option(5, "soft tokens generated in training", min=1, limit=32)

    add_options(parser, Config)                  # --k, --steps, --lr, ... generated once, for the CLI
    config = from_args(Config, args)             # checked before any work: finite, in range, within limits

Every number is checked for finiteness and range before a model loads, and each message names the flag. `limit`
is a documented ceiling that keeps a careless value (10^12 steps, a LoRA rank of 10^7) from starting an
impossible run; `--no-budgets` lifts the ceilings, never the ranges.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import PurePath

from analysis.core import budgets
from analysis.core.errors import UserError


def option(default, help: str, *, min=None, max=None, choices=None, limit=None, above=None, path=False):
    """A config field. `min`/`max`: the valid range (inclusive); `above`: exclusive lower bound (lr > 0);
    `limit`: the ceiling lifted by --no-budgets; `choices`: allowed strings; `path`: a folder of this machine,
    which the manifest's command and hyperparameters name by its last part only (never a machine path)."""
    return field(default=default, metadata={"help": help, "min": min, "max": max, "choices": choices,
                                            "limit": limit, "above": above, "path": path})


def _shown(f, value):
    """A field's value as a manifest shows it: a path option by its folder's name."""
    return PurePath(value).name if f.metadata.get("path") and value else value


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


@dataclass(frozen=True)
class RunOptions:
    """What every training run takes (the loop's settings, where the model and the result live)."""

    model: str = option("default", "decoder: 'default', a built-in name, a Hugging Face folder or a .gguf file")
    steps: int = option(200, "optimiser steps", min=1, limit=100_000)
    batch_size: int = option(16, "examples per micro-batch", min=2, limit=1024)
    grad_accum: int = option(1, "micro-batches per optimiser step", min=1, limit=64)
    lr: float = option(2e-4, "AdamW learning rate", above=0.0, max=1.0)
    eval_every: int = option(25, "validate every N steps", min=1)
    patience: int = option(0, "evaluations without improvement before stopping (0 = never stop early)", min=0)
    seed: int = option(0, "seed of the data order and of every initialisation", min=0)
    max_minutes: float = option(60.0, "stop cleanly (best weights kept) after this much training wall time",
                                above=0.0, limit=24 * 60)
    threads: int = option(0, "torch threads (0 = torch's choice; 1 is fastest on a CPU shared with other jobs)",
                          min=0, limit=256)
    out: str = option("", "result folder (default: <cache>/runs/<system>/<model>); the shipped artefacts are "
                          "written only with --ship")
    resume: bool = option(False, "continue from the checkpoint in the result folder")
    ship: bool = option(False, "also copy the result into the repository's shipped artefacts "
                               "(analysis/artefacts/<system>/<model>/), replacing what is there")


def add_options(parser, config_cls) -> None:
    """One argparse flag per field of `config_cls` (type from the default, help with default and range)."""
    for f in dataclasses.fields(config_cls):
        meta, default = f.metadata, f.default
        if isinstance(default, bool):
            parser.add_argument(flag(f.name), action="store_true", dest=f.name, help=meta["help"])
            continue
        kind = type(default)
        if kind is tuple:
            parser.add_argument(flag(f.name), default=",".join(map(str, default)), dest=f.name,
                                help=f"{meta['help']} (comma-separated; default {','.join(map(str, default))})")
            continue
        parser.add_argument(flag(f.name), type=kind, default=default, dest=f.name, choices=meta["choices"],
                            help=f"{meta['help']} (default {default!r}{_range_text(meta)})")


def from_args(config_cls, args):
    """The config from parsed arguments (fields absent from `args` keep their defaults), checked."""
    values = {}
    for f in dataclasses.fields(config_cls):
        if hasattr(args, f.name):
            value = getattr(args, f.name)
            if isinstance(f.default, tuple) and isinstance(value, str):
                value = tuple(v.strip() for v in value.split(",") if v.strip())
            values[f.name] = value
    return check(config_cls(**values))


def check(config):
    """`config` if every field is finite and in range, else one UserError naming the flag."""
    lifted = budgets.is_lifted()
    for f in dataclasses.fields(config):
        meta, value = f.metadata, getattr(config, f.name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            if meta.get("choices") and value not in meta["choices"]:
                raise UserError(f"{flag(f.name)} must be one of {', '.join(meta['choices'])}, got {value!r}.")
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise UserError(f"{flag(f.name)} must be a finite number, got {value}.")
        lo, hi, above, limit = meta.get("min"), meta.get("max"), meta.get("above"), meta.get("limit")
        if (lo is not None and value < lo) or (above is not None and value <= above) or (hi is not None and value > hi):
            raise UserError(f"{flag(f.name)} must be {_range_text(meta).strip('; ')}, got {value}.")
        if limit is not None and value > limit and not lifted:
            raise UserError(f"{flag(f.name)} {value} is over this tool's limit of {limit}; --no-budgets lifts it "
                            "for a machine that can take it.")
    return config


def hyperparameters(config) -> dict:
    """The settings that shape the weights (for the manifest): everything but where things live."""
    skip = {"out", "resume", "ship", "threads", "model"}
    return {f.name: _shown(f, getattr(config, f.name)) for f in dataclasses.fields(config) if f.name not in skip}


def command(system: str, config) -> str:
    """The command that reproduces this run: the non-default flags, never a path of this machine."""
    parts = ["python -m analysis train", system]
    defaults = type(config)()
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name in ("out", "resume") or value == getattr(defaults, f.name):
            continue
        value = _shown(f, value)
        if isinstance(value, bool):
            parts.append(flag(f.name))
        else:
            text = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
            parts += [flag(f.name), text if text and " " not in text and "\n" not in text else repr(text)]
    return " ".join(parts)


def _range_text(meta) -> str:
    lo, hi, above, limit = meta.get("min"), meta.get("max"), meta.get("above"), meta.get("limit")
    bits = []
    if above is not None:
        bits.append(f"> {above}")
    if lo is not None:
        bits.append(f">= {lo}")
    if hi is not None:
        bits.append(f"<= {hi}")
    text = " and ".join(bits)
    if limit is not None:
        text += f"{'; ' if text else ''}at most {limit} unless --no-budgets"
    return f"; {text}" if text else ""
