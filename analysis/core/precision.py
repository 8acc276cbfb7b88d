"""Which precision a method runs in: bfloat16 where the hardware has it and this model's measured evidence says the
method's results do not move, float32 everywhere else.

`--dtype auto` (the default of the app and the command line) asks `choose(model, method)` for every method: float32
on hardware without bfloat16 units (`bf16_supported`), for a model without a dtype record, and for a method whose
paired score difference in that record is past `TOLERANCE`; bfloat16 otherwise. The record (`measure dtype`,
docs/results/dtype_<model>.json) times both precisions in the same run and scores both on the same held-out items,
so the default follows the evidence and says why (`Choice.reason`). A backbone's identity carries its dtype, so the
cache never mixes results of the two.

    bf16_supported()                          # AVX-512 BF16 / AMX on this CPU, or a bf16-capable GPU
    choose(verdicts, "prompteol")             # Choice("bfloat16", "bfloat16: did not move its scores ...")
    backbone, choice = for_method(backbone, "prompteol")   # the model in the dtype to run it in (the cache's door)
    ran(backbone)                             # {"prompteol": Choice(...)}: what the command line reports
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path

from analysis.core.paths import records_folder

DTYPES = ("float32", "bfloat16", "float16")
CHOICES = ("auto", *DTYPES)
TOLERANCE = 0.01  # a method runs in bfloat16 only when its paired score difference's interval lies within ±this
CPU_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo flags of hardware bfloat16 dot products
FORCE = "EMBEDSCOPE_BF16"  # "0": behave as a machine without bfloat16 units (tests, a user who wants float32)


@dataclass(frozen=True)
class Choice:
    dtype: str
    reason: str  # one sentence, shown beside every result


def bf16_supported(device: str = "cpu", cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether `device` computes bfloat16 in hardware (the speed-up auto is for). `EMBEDSCOPE_BF16=0` says no,
    `=1` says yes, whatever the hardware."""
    forced = os.environ.get(FORCE, "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    if device.startswith("cuda"):
        import torch  # lazy: only a CUDA device asks, and torch stays off the pages' first figure

        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    try:
        flags = cpuinfo.read_text(errors="replace")
    except OSError:
        return False
    return any(flag in flags.split() for flag in CPU_FLAGS)


def choose(verdicts: dict | None, method: str, *, requested: str = "auto", device: str = "cpu") -> Choice:
    """The dtype `method` runs in. `verdicts`: {method: {"dtype": "bfloat16"|"float32", "reason": ...}} from this
    model's dtype record (None: no record for this model)."""
    if requested != "auto":
        return Choice(requested, f"{requested}, as asked")
    if not bf16_supported(device):
        return Choice("float32", "float32: this machine has no bfloat16 units")
    if verdicts is None:
        return Choice("float32", "float32: no bfloat16 evidence for this model yet (python -m analysis measure dtype)")
    found = verdicts.get(method)
    if found is None:
        return Choice("float32", f"float32: {method} was not in this model's dtype record")
    return Choice(found["dtype"], found["reason"])


def for_method(backbone, name: str):
    """(backbone in the dtype `name` runs in, Choice): a method's name, or "view:<name>" for an inspection view. A
    backbone not loaded with `auto` runs everything in its own dtype and never reads a record. The choice is noted
    on the backbone (`ran`), so the command line can say what each method ran in."""
    auto = getattr(backbone, "auto", False)
    dtype = getattr(getattr(backbone, "facts", None), "dtype", "float32")  # a test's stand-in may have no facts
    choice = (choose(verdicts_for(backbone.identity), name, device=backbone.facts.device) if auto
              else Choice(dtype, f"{dtype}: loaded in {dtype}, not auto"))
    noted = getattr(backbone, "_ran", None)  # a lazy handle or a stand-in has none (and must not load to say so)
    if isinstance(noted, dict):
        noted[name] = choice
    return (backbone.in_dtype(choice.dtype) if auto else backbone), choice


def ran(backbone) -> dict:
    """{method or view: Choice} of what ran, or was read from the cache, on this model (`for_method` notes each)."""
    return dict(getattr(backbone, "_ran", None) or {})


def verdicts_for(identity: str) -> dict | None:
    """{method or view: {"dtype", "reason"}} of the dtype record measured on exactly these weights, or None."""
    found = tuple((str(p), p.stat().st_mtime_ns) for p in sorted(records_folder().glob("dtype_*.json")))
    return _verdicts(identity, found)


@functools.lru_cache(maxsize=32)
def _verdicts(identity: str, records: tuple) -> dict | None:
    """Read once per set of record files (their paths and modification times key it)."""
    for path, _ in records:
        try:
            record = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if any(m.get("identity") == identity for m in record.get("models", [])):
            return (record.get("extra") or {}).get("verdicts")
    return None

