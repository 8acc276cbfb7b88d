"""Timing for the benchmark scripts: configurations timed in the same run, interleaved, so a change of machine
load hits every configuration alike and their ratios stay meaningful.

    med = interleaved_medians({"vanilla": lambda: f(texts), "prompteol": lambda: g(texts)}, repeats=3)
    times = interleaved_rounds({...}, repeats=5)   # {label: [seconds of round 1, round 2, ...]}: a ratio per round
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def interleaved_rounds(configs: dict[str, Callable[[], object]], repeats: int,
                       after_round: Callable[[dict[str, list[float]]], None] | None = None) -> dict[str, list[float]]:
    """Wall seconds of each configuration in each of `repeats` rounds (`interleaved_medians` explains the order):
    the same round's times of two configurations share the machine's load, so their ratio per round is a fair
    sample of the ratio, and the rounds' spread is its uncertainty."""
    times: dict[str, list[float]] = {label: [] for label in configs}
    order = list(configs.items())
    for r in range(repeats):
        shift = r % len(order) if order else 0
        for label, fn in order[shift:] + order[:shift]:
            start = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - start)
        if after_round is not None:
            after_round(times)
    return times


def interleaved_medians(configs: dict[str, Callable[[], object]], repeats: int,
                        after_round: Callable[[dict[str, list[float]]], None] | None = None) -> dict[str, float]:
    """Median wall seconds of each configuration over `repeats` rounds; every round runs each one once, round r
    starting at the r-th configuration. The rotation matters: whatever runs first in a round pays for what the
    round before left behind (in the model report the plain forward, first in every round, ran 3.4x slower than
    the identical `last` method timed later in the same rounds), so no configuration is first more than once in
    `len(configs)` rounds and the median drops that round. `after_round(times so far)` can report progress."""
    times = interleaved_rounds(configs, repeats, after_round)
    return {label: statistics.median(t) for label, t in times.items()}
