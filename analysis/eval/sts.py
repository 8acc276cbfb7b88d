"""Semantic textual similarity: how well a method's cosine similarities rank sentence pairs like people do.

`score_pairs` is the one scorer every caller uses (the commands, the trainers, soft tokens' scaling curve, the
sweep's references): each unique sentence is encoded once (STS-B repeats many sentences), every pair is scored
by the cosine of its two embeddings, the score is Spearman's rank correlation with the gold ratings (scipy's
`spearmanr`) with a percentile bootstrap interval over pairs, and the per-pair cosines come back too, so a paired
comparison of two methods (`analysis.eval.stats.paired_difference`) reuses them without encoding again.

    from analysis.data.datasets import stsb_pairs
    s = score_pairs(stsb_pairs("dev"), lambda texts: method.encode(backbone, texts))   # StsScore
    s.spearman, s.ci, s.cosines                       # rho, (lo, hi), (n_pairs,) in the pairs' order

`sts_spearman(backbone, method, pairs, encode=...)` is the same for an `EmbeddingMethod`, as a JSON-able dict;
`encode` lets a caller put a cache (or anything else) between the method and the model:
    sts_spearman(bb, m, pairs, encode=lambda texts, progress: my_cached_encode(m, texts, progress))
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.stats import spearmanr

from analysis.core.errors import UserError
from analysis.core.vectors import l2_normalize
from analysis.eval.stats import paired_difference, percentile_ci, resample_indices, spearman_replicates

Encoder = Callable[[list[str], Callable[[int, int], None] | None], np.ndarray]


def pair_index(pairs) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every sentence once (first-appearance order) and, per pair, the rows of its left and right sentence."""
    texts = pairs.unique_texts()
    row = {t: i for i, t in enumerate(texts)}
    left = np.array([row[t] for t in pairs.left], dtype=np.int64)  # (n_pairs,)
    right = np.array([row[t] for t in pairs.right], dtype=np.int64)  # (n_pairs,)
    return texts, left, right


def pair_cosines(emb: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Cosine of emb[left[i]] and emb[right[i]]: (n_pairs,). Normalises here, so raw readouts work too."""
    emb = np.asarray(emb, dtype=np.float64)  # (n_texts, d); float64 so ties are not made up by rounding
    unit = l2_normalize(emb, axis=1)
    return np.einsum("nd,nd->n", unit[left], unit[right])


def spearman(sims: np.ndarray, gold: np.ndarray) -> float:
    """Spearman's rho; NaN when the similarities are all equal (e.g. a readout that ignores the text)."""
    sims = np.asarray(sims, dtype=np.float64)
    if np.ptp(sims) == 0:
        return math.nan  # scipy would warn and return NaN too; say it without the warning
    return float(spearmanr(sims, gold).statistic)


def check_pairs(pairs) -> None:
    """Raise UserError unless `pairs` can be ranked: at least 2 pairs whose gold scores are not all equal."""
    n = len(pairs)
    if n < 2:
        raise UserError(f"A rank correlation needs at least 2 pairs; {pairs.name} has {n}.")
    if np.ptp(np.asarray(pairs.scores, dtype=np.float64)) == 0:
        raise UserError(f"All {n} gold scores in {pairs.name} are equal, so there is no ranking to compare with.")


@dataclass(frozen=True)
class StsScore:
    spearman: float  # NaN when every similarity is equal
    ci: tuple[float, float]  # percentile bootstrap interval over pairs; NaN with n_boot=0
    cosines: np.ndarray  # (n_pairs,) float64, in the pairs' order: what a paired comparison resamples
    n_pairs: int
    n_texts: int
    seconds: float  # wall time of the one encode call


def score_cosines(cosines, gold, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                  n_texts: int = 0, seconds: float = 0.0) -> StsScore:
    """Spearman of per-pair similarities with the gold scores and its interval (resamples: `resample_indices(n,
    n_boot, seed)`, so two scores with the same seed and pairs are resampled alike)."""
    cosines = np.asarray(cosines, dtype=np.float64)  # (n_pairs,)
    gold = np.asarray(gold, dtype=np.float64)  # (n_pairs,)
    ci = (math.nan, math.nan)
    if n_boot:
        ci = percentile_ci(spearman_replicates(cosines, gold, resample_indices(len(gold), n_boot, seed))[0], level)
    return StsScore(spearman(cosines, gold), ci, cosines, len(gold), n_texts, seconds)


def score_pairs(pairs, encode: Callable[[list[str]], np.ndarray], *, n_boot: int = 1000, seed: int = 0,
                level: float = 0.95) -> StsScore:
    """Score an encoder on STS pairs: the one STS scorer.

    Args:
        pairs: an `analysis.data.corpora.Pairs` (at least 2 pairs whose gold scores are not all equal).
        encode: `encode(texts) -> (len(texts), d)` array-like (a method through the cache, a model being trained
            under torch.no_grad(), ...); called once, with every distinct sentence once.
        n_boot: bootstrap resamples of the pairs for the interval (0: none); seed: their seed; level: its level.

    Returns:
        StsScore(spearman, ci, cosines (n_pairs,), n_pairs, n_texts, seconds).

    Raises:
        UserError: too few pairs, or gold scores that are all equal (no ranking to compare with).
    """
    check_pairs(pairs)
    texts, left, right = pair_index(pairs)
    start = time.perf_counter()
    emb = np.asarray(encode(texts))  # (n_texts, d)
    seconds = time.perf_counter() - start
    if emb.ndim != 2 or emb.shape[0] != len(texts):
        raise RuntimeError(f"expected ({len(texts)}, d) embeddings, got shape {emb.shape}")
    return score_cosines(pair_cosines(emb, left, right), pairs.scores, n_boot=n_boot, seed=seed, level=level,
                         n_texts=len(texts), seconds=seconds)


def sts_spearman(
    backbone,
    method,
    pairs,
    *,
    encode: Encoder | None = None,
    batch_size: int = 16,
    progress: Callable[[int, int], None] | None = None,
    n_boot: int = 0,
    seed: int = 0,
) -> dict:
    """`score_pairs` for an `EmbeddingMethod`, as a JSON-able dict.

    Args:
        backbone: a loaded `Backbone`.
        method: a configured `EmbeddingMethod` (anything with `name`, `params`, `encode`).
        pairs: an `analysis.data.corpora.Pairs` (at least 2 pairs whose gold scores are not all equal).
        encode: `encode(texts, progress) -> (n, d)` used instead of `method.encode(backbone, texts, ...)`,
            e.g. to go through the compute cache.
        batch_size: texts per forward pass when `encode` is not given.
        progress: called as progress(done, total) while encoding.
        n_boot, seed: bootstrap resamples for the interval (default 0: none, for sweeps that only rank) and seed.

    Returns:
        {"method", "params" (dict), "model" (backbone identity), "n_pairs", "n_texts", "spearman"
        (NaN if every similarity is equal), "ci" ([lo, hi], NaN without resamples), "seconds" (encoding)}.

    Raises:
        UserError: too few pairs, or gold scores that are all equal (no ranking to compare with).
    """
    if encode is None:
        def encode(texts, progress):
            return method.encode(backbone, texts, batch_size=batch_size, progress=progress)

    try:
        s = score_pairs(pairs, lambda texts: encode(texts, progress), n_boot=n_boot, seed=seed)
    except RuntimeError as err:
        raise RuntimeError(f"{method.name}: {err}") from None
    return {
        "method": method.name,
        "params": dataclasses.asdict(method.params),
        "model": backbone.identity,
        "n_pairs": s.n_pairs,
        "n_texts": s.n_texts,
        "spearman": s.spearman,
        "ci": list(s.ci),
        "seconds": s.seconds,
    }


def compare_cosines(cosines: dict, gold, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                    versus: str | None = None) -> dict:
    """Methods scored on the same pairs, compared with a paired bootstrap (`analysis.eval.stats`).

    Args:
        cosines: {label: (n_pairs,) per-pair similarities} (`StsScore.cosines`), every method on the same pairs.
        gold: (n_pairs,) gold scores.
        n_boot, seed, level: the resamples (one (n_boot, n_pairs) matrix shared by every method) and the level.
        versus: a label to compare every other method with (e.g. the best); None: every pair (a before b in order).

    Returns:
        {"methods": [{"method", "spearman", "ci"}], "differences": [{"a", "b", "difference" (a minus b), "ci",
        "p"}], "n_pairs", "n_boot", "seed", "bootstrap" (what was resampled and how p is read)}.
    """
    labels = list(cosines)
    if versus is not None and versus not in cosines:
        raise UserError(f"{versus!r} is not among the compared methods {labels}.")
    gold = np.asarray(gold, dtype=np.float64)
    sims = np.stack([np.asarray(cosines[k], dtype=np.float64) for k in labels])  # (m, n_pairs)
    rho = [spearman(s, gold) for s in sims]
    reps = spearman_replicates(sims, gold, resample_indices(len(gold), n_boot, seed)) if n_boot else None  # (m, B)
    nan = (math.nan, math.nan)
    methods = [{"method": k, "spearman": rho[i], "ci": percentile_ci(reps[i], level) if n_boot else nan}
               for i, k in enumerate(labels)]
    pairs = [(versus, k) for k in labels if k != versus] if versus is not None else \
        [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:]]
    differences = []
    for a, b in pairs:
        i, j = labels.index(a), labels.index(b)
        d = paired_difference(reps[i], reps[j], rho[i] - rho[j], level) if n_boot else None
        differences.append({"a": a, "b": b, "difference": rho[i] - rho[j], "ci": d.ci if d else nan,
                            "p": d.p if d else math.nan})
    return {"methods": methods, "differences": differences, "n_pairs": len(gold), "n_boot": n_boot, "seed": seed,
            "bootstrap": f"paired percentile bootstrap over pairs ({n_boot} resamples, seed {seed}): the same "
                         "resampled pairs for every method; p = two-sided bootstrap p-value of no difference"}
