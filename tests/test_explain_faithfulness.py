"""The faithfulness experiment (issue 50) on a tiny random Llama with pairs made in the test: a typed record with the
gains, their intervals and a verdict per method, the curves as series, each pair kept through the `Compute` door's
`remember` (a second run over the same store computes nothing), the command derived from the settings, the README's
headline line; and the summary's statistics on known numbers."""

import numpy as np
import pytest

from analysis.core.errors import UserError
from analysis.data.corpora import Pairs
from analysis.experiments import experiment, run
from analysis.experiments.machinery import heldout_sts, records
from analysis.experiments.machinery.records import Sample
from analysis.inspect import faithfulness as F
from analysis.inspect.explain_settings import FRACTIONS, GAINS
from cache.cached import Cached
from cache.store import Store

PAIRS = Pairs("tiny pairs", ["A cat sat on the mat.", "The dog ran in the park.", "A red car is fast.",
                             "Two birds sang."],
              ["A kitten lay on a rug.", "A dog runs outside.", "The car is red.", "The sky is blue."],
              [4.0, 3.5, 3.0, 0.5], ["main-news/x", "main-news/x", "main-captions/y", "main-captions/y"])
MODULE = experiment("explain_faithfulness")


@pytest.fixture
def tiny_pairs(monkeypatch):
    monkeypatch.setattr(heldout_sts, "report_pairs", lambda n, seed=0, pool=None: (
        PAIRS, Sample(n=4, how="stratified by genre", of=1200, seed=seed, strata={"news": 2, "captions": 2})))


def kept(root) -> int:
    """Values `remember` keeps in the store at `root` (cache.keys.VALUES)."""
    return sum(1 for _ in (root / "values").glob("*/*/meta.json"))


def test_the_record_on_a_tiny_model(tiny_llama, tiny_pairs, tmp_path, monkeypatch):
    cfg = MODULE.Config(model="tiny", methods=("last", "prompteol", "soft_tokens", "causal2vec", "sentence_encoder"),
                        sample=4, steps=9, n_boot=200)
    store = tmp_path / "store"
    compute = Cached(Store(store), backbones=lambda name: tiny_llama)
    rec = run("explain_faithfulness", cfg, compute=compute)
    assert rec.command == ("python -m analysis measure explain_faithfulness --model tiny --methods last,prompteol,"
                           "soft_tokens,causal2vec,sentence_encoder --sample 4 --n-boot 200")
    assert rec.id == "explain_faithfulness_tiny" and rec.models[0].identity == tiny_llama.identity
    labels = rec.table("gains").column("method")
    assert labels == ["last", "prompteol", "soft_tokens (frozen: no adapter shipped)",
                      "causal2vec (untrained bridge: none shipped)", "sentence_encoder"]
    for row in rec.table("gains").dicts():
        lo, hi = row["deletion vs random 95% CI"]
        assert lo <= row["deletion vs random"] <= hi and 0 <= row["deletion vs random: pairs won"] <= 1
    assert len(rec.findings) == 5 and all("than random order" in f for f in rec.findings)
    assert {s.name for s in rec.series} == {"deletion", "insertion"} and len(rec.series[0].xs) == len(FRACTIONS)
    assert kept(store) == 5 * 4  # one kept value per method and pair
    records.write(rec, tmp_path)
    assert records.read(rec.id, tmp_path).table("gains").rows == rec.table("gains").rows
    line = MODULE.headline([rec])
    assert line.startswith("**Is the pair attribution faithful?**") and rec.command in line
    assert line.count("\n") == 2  # one paragraph: the README keeps within its line limit
    monkeypatch.setattr(F, "pair_record", lambda *a, **k: pytest.fail("a kept pair was computed again"))
    again = run("explain_faithfulness", cfg, compute=Cached(Store(store), backbones=lambda name: tiny_llama))
    assert again.table("gains").rows == rec.table("gains").rows


def test_the_summary_says_no_better_when_the_interval_holds_zero():
    rng = np.random.default_rng(0)
    recs = [{"gains": {g: float(v) for g in GAINS}, "span": 1.0, "gap": 0.01, "seconds": 1.0}
            for v in rng.normal(0.0, 1.0, 40)]
    s = MODULE.summarise(recs, n_boot=500)
    assert s["deletion_vs_random"]["verdict"] == "no better"
    assert s["deletion_vs_random"]["ci"][0] < 0 < s["deletion_vs_random"]["ci"][1]
    better = [{**r, "gains": {g: v + 5 for g, v in r["gains"].items()}} for r in recs]
    assert MODULE.summarise(better, n_boot=500)["insertion_vs_attention"]["verdict"] == "better"
    assert MODULE.summarise(better, n_boot=500)["deletion_vs_random"]["relative"] == pytest.approx(
        np.mean([r["gains"]["deletion_vs_random"] for r in better]))


def test_a_bad_setting_is_refused_before_any_work():
    with pytest.raises(UserError):
        run("explain_faithfulness", MODULE.Config(steps=1000))
