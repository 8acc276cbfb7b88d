"""How long a run has taken and how long it still needs, said as a person would: the words of every progress line
(the library's `progress(done, total, message)`, the cache's `cache.progress`), so a page and the command line tell
a user the same thing whichever layer measured it.

    eta = Eta(100_000, "documents")
    ...
    progress(done, eta.total, eta.line(done))   # "12,288/100,000 documents, 1 min elapsed, about 7 min left"
"""

from __future__ import annotations

import time
from collections.abc import Callable


def duration(seconds: float) -> str:
    """'40 s', '3 min', '2 h 5 min': a time taken or left, rounded as a person would say it."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes} min"


class Eta:
    """`total` units of work started now: the time left from the rate measured so far (elapsed / done units), so a
    run whose units cost alike (a corpus read in file order) gets an estimate that holds from its first batch."""

    def __init__(self, total: int, unit: str, clock: Callable[[], float] = time.perf_counter):
        self.total, self.unit, self.clock = total, unit, clock
        self.began = clock()

    def elapsed(self) -> float:
        return self.clock() - self.began

    def seconds_left(self, done: int) -> float | None:
        """None before the first unit is done (no rate yet) and once all are."""
        if done <= 0 or done >= self.total:
            return None
        return self.elapsed() / done * (self.total - done)

    def line(self, done: int) -> str:
        """'12,288/100,000 documents, 1 min elapsed, about 7 min left' (no estimate before the first unit)."""
        text = f"{done:,}/{self.total:,} {self.unit}, {duration(self.elapsed())} elapsed"
        left = self.seconds_left(done)
        if left is not None:
            return f"{text}, about {duration(left)} left"
        return text if done >= self.total else f"{text} (no estimate yet)"
