"""Training batches from scored sentence pairs, shared by the contrastive trainers (Causal2Vec, GIRCSE).

Each batch comes from ONE source of the data (STS-B's MSRvid, headlines, ...), so the in-batch negatives are on
the batch's topic and harder than a random mix, and it carries `hard` sentences of that source's pairs scored at
or below `negative_max`: STS-B's natural hard negatives (same topic, judged different).
"""

from __future__ import annotations

import numpy as np
import torch

from analysis.core.errors import UserError


def source_batches(pairs, keep: np.ndarray, negative_max: float, batch_size: int, hard: int, seed: int):
    """(endless seeded stream of (left, right, gold (B,) tensor, hard-negative sentences), pairs in play).

    Args:
        pairs: an `analysis.data.corpora.Pairs` with genres (one source when it has none).
        keep: (n,) bool, the pairs a batch may hold (e.g. gold >= 4 for InfoNCE positives).
    """
    scores = np.asarray(pairs.scores)
    source = np.array(pairs.genres if pairs.genres is not None else ["all"] * len(pairs))
    pools = {g: np.flatnonzero(keep & (source == g)) for g in sorted(set(source))}
    pools = {g: idx for g, idx in pools.items() if len(idx) >= batch_size}
    if not pools:
        raise UserError(f"No source of the training data has {batch_size} usable pairs for one batch: lower "
                        "--batch-size (or the positive threshold).")
    low = {g: sorted({t for j in np.flatnonzero((scores <= negative_max) & (source == g))
                      for t in (pairs.left[j], pairs.right[j])}) for g in pools}
    names = list(pools)
    weights = np.array([len(pools[g]) for g in names], dtype=float)

    def stream():
        rng = np.random.default_rng(seed)
        while True:
            g = names[rng.choice(len(names), p=weights / weights.sum())]
            idx = rng.choice(pools[g], batch_size, replace=False)
            negatives = [low[g][i] for i in rng.permutation(len(low[g]))[:hard]]
            yield ([pairs.left[j] for j in idx], [pairs.right[j] for j in idx],
                   torch.tensor(scores[idx], dtype=torch.float32), negatives)

    return stream(), int(weights.sum())
