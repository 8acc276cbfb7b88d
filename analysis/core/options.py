"""A `Config` of `analysis.core.params.param` fields as command-line flags, one per field.

    @dataclass(frozen=True)
    class Config:
        k: int = param(5, "soft tokens generated", min=1, limit=32)

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

from analysis.core.params import check as check_params
from analysis.core.params import range_text, shown


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
        limits = range_text(meta)
        parser.add_argument(flag(f.name), type=kind, default=default, dest=f.name, choices=meta.get("choices"),
                            help=f"{meta['help']} (default {default!r}{'; ' + limits if limits else ''})")


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
    """`config` if every field passes its limits (`analysis.core.params.problem`), else one UserError naming the flag."""
    return check_params(config, name_of=flag)


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
