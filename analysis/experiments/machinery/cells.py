"""How numbers appear in a record's cells: one formatter per kind of number, so every table says an interval,
a paired difference or an exact-match rate the same way (the "exact match [Wilson]" cell used to be written four
times)."""

from __future__ import annotations

import math


def interval(ci, digits: int = 4) -> list | None:
    """[lo, hi] rounded, or None when there is no interval (no bootstrap was run)."""
    lo, hi = ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return [round(float(lo), digits), round(float(hi), digits)]


def difference(d) -> str:
    """"+0.012 [-0.003, +0.027]": a paired difference (`eval.stats.Paired`) with its 95% interval."""
    return f"{d.difference:+.3f} [{d.ci[0]:+.3f}, {d.ci[1]:+.3f}]"


def p_value(p: float) -> str | None:
    """A bootstrap p-value as shown: "< 0.001" below the resolution of 1,000 resamples, else three decimals."""
    if p is None or not math.isfinite(p):
        return None
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def rate(r: dict | None, unit: str = "") -> str | None:
    """"81.0 [75.1, 85.9]" (unit "%": "81.0% [75.1, 85.9]"): an exact-match rate (`compression.system.score`'s
    exact_match and exact_match_ci) with its 95% Wilson interval, in percent."""
    if r is None:
        return None
    lo, hi = r["exact_match_ci"]
    return f"{100 * r['exact_match']:.1f}{unit} [{100 * lo:.1f}, {100 * hi:.1f}]"


def points(d) -> str:
    """"+3.5 [+1.0, +6.0]": a paired difference of two rates, in percentage points."""
    return f"{100 * d.difference:+.1f} [{100 * d.ci[0]:+.1f}, {100 * d.ci[1]:+.1f}]"
