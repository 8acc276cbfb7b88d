"""The smallest sample a paired comparison of methods is reported on.

A paired bootstrap resamples the pairs with replacement; n pairs have C(2n - 1, n) distinct resamples: 3 with 2
pairs, 126 with 5, 92,378 with 10. Below 10 pairs most resamples repeat a handful of pairs, Spearman on many of
them is undefined (every resampled gold score or similarity tied), and the interval collapses onto a few values:
two pairs gave a zero-width interval and p = 1, which reads as "identical" when nothing was measured. So
`compare` refuses fewer than 10 pairs in one sentence, and the model report states no difference as significant
or not on fewer (`comparable`).
"""

from __future__ import annotations

from analysis.core.errors import UserError

MIN_COMPARE_PAIRS = 10


def comparable(n_pairs: int) -> bool:
    return n_pairs >= MIN_COMPARE_PAIRS


def check_comparable(n_pairs: int, name: str) -> None:
    """One sentence when `n_pairs` pairs of `name` are too few to compare methods on."""
    if not comparable(n_pairs):
        raise UserError(f"Comparing methods needs at least {MIN_COMPARE_PAIRS} pairs, and {name} has {n_pairs}: on "
                        "fewer, the paired bootstrap has too few distinct resamples for an interval or a p-value to "
                        "mean anything (choose more with --sample or --limit).")
