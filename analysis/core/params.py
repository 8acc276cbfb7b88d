"""One parameter contract for everything a user sets: a method's `Params`, a trained system's and an experiment's
`Config`, the claims board's `Settings`. Each is a frozen dataclass whose fields are `param(...)`: the default, a
help that says what it does and why the default is what it is, and the limits it is checked against.

    @dataclass(frozen=True)
    class Config:
        k: int = param(5, "soft tokens generated (the paper's K)", min=1, limit=32)

    check(config, name_of=flag)        # every field checked before any work; the message names the flag
    problem(field, value)              # the one check, as a phrase: "must be >= 1, got 0" (or None)

Meta a field may carry (all optional):
    min, max      the valid range, inclusive;  above: an exclusive lower bound (a learning rate > 0)
    limit         a documented ceiling that keeps a careless value (10^12 steps) from starting an impossible run;
                  `--no-budgets` lifts it, never the range
    choices       the allowed values;  step: the app widget's step
    kind          "layer" (a hidden-state index, bounded by the loaded model where the model is known), "template"
                  (must hold {text} `copies` times, default once to MAX_COPIES; `optional=True` allows ""), "text"
    parse         a str -> value parser for a free-form spec (a depth "7/32"); the value is then not type-checked
    path          a folder of this machine, which manifests and commands name by its last part only

The app's widgets, the command line's flags (`analysis.core.options`) and each method's help are generated from
these fields, so a limit is written once.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import field
from pathlib import PurePath

from analysis.core import budgets
from analysis.core.errors import UserError

KINDS = ("layer", "template", "text")
PLACEHOLDER = "{text}"  # where a template puts the text
MAX_COPIES = 8  # copies of {text} in a template: Echo needs 2; segment ids are int8 (127 at most), far above


def param(default, help: str, **meta):
    """A parameter field (see the module docstring for the meta it may carry)."""
    if meta.get("kind") not in (None, *KINDS):
        raise ValueError(f"unknown parameter kind {meta['kind']!r}; known: {KINDS}")
    return field(default=default, metadata={"help": help, **meta})


def shown(f, value):
    """A field's value as a manifest or a command shows it: a path by its folder's name."""
    return PurePath(value).name if f.metadata.get("path") and value else value


def problem(f, value) -> str | None:
    """What is wrong with `value` for field `f`, as the end of a sentence ("must be >= 1, got 0"), or None."""
    meta, default = f.metadata, f.default
    wrong_type = _wrong_type(default, value, "parse" in meta)
    if wrong_type:
        return wrong_type
    if "choices" in meta and meta["choices"] and value not in meta["choices"]:
        return f"must be one of {', '.join(map(str, meta['choices']))}, got {value!r:.60}"
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        lo, hi, above, limit = meta.get("min"), meta.get("max"), meta.get("above"), meta.get("limit")
        if (lo is not None and value < lo) or (above is not None and value <= above) or (hi is not None and value > hi):
            return f"must be {range_text(meta, with_limit=False)}, got {value}"
        if limit is not None and value > limit and not budgets.is_lifted():
            return f"{value} is over this tool's limit of {limit}; --no-budgets lifts it for a machine that can take it"
    if meta.get("kind") == "template" and not (meta.get("optional") and value == ""):
        return _template_problem(value, meta.get("copies", (1, MAX_COPIES)))
    return None


def _wrong_type(default, value, parsed: bool) -> str | None:
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"must be true or false, got {value!r:.60}"
    if isinstance(default, int):
        ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        return None if ok else f"must be a whole number, got {value!r:.60}"
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return f"must be a number, got {value!r:.60}"
        return None if math.isfinite(value) else f"must be a finite number, got {value}"
    if isinstance(default, str) and not isinstance(value, str) and not parsed:
        return f"must be text, got {type(value).__name__}"
    return None


def _template_problem(value: str, copies: tuple) -> str | None:
    lo, hi = copies
    n = value.count(PLACEHOLDER)
    if lo <= n <= hi:
        return None
    times = {1: "once", 2: "twice"}
    want = f"exactly {times.get(lo, f'{lo} times')}" if lo == hi else f"{lo} to {hi} times"
    why = ": without it every text gets the same prompt" if n == 0 else ""
    return f"must contain {PLACEHOLDER} {want}, got it {n} times{why}"


def range_text(meta, *, with_limit: bool = True) -> str:
    """A field's range in words: "> 0.0 and <= 1.0; at most 1440 unless --no-budgets" ("" when unbounded)."""
    lo, hi, above, limit = meta.get("min"), meta.get("max"), meta.get("above"), meta.get("limit")
    bits = [f"> {above}"] if above is not None else []
    bits += [f">= {lo}"] if lo is not None else []
    bits += [f"<= {hi}"] if hi is not None else []
    text = " and ".join(bits)
    if with_limit and limit is not None:
        text += f"{'; ' if text else ''}at most {limit} unless --no-budgets"
    return text


def check(obj, name_of=lambda name: name):
    """`obj` (a dataclass of `param` fields) when every field passes `problem`, else one UserError naming the field
    as `name_of(field name)` says (a flag "--max-minutes", or "prompteol: layer")."""
    for f in dataclasses.fields(obj):
        found = problem(f, getattr(obj, f.name))
        if found:
            raise UserError(f"{name_of(f.name)} {found}.")
    return obj
