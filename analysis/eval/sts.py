"""Semantic textual similarity: how well a method's cosine similarities rank sentence pairs like people do.

Each unique sentence is encoded once (STS-B repeats many sentences), every pair is scored by the cosine of its
two embeddings, and the score is Spearman's rank correlation with the gold ratings (scipy's `spearmanr`).

    from analysis import load_backbone, get_method
    from analysis.data.datasets import stsb_pairs
    r = sts_spearman(load_backbone(), get_method("prompteol"), stsb_pairs("dev"))
    r["spearman"], r["seconds"]

`encode` lets a caller put a cache (or anything else) between the method and the model:
    sts_spearman(bb, m, pairs, encode=lambda texts, progress: my_cached_encode(m, texts, progress))
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable

import numpy as np

from analysis.core.errors import UserError
from analysis.core.vectors import l2_normalize

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
    from scipy.stats import spearmanr

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


def sts_spearman(
    backbone,
    method,
    pairs,
    *,
    encode: Encoder | None = None,
    batch_size: int = 16,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Spearman correlation between a method's cosine similarities and the gold scores of `pairs`.

    Args:
        backbone: a loaded `Backbone`.
        method: a configured `EmbeddingMethod` (anything with `name`, `params`, `encode`).
        pairs: an `analysis.data.corpora.Pairs` (at least 2 pairs whose gold scores are not all equal).
        encode: `encode(texts, progress) -> (n, d)` used instead of `method.encode(backbone, texts, ...)`,
            e.g. to go through the compute cache.
        batch_size: texts per forward pass when `encode` is not given.
        progress: called as progress(done, total) while encoding.

    Returns:
        {"method", "params" (dict), "model" (backbone identity), "n_pairs", "n_texts", "spearman"
        (NaN if every similarity is equal), "seconds" (wall time of the encoding)}.

    Raises:
        UserError: too few pairs, or gold scores that are all equal (no ranking to compare with).
    """
    check_pairs(pairs)
    gold = np.asarray(pairs.scores, dtype=np.float64)  # (n_pairs,)
    if encode is None:
        def encode(texts, progress):
            return method.encode(backbone, texts, batch_size=batch_size, progress=progress)

    texts, left, right = pair_index(pairs)
    start = time.perf_counter()
    emb = np.asarray(encode(texts, progress))  # (n_texts, d)
    seconds = time.perf_counter() - start
    if emb.ndim != 2 or emb.shape[0] != len(texts):
        raise RuntimeError(f"{method.name}: expected ({len(texts)}, d) embeddings, got shape {emb.shape}")
    return {
        "method": method.name,
        "params": dataclasses.asdict(method.params),
        "model": backbone.identity,
        "n_pairs": len(pairs),
        "n_texts": len(texts),
        "spearman": spearman(pair_cosines(emb, left, right), gold),
        "seconds": seconds,
    }
