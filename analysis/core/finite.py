"""Strict JSON for numbers from numpy and torch: bare NaN is not JSON, so every non-finite float becomes null.
The command line's output and the model report's JSON go through it."""

from __future__ import annotations

import dataclasses
import math


def finite(obj):
    """`obj` with NaN and infinities as None, numpy arrays and scalars as lists and numbers, dataclasses as dicts:
    what strict JSON (`json.dumps(..., allow_nan=False)`) accepts. Raises TypeError for anything else."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    if hasattr(obj, "tolist"):  # numpy arrays and scalars (a numpy float becomes a Python float, then checked)
        return finite(obj.tolist())
    if hasattr(obj, "__dataclass_fields__"):
        return finite(dataclasses.asdict(obj))
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
