"""Resampling statistics shared by every evaluation: bootstrap intervals of means and of scores."""

from __future__ import annotations

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
