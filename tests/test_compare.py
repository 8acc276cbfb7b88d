"""Paired comparisons (issue 22): the vectorised paired bootstrap of Spearman differences (known answers, agreement
with scipy, speed), the one STS scorer, and `python -m analysis compare` on a tiny model."""

import json
import time

import numpy as np
import pytest
from scipy.stats import spearmanr

from analysis.data.corpora import Pairs
from analysis.eval.stats import paired_difference, resample_indices, spearman_replicates
from analysis.eval.sts import score_pairs


def _methods(n=300, seed=0):
    """Gold scores and three methods' similarities: a good one, a noisy one, and a copy of the good one."""
    rng = np.random.default_rng(seed)
    gold = rng.uniform(0, 5, n)
    good = gold + rng.normal(scale=0.5, size=n)
    noisy = gold + rng.normal(scale=4.0, size=n)
    return gold, good, noisy


def test_replicates_are_scipy_spearman_on_the_same_resamples():
    gold, good, noisy = _methods(n=60)
    gold = np.round(gold)  # ties in the gold scores, as in STS-B
    idx = resample_indices(60, 20, seed=1)
    reps = spearman_replicates(np.stack([good, noisy]), gold, idx)
    assert reps.shape == (2, 20)
    for b in (0, 7, 19):
        assert reps[0, b] == pytest.approx(spearmanr(good[idx[b]], gold[idx[b]]).statistic, abs=1e-12)
        assert reps[1, b] == pytest.approx(spearmanr(noisy[idx[b]], gold[idx[b]]).statistic, abs=1e-12)
    flat = spearman_replicates(np.ones(60), gold, idx)  # constant similarities: no ranking
    assert np.isnan(flat).all()


def test_paired_difference_known_answers():
    gold, good, noisy = _methods()
    idx = resample_indices(len(gold), 1000, seed=0)
    reps = spearman_replicates(np.stack([good, noisy, good.copy()]), gold, idx)
    same = paired_difference(reps[0], reps[2], 0.0)
    assert (same.difference, same.ci, same.p, same.n_boot) == (0.0, (0.0, 0.0), 1.0, 1000)
    rho = [spearmanr(s, gold).statistic for s in (good, noisy)]
    better = paired_difference(reps[0], reps[1], rho[0] - rho[1])
    assert better.ci[0] > 0 and better.p < 0.01 and better.ci[0] < better.difference < better.ci[1]
    worse = paired_difference(reps[1], reps[0], rho[1] - rho[0])
    assert worse.ci[1] < 0 and worse.p == better.p
    # Paired is tighter than reading two separate intervals: the shared pairs' difficulty cancels out.
    width = better.ci[1] - better.ci[0]
    separate = np.percentile(reps[0], 97.5) - np.percentile(reps[0], 2.5) + np.percentile(reps[1], 97.5) \
        - np.percentile(reps[1], 2.5)
    assert width < separate


def test_the_paired_bootstrap_takes_seconds():
    """1,000 resamples of 1,000 pairs for 10 methods: the budget the issue sets (seconds, not minutes)."""
    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 1000)
    sims = gold + rng.normal(scale=2.0, size=(10, 1000))
    start = time.perf_counter()
    reps = spearman_replicates(sims, gold, resample_indices(1000, 1000))
    assert reps.shape == (10, 1000) and time.perf_counter() - start < 30  # ~1-2 s here; generous under load


def test_score_pairs_encodes_each_sentence_once_and_returns_cosines():
    pairs = Pairs("p", ["a", "a", "b", "c"], ["b", "c", "c", "a"], np.array([4.0, 1.0, 2.0, 1.5]))
    table = {"a": [1.0, 0.0], "b": [0.9, 0.1], "c": [0.0, 1.0]}
    calls = []

    def encode(texts):
        calls.append(list(texts))
        return np.array([table[t] for t in texts])

    s = score_pairs(pairs, encode, n_boot=200, seed=0)
    assert calls == [["a", "b", "c"]] and (s.n_pairs, s.n_texts) == (4, 3)
    unit = {k: np.array(v) / np.linalg.norm(v) for k, v in table.items()}
    want = [unit[x] @ unit[y] for x, y in zip(pairs.left, pairs.right)]
    np.testing.assert_allclose(s.cosines, want)
    assert s.spearman == pytest.approx(spearmanr(want, pairs.scores).statistic)
    assert np.isfinite(s.ci).all() and s.ci[0] <= s.ci[1]
    assert np.isnan(score_pairs(pairs, encode, n_boot=0).ci).all()
