"""Paired comparisons (issue 22): the vectorised paired bootstrap of Spearman differences (known answers, agreement
with scipy, speed), the one STS scorer, and `python -m analysis compare` on a tiny model."""

import time

import numpy as np
import pytest
from scipy.stats import spearmanr

from analysis.core.errors import UserError
from analysis.data.corpora import Pairs
from analysis.eval.stats import paired_difference, paired_mean_difference, resample_indices, spearman_replicates
from analysis.eval.sts import compare_cosines, score_pairs
from tests.conftest import run_cli


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



def test_paired_mean_difference_of_exact_matches():
    """Exact-match rates of two systems on the same questions: the paired interval of their difference."""
    a = np.array([1, 1, 1, 0, 1, 1, 1, 1, 0, 1] * 10)
    same = paired_mean_difference(a, a)
    assert same.difference == 0 and same.p == 1.0 and same.ci == (0.0, 0.0)
    worse = np.where(np.arange(100) % 5 == 0, 0, a)  # misses 20 items `a` gets, on the same items
    d = paired_mean_difference(a, worse)
    assert abs(d.difference - (a.mean() - worse.mean())) < 1e-12 and d.ci[0] > 0 and d.p < 0.05
    with pytest.raises(ValueError, match="one length"):
        paired_mean_difference(a, a[:5])

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


def test_compare_cosines_every_pair_or_versus_the_best():
    gold, good, noisy = _methods(n=200)
    table = compare_cosines({"good": good, "noisy": noisy, "copy": good.copy()}, gold, n_boot=300, seed=1)
    assert [m["method"] for m in table["methods"]] == ["good", "noisy", "copy"]
    assert [(d["a"], d["b"]) for d in table["differences"]] == [("good", "noisy"), ("good", "copy"),
                                                                ("noisy", "copy")]
    first, same = table["differences"][0], table["differences"][1]
    assert first["ci"][0] > 0 and first["p"] < 0.01 and (same["difference"], same["p"]) == (0.0, 1.0)
    assert table["methods"][0]["ci"] == table["methods"][2]["ci"]  # the same resamples for every method
    versus = compare_cosines({"good": good, "noisy": noisy}, gold, n_boot=0, versus="noisy")
    assert [(d["a"], d["b"]) for d in versus["differences"]] == [("noisy", "good")]
    assert versus["differences"][0]["difference"] < 0 and np.isnan(versus["differences"][0]["p"])
    with pytest.raises(UserError, match="not among the compared methods"):
        compare_cosines({"good": good}, gold, versus="best")


# ---- python -m analysis compare -------------------------------------------------------------------------------
@pytest.fixture
def sts_file(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    words = ["cat", "dog", "sun", "rain", "car", "tree", "bird", "fish", "road", "book"]
    rows = []
    for i in range(30):
        a, b = rng.choice(words, 3), rng.choice(words, 3)
        genre = ("main-captions\tMSRvid", "main-news\theadlines")[i // 20]  # sorted by genre, like STS-B
        rows.append(f"{genre}\t2012\t{i:04d}\t{rng.uniform(0, 5):.2f}\tA {' '.join(a)}.\tThe {' '.join(b)}.\n")
    path = tmp_path / "pairs.csv"
    path.write_text("".join(rows), encoding="utf-8")
    return path




def test_compare_command_paired_table(tiny_model_folder, sts_file, capsys):
    common = ["--model", tiny_model_folder, "--data", sts_file, "--n-boot", "200"]
    code, res, err = run_cli(capsys, "compare", "--methods", "mean,last,deep=last,twin=mean", "--param", "deep.layer=2",
                          *common, "--sample", "15", "--seed", "3")
    assert code == 0, err
    assert res["sample"] == {"how": "stratified by genre", "n": 15, "of": 30, "seed": 3}
    assert res["genres"] == {"main-captions/MSRvid": 10, "main-news/headlines": 5} and res["n_pairs"] == 15
    rows = {m["method"]: m for m in res["methods"]}
    assert rows["deep"]["name"] == "last" and rows["deep"]["params"] == {"layer": 2}
    assert all(m["ci"][0] <= m["ci"][1] for m in res["methods"])
    assert len(res["differences"]) == 6 and "same resampled pairs" in res["bootstrap"]
    twin = next(d for d in res["differences"] if (d["a"], d["b"]) == ("mean", "twin"))
    assert twin["difference"] == 0 and twin["p"] == 1 and twin["ci"] == [0, 0]
    code, again, _ = run_cli(capsys, "compare", "--methods", "mean,last,deep=last,twin=mean", "--param",
                          "deep.layer=2", *common, "--sample", "15", "--seed", "3")
    assert again["differences"] == res["differences"] and all(m["cached"] for m in again["methods"])


@pytest.mark.parametrize("argv, message", [
    (["--methods", "mean"], "at least two methods"),
    (["--methods", "mean,mean"], "names 'mean' twice"),
    (["--methods", "mean,last", "--param", "other.layer=2"], "'other' is not among the chosen methods"),
    (["--methods", "mean,bad label=last"], "is not a label"),
    (["--methods", "mean,last", "--n-boot", "-1"], "--n-boot must be 0 or more"),
])
def test_compare_command_errors_are_one_sentence(argv, message, sts_file, capsys):
    code, _, err = run_cli(capsys, "compare", *argv, "--data", sts_file, "--model", "no-such-org/not-loaded")
    assert code == 2 and err.count("\n") == 1 and message in err
