"""Verdict rules, fixed before anything is measured: a claim's numbers in, one of five words out.

    holds here       the interval excludes zero (or the bar) in the claimed direction
    reversed here    it excludes zero (or the bar) the other way
    not resolved     the interval covers it: the verdict says how many more items would resolve it at the observed
                     effect (an interval's half-width shrinks with the square root of the items)
    cannot run here  what the claim needs that this machine or this model does not have
    not measured     the run stopped before this claim (its budget, an interruption): run again, the cache resumes

    paired(+0.031, (0.012, 0.050), n=500)              # a paired difference, claimed > 0
    non_inferior(-0.004, (-0.015, 0.006), 500, margin=0.01)   # claimed "not worse than" (or "no gain": A = K0)
    rate_difference(k_a, n_a, k_b, n_b)                 # two exact-match rates on different items (Newcombe-Wilson)
    rank(3, 40, gap=0.004)                              # a window among the map's cells
    ratio(1.52, claimed=1.4, tolerance=0.25, spread=(1.45, 1.61))   # a cost, "about 1.4x", over timing rounds
    below(0.62, bar=1.0, spread=(0.58, 0.66), what="KV / Echo")       # a cost claimed under a bar
    at_most(1.0, bar=2, what="extra tokens")                           # an exact count claimed at most a bar

Pure: no model, no data; `tests/test_verdicts.py` checks each rule on known answers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.eval.stats import wilson

HOLDS, REVERSED, UNRESOLVED, CANNOT, NOT_MEASURED = ("holds here", "reversed here", "not resolved", "cannot run here",
                                                     "not measured")
WORDS = (HOLDS, REVERSED, UNRESOLVED, CANNOT, NOT_MEASURED)
Z95 = 1.959964


def agreement(words) -> str:
    """Whether models' verdicts on one claim agree: "agree" (all judged alike), "disagree" (one holds where another
    is reversed), "differ in certainty" (judged, but one unresolved), or "not comparable" (a model could not judge
    it: cannot run, not measured). Compare models shows it per claim."""
    words = list(words)
    if len(words) < 2 or any(w not in (HOLDS, REVERSED, UNRESOLVED) for w in words):
        return "not comparable"
    if len(set(words)) == 1:
        return "agree"
    return "disagree" if {HOLDS, REVERSED} <= set(words) else "differ in certainty"


@dataclass(frozen=True)
class Verdict:
    word: str  # one of WORDS
    number: str = ""  # the measured effect with its interval, as shown ("+0.031 [+0.012, +0.050]")
    detail: str = ""  # what it rests on, or what would resolve it, or why it cannot run

    def as_json(self) -> dict:
        return {"word": self.word, "number": self.number, "detail": self.detail}


def more_items(n: int, half_width: float, effect: float) -> int | None:
    """Items to add so that an interval of `half_width` at `n` items, shrinking as 1/sqrt(n), would exclude zero at
    the observed `effect`: n * (half_width / |effect|)^2 - n, rounded up; None when the effect is zero."""
    if not effect or not math.isfinite(effect) or not math.isfinite(half_width):
        return None
    return max(1, math.ceil(n * (half_width / abs(effect)) ** 2) - n)


def paired(difference: float, ci, n: int, *, direction: int = 1, unit: str = "items", digits: int = 3,
           scale: float = 1.0, suffix: str = "", interval: str = "paired 95% interval") -> Verdict:
    """A paired difference A - B (claimed > 0, or < 0 with direction=-1) and its 95% interval over `n` `unit`.
    `scale` and `suffix` only change how the number is shown (100 and " points" for rates); `interval` names the
    kind of interval in the verdict's detail."""
    lo, hi = ci
    shown = f"{scale * difference:+.{digits}f}{suffix} [{scale * lo:+.{digits}f}, {scale * hi:+.{digits}f}]"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return Verdict(UNRESOLVED, f"{scale * difference:+.{digits}f}{suffix}",
                       f"no interval was computed (no bootstrap) on {n} {unit}")
    if (lo > 0 and direction > 0) or (hi < 0 and direction < 0):
        return Verdict(HOLDS, shown, f"the {interval} on {n} {unit} excludes zero in the claimed direction")
    if (hi < 0 and direction > 0) or (lo > 0 and direction < 0):
        return Verdict(REVERSED, shown, f"the {interval} on {n} {unit} excludes zero the other way")
    more = more_items(n, (hi - lo) / 2, difference)
    need = (f"about {more:,} more {unit} would resolve it at the observed effect" if more is not None
            else "the observed effect is zero")
    return Verdict(UNRESOLVED, shown, f"the interval on {n} {unit} covers zero; {need}")


def all_of(parts: list[Verdict], labels: list[str]) -> Verdict:
    """A claim made of several comparisons ("bias 1 beats 0 and 3"): holds when every part holds, reversed when one
    is reversed, else not resolved; the number lists each part."""
    number = "; ".join(f"{label}: {p.number}" for label, p in zip(labels, parts))
    words = [p.word for p in parts]
    if REVERSED in words:
        word = REVERSED
    elif all(w == HOLDS for w in words):
        word = HOLDS
    else:
        word = UNRESOLVED
    detail = "; ".join(f"{label}: {p.word} ({p.detail})" for label, p in zip(labels, parts))
    return Verdict(word, number, detail)


def non_inferior(difference: float, ci, n: int, *, margin: float, unit: str = "items", digits: int = 3,
                 scale: float = 1.0, suffix: str = "") -> Verdict:
    """A paired difference A - B claimed "not worse than B by more than `margin`" (a tie the paper reports, or "no
    gain" with A the baseline): holds when the interval's lower end is above -margin, reversed when its upper end is
    below it (B better by more than the margin), else not resolved."""
    lo, hi = ci
    shown = (f"{scale * difference:+.{digits}f}{suffix} [{scale * lo:+.{digits}f}, {scale * hi:+.{digits}f}] "
             f"(margin -{scale * margin:g}{suffix})")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return Verdict(UNRESOLVED, shown, f"no interval was computed (no bootstrap) on {n} {unit}")
    edge = f"-{scale * margin:g}{suffix}"
    if lo > -margin:
        return Verdict(HOLDS, shown, f"the paired 95% interval on {n} {unit} lies above the margin {edge}")
    if hi < -margin:
        return Verdict(REVERSED, shown, f"the paired 95% interval on {n} {unit} lies below the margin {edge}")
    return Verdict(UNRESOLVED, shown, f"the interval on {n} {unit} covers the margin {edge}")


def equivalent(difference: float, ci, n: int, *, margin: float, unit: str = "items") -> Verdict:
    """A paired difference claimed to be small either way (|A - B| < `margin`: "within a narrow range"): holds when
    the whole interval lies inside (-margin, margin), reversed when it lies wholly outside, else not resolved."""
    lo, hi = ci
    shown = f"{difference:+.3f} [{lo:+.3f}, {hi:+.3f}] (band +-{margin:g})"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return Verdict(UNRESOLVED, shown, f"no interval was computed (no bootstrap) on {n} {unit}")
    if -margin < lo and hi < margin:
        return Verdict(HOLDS, shown, f"the paired 95% interval on {n} {unit} lies inside +-{margin:g}")
    if lo >= margin or hi <= -margin:
        return Verdict(REVERSED, shown, f"the paired 95% interval on {n} {unit} lies outside +-{margin:g}")
    return Verdict(UNRESOLVED, shown, f"the interval on {n} {unit} crosses the band's edge +-{margin:g}")


def rate_difference(k_a: int, n_a: int, k_b: int, n_b: int, *, direction: int = 1, margin: float | None = None
                    ) -> Verdict:
    """Rate A minus rate B on different items (independent samples): Newcombe's hybrid interval from the two Wilson
    intervals (method 10 of Newcombe 1998), claimed > 0 (or < 0)
    (`margin`, a share: non-inferiority of A against B instead, `non_inferior`.)"""
    pa, pb = k_a / n_a, k_b / n_b
    (la, ua), (lb, ub) = wilson(k_a, n_a), wilson(k_b, n_b)
    d = pa - pb
    lo = d - math.sqrt((pa - la) ** 2 + (ub - pb) ** 2)
    hi = d + math.sqrt((ua - pa) ** 2 + (pb - lb) ** 2)
    n = min(n_a, n_b)
    if margin is not None:
        return non_inferior(d, (lo, hi), n, margin=margin, unit="items per side", digits=1, scale=100,
                            suffix=" points")
    return paired(d, (lo, hi), n, direction=direction, unit="items per side", digits=1, scale=100,
                  suffix=" points", interval="Newcombe-Wilson 95% interval")


def above_bar(k: int, n: int, bar: float) -> Verdict:
    """A rate claimed to be at least `bar`: its Wilson interval against the bar."""
    lo, hi = wilson(k, n)
    shown = f"{100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] against a bar of {100 * bar:.1f}%"
    if lo > bar:
        return Verdict(HOLDS, shown, f"the Wilson interval on {n} items lies above the bar")
    if hi < bar:
        return Verdict(REVERSED, shown, f"the Wilson interval on {n} items lies below the bar")
    p = k / n
    more = more_items(n, (hi - lo) / 2, p - bar)
    return Verdict(UNRESOLVED, shown, f"the Wilson interval on {n} items covers the bar"
                   + (f"; about {more:,} more items would resolve it at the observed rate" if more else ""))


def rank(position: int, cells: int, gap: float, *, top_share: float = 0.25, gap_tolerance: float = 0.01) -> Verdict:
    """A choice among cells (the ID window among the layer map's windows): holds when it ranks in the best
    `top_share` of the cells or within `gap_tolerance` of the best; reversed when it ranks in the worst half and
    more than the tolerance below the best; else not resolved (it says the rank and the gap)."""
    shown = f"rank {position} of {cells}, {gap:.3f} below the best"
    if position <= max(1, math.ceil(top_share * cells)) or gap <= gap_tolerance:
        return Verdict(HOLDS, shown, f"within the best {top_share:.0%} of the cells or {gap_tolerance} of the best")
    if position > cells / 2:
        return Verdict(REVERSED, shown, "in the worse half of the cells and more than the tolerance below the best")
    return Verdict(UNRESOLVED, shown, "between the best quarter and the worse half")


def ratio(measured: float, *, claimed: float, tolerance: float = 0.25, spread: tuple | None = None) -> Verdict:
    """A cost claimed to be about `claimed` (x a plain forward): holds within ±`tolerance` of it (relative), reversed
    above it by more, not resolved when the timing rounds' `spread` (lo, hi) straddles the band's edge. Cheaper
    than claimed holds: the claim is about cost."""
    top = claimed * (1 + tolerance)
    shown = (f"{measured:.2f}x" + (f" [{spread[0]:.2f}, {spread[1]:.2f}]" if spread else "")
             + f" (the paper: about {claimed:g}x)")
    lo, hi = spread or (measured, measured)
    if hi <= top:
        return Verdict(HOLDS, shown, f"at most {top:.2f}x, the claim plus {tolerance:.0%}")
    if lo > top:
        return Verdict(REVERSED, shown, f"above {top:.2f}x, the claim plus {tolerance:.0%}")
    return Verdict(UNRESOLVED, shown, f"the timing rounds straddle {top:.2f}x")


def below(measured: float, *, bar: float, spread: tuple | None = None, what: str = "the ratio") -> Verdict:
    """A cost claimed under `bar` (HTP / Echo < 1): holds when the timing rounds' whole `spread` is under it,
    reversed when it is all at or above it, not resolved when it straddles the bar."""
    lo, hi = spread or (measured, measured)
    shown = f"{what} {measured:.2f}" + (f" [{lo:.2f}, {hi:.2f}]" if spread else "") + f" (claimed under {bar:g})"
    if hi < bar:
        return Verdict(HOLDS, shown, f"every timing round is under {bar:g}")
    if lo >= bar:
        return Verdict(REVERSED, shown, f"every timing round is at or above {bar:g}")
    return Verdict(UNRESOLVED, shown, f"the timing rounds straddle {bar:g}")


def at_most(measured: float, *, bar: float, what: str) -> Verdict:
    """An exact count (no sampling error: tokens per text) claimed at most `bar`."""
    shown = f"{what} {measured:.2f} (claimed at most {bar:g})"
    if measured <= bar:
        return Verdict(HOLDS, shown, f"counted, not sampled: at most {bar:g}")
    return Verdict(REVERSED, shown, f"counted, not sampled: above {bar:g}")


def cannot_run(needs: str) -> Verdict:
    return Verdict(CANNOT, "", needs)


def not_measured(why: str) -> Verdict:
    return Verdict(NOT_MEASURED, "", why)
