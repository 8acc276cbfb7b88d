"""Resampling statistics shared by every evaluation: bootstrap intervals of means and of scores, and the paired
bootstrap that compares methods scored on the same pairs.

    idx = resample_indices(len(gold), 1000, seed=0)            # (B, n): the same resampled pairs for every method
    reps = spearman_replicates(np.stack([sims_a, sims_b]), gold, idx)   # (2, B)
    d = paired_difference(reps[0], reps[1], rho_a - rho_b)      # Paired(difference, ci, p, n_boot)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def percentile_ci(replicates, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (NaN replicates, e.g. degenerate resamples, dropped)."""
    r = np.asarray(replicates, dtype=np.float64)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return (float("nan"), float("nan"))
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(r, [tail, 100 - tail])
    return float(lo), float(hi)


def bootstrap_mean_ci(values, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the mean of `values` resampled with replacement."""
    v = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(v), size=(n_boot, len(v)))  # (n_boot, n)
    return percentile_ci(v[idx].mean(axis=1), level)


# ---- paired comparisons -----------------------------------------------------------------------------------------
# Our own vectorised bootstrap rather than scipy.stats.bootstrap(paired=True): scipy resamples anew for each
# statistic it is given, so comparing m methods would rank the data once per *pair* of methods (m(m-1)/2 runs) and
# the pairs' intervals would come from different resamples than the methods' own; it also gives no p-value. Here one
# (B, n) index matrix is drawn, each method's Spearman is computed on every resample once (ranks along rows, then a
# row-wise Pearson: 1,000 resamples of 1,000 pairs take ~0.1 s per method), and every difference is the difference
# of two replicate vectors: the same resampled pairs for both methods, as a paired test needs.
CHUNK = 250  # resamples ranked at a time: bounds memory to ~CHUNK x n x 8 bytes per array


def resample_indices(n: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """(n_boot, n) indices of pairs drawn with replacement: one row per bootstrap resample, shared by all methods."""
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def spearman_replicates(sims, gold, idx) -> np.ndarray:
    """Spearman's rho of each method's similarities with the gold scores on every resample: (m, B).

    Args:
        sims: (m, n) or (n,) similarities of m methods on the same n pairs.
        gold: (n,) gold scores.
        idx: (B, n) resample indices (`resample_indices`).

    Average ranks for ties (resampling repeats pairs), as scipy's spearmanr; NaN where a resample's similarities or
    gold scores are all equal.
    """
    from scipy.stats import rankdata  # lazy: keeps scipy off the pages' and the command line's start

    sims = np.atleast_2d(np.asarray(sims, dtype=np.float64))  # (m, n)
    gold = np.asarray(gold, dtype=np.float64)  # (n,)
    out = np.empty((len(sims), len(idx)))
    for start in range(0, len(idx), CHUNK):
        rows = idx[start:start + CHUNK]  # (b, n)
        g = _centred_unit(rankdata(gold[rows], axis=1))  # (b, n)
        for j, s in enumerate(sims):
            out[j, start:start + len(rows)] = np.einsum("bn,bn->b", _centred_unit(rankdata(s[rows], axis=1)), g)
    return out


def _centred_unit(ranks: np.ndarray) -> np.ndarray:
    """Rows centred and scaled to unit norm, so a row-wise dot product is Pearson's r (NaN for constant rows)."""
    c = ranks - ranks.mean(axis=1, keepdims=True)
    norm = np.linalg.norm(c, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return c / norm


@dataclass(frozen=True)
class Paired:
    difference: float  # score of A minus score of B on the full sample
    ci: tuple[float, float]  # percentile interval of the paired replicates' differences
    p: float  # two-sided bootstrap p-value of "no difference"
    n_boot: int  # replicates used (degenerate resamples dropped)


def paired_difference(reps_a, reps_b, difference: float, level: float = 0.95) -> Paired:
    """The difference of two methods from their replicates on the same resamples (`spearman_replicates` rows).

    p-value: twice the smaller share of replicate differences on either side of 0, each share counted as
    (k + 1) / (B + 1) so no finite bootstrap claims p = 0, capped at 1. It inverts the percentile interval (p < 1 -
    level exactly when the interval excludes 0, up to that +1); identical methods give difference 0 and p = 1.
    """
    d = np.asarray(reps_a, dtype=np.float64) - np.asarray(reps_b, dtype=np.float64)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return Paired(float(difference), (float("nan"), float("nan")), float("nan"), 0)
    below, above = (np.sum(d <= 0) + 1) / (d.size + 1), (np.sum(d >= 0) + 1) / (d.size + 1)
    return Paired(float(difference), percentile_ci(d, level), float(min(1.0, 2 * min(below, above))), int(d.size))


def paired_mean_difference(a, b, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> Paired:
    """Mean of `a` minus mean of `b`, two per-item scores of the same items (e.g. exact match 0/1 of two systems
    on the same questions), with the paired bootstrap: both means on the same resampled items."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"two non-empty per-item score vectors of one length are needed, not {a.shape} and {b.shape}")
    idx = resample_indices(a.size, n_boot, seed)  # (B, n)
    return paired_difference(a[idx].mean(axis=1), b[idx].mean(axis=1), float(a.mean() - b.mean()), level)


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval for k successes in n trials (stays inside [0, 1] and is honest at 0% and 100%,
    where the normal approximation collapses to a point)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    return (0.0 if k == 0 else float(lo), 1.0 if k == n else float(hi))  # exact ends, not 0.9999999999999999
