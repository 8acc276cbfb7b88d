"""Timing for the benchmark scripts: configurations timed in the same run, interleaved, so a change of machine
load hits every configuration alike and their ratios stay meaningful.

    med = interleaved_medians({"vanilla": lambda: f(texts), "prompteol": lambda: g(texts)}, repeats=3)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def interleaved_medians(configs: dict[str, Callable[[], object]], repeats: int,
                        after_round: Callable[[dict[str, list[float]]], None] | None = None) -> dict[str, float]:
    """Median wall seconds of each configuration over `repeats` rounds; every round runs each one once, in order.
    `after_round(times so far)` can report progress."""
    times: dict[str, list[float]] = {label: [] for label in configs}
    for _ in range(repeats):
        for label, fn in configs.items():
            start = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - start)
        if after_round is not None:
            after_round(times)
    return {label: statistics.median(t) for label, t in times.items()}
