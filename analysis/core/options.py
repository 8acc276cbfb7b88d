"""Settings as one frozen dataclass whose fields declare their own flag, help and limits.

    @dataclass(frozen=True)
    class Config:
        k: int = option(5, "soft tokens generated", min=1, limit=32)

    add_options(parser, Config)                  # --k ... generated once, for the CLI
    config = from_args(Config, args)             # checked before any work: finite, in range, within limits
    flags(config)                                # ["--k", "7"]: the non-default flags that reproduce it

Every number is checked for finiteness and range before a model loads, and each message names the flag. `limit`
is a documented ceiling that keeps a careless value (10^12 steps, a LoRA rank of 10^7) from starting an
impossible run; `--no-budgets` lifts the ceilings, never the ranges. Trained systems (`analysis.training`) and
experiments (`analysis.experiments`) declare their settings this way, so their commands are derived from the
settings and never written by hand.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import field
from pathlib import PurePath

from analysis.core import budgets
from analysis.core.errors import UserError


def option(default, help: str, *, min=None, max=None, choices=None, limit=None, above=None, path=False):
    """A config field. `min`/`max`: the valid range (inclusive); `above`: exclusive lower bound (lr > 0);
    `limit`: the ceiling lifted by --no-budgets; `choices`: allowed strings; `path`: a folder of this machine,
    which the manifest's command and hyperparameters name by its last part only (never a machine path)."""
    return field(default=default, metadata={"help": help, "min": min, "max": max, "choices": choices,
                                            "limit": limit, "above": above, "path": path})


def shown(f, value):
    """A field's value as a manifest shows it: a path option by its folder's name."""
    return PurePath(value).name if f.metadata.get("path") and value else value


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


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


def flags(config, skip=()) -> list[str]:
    """The flags that reproduce `config`: each field that differs from its default, a path option by its folder's
    name (never a path of this machine), fields named in `skip` left out."""
    parts = []
    defaults = type(config)()
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name in skip or value == getattr(defaults, f.name):
            continue
        value = shown(f, value)
        if isinstance(value, bool):
            parts.append(flag(f.name))
        else:
            text = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
            parts += [flag(f.name), text if text and " " not in text and "\n" not in text else repr(text)]
    return parts
