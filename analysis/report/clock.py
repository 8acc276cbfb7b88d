"""A report's time budget, enforced by the clock: every unit of work asks, before it starts, whether it still fits.

A unit is one method of the quality table, one task score, the cost rounds, one layer-map cell, one mechanism
summary. The plan's estimates (`plan`) come from a short probe timed at the start of the run; while the run goes
on, every unit that computed (not read from the cache) adds its measured and estimated seconds, and their ratio
(`drift`) scales the next estimate: a machine that got busier after the probe, or a method slower than its
guessed relative cost, is seen after one unit. A unit starts only when its estimate times the drift fits in the
time left. A unit in flight is never cut (its result would be lost), so a run ends within about one unit of its
budget, and every finished unit is in the cache for the next run.

    budget = Budget(900)                       # seconds, counted from now (or from `started`)
    why = budget.stop_reason(40.0)             # None, or the sentence saying why a 40-s unit is not started
    budget.measured(40.0, 52.1)                # a unit estimated at 40 s took 52.1 s
"""

from __future__ import annotations

import time
from typing import Callable

INTERRUPTED = "the run was interrupted before this finished"
RESUME = "raise the budget, or run the same command again: it resumes from the cache"  # the remedy, for both


def now() -> float:
    """The clock every budget reads unless it is given its own (tests replace this one)."""
    return time.monotonic()


class Budget:
    def __init__(self, seconds: float, *, started: float | None = None,
                 asked_to_stop: Callable[[], bool] | None = None, clock: Callable[[], float] | None = None):
        """`started`: when the budget began, on `clock` (the command passes the time it started, so loading the
        model and the timing probe count too); `asked_to_stop()`: a user's stop (the page's button)."""
        self.seconds = seconds
        self.clock = clock
        self.started = self.now() if started is None else started
        self.asked_to_stop = asked_to_stop
        self.interrupted = False  # set by a stop request or Ctrl-C: nothing more is started
        self.estimated = self.spent = 0.0  # over the units that computed

    def now(self) -> float:
        return self.clock() if self.clock is not None else now()

    def elapsed(self) -> float:
        return self.now() - self.started

    def drift(self) -> float:
        """Measured over estimated seconds of the units so far (1 before the first)."""
        return self.spent / self.estimated if self.estimated > 0 else 1.0

    def measured(self, estimate: float, seconds: float) -> None:
        if estimate > 0:
            self.estimated += estimate
            self.spent += seconds

    def stop_reason(self, estimate: float = 0.0) -> str | None:
        """None when a unit estimated at `estimate` seconds may start; else why not (interrupted, or it would end
        past the budget)."""
        if not self.interrupted and self.asked_to_stop is not None and self.asked_to_stop():
            self.interrupted = True
        if self.interrupted:
            return INTERRUPTED
        elapsed, need = self.elapsed(), estimate * self.drift()
        if elapsed + need <= self.seconds:
            return None
        return (f"the budget of {self.seconds / 60:g} min ran out before this ({duration(elapsed)} spent, about "
                f"{duration(need)} more needed)")


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
