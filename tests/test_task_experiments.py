"""The task-family and long-document experiments (issue 34) on tiny models with data made in the test: typed records
with their samples, paired differences to each family's best decoder method, MiniLM alone as the reference row,
findings that say where the rankings differ from STS's, and nDCG@1 per length to the model's limit; the commands and
their help come from the settings."""

import numpy as np
import pytest

from analysis.data.corpora import Pairs, Texts
from analysis.data.files import Beir
from analysis.eval.classification import held_out
from analysis.eval.tasks import Task
from analysis.experiments import experiment, run
from analysis.experiments.machinery import records
from analysis.models.tiny import tiny_backbone

WORDS = "cat dog sat ran the a on mat big small red blue house car tree bird sang sky".split()


def tiny_compute(backbone):
    from analysis.compute.direct import Direct

    return Direct(backbones=lambda name: backbone)


@pytest.fixture(scope="module")
def long_llama():
    return tiny_backbone("llama", n_layers=4, max_length=1100)


@pytest.fixture
def tiny_data(monkeypatch):
    """SciFact, Banking77 and STS-B stand-ins: the experiment's loaders return them."""
    from analysis.experiments import task_families
    from analysis.experiments.machinery import heldout_sts
    from analysis.experiments.machinery.records import Sample

    rng = np.random.default_rng(0)
    docs = {f"d{i}": " ".join(rng.choice(WORDS, 8)) for i in range(40)}
    beir = Beir("tiny", docs, {f"q{i}": " ".join(docs[f"d{i}"].split()[:3]) for i in range(15)},
                {f"q{i}": {f"d{i}": 1} for i in range(15)})
    texts = [f"{WORDS[i % 5]} {WORDS[5 + i % 5]} " + " ".join(rng.choice(WORDS, 3)) for i in range(150)]
    labelled = Texts("intents", texts, [f"intent {i % 5}" for i in range(150)])
    tasks = {"retrieval": (Task("tiny retrieval", "retrieval", beir), "15 claims, 40 abstracts"),
             "classification": (Task("tiny intents", "classification", held_out(labelled)), "60 evaluation texts"),
             "clustering": (Task("tiny intents, clustering", "clustering", labelled), "150 texts")}
    pairs = Pairs("tiny pairs", [" ".join(rng.choice(WORDS, 5)) for _ in range(20)],
                  [" ".join(rng.choice(WORDS, 5)) for _ in range(20)], rng.uniform(0, 5, 20),
                  ["main-news/x"] * 10 + ["main-captions/y"] * 10)
    monkeypatch.setattr(task_families, "family_tasks", lambda config: tasks)
    monkeypatch.setattr(heldout_sts, "report_pairs", lambda n, seed=0, pool=None: (
        pairs, Sample(n=20, how="all of it", of=20)))
    return tasks


def test_task_families_record(tiny_llama, tiny_data):
    module = experiment("task_families")
    cfg = module.Config(model="tiny", methods=("last", "mean", "kv_embedding", "soft_tokens", "sentence_encoder"),
                        queries=15, n_boot=100)
    rec = run("task_families", cfg, compute=tiny_compute(tiny_llama))
    records.validate(rec)
    assert rec.command == ("python -m analysis measure task_families --model tiny --methods "
                           "last,mean,kv_embedding,soft_tokens,sentence_encoder --queries 15 --n-boot 100")
    assert rec.id.startswith("task_families_") and rec.models[0].identity == tiny_llama.identity
    assert rec.sample.strata == {"retrieval": 15, "classification": 60, "clustering": 10, "STS": 20}
    scores = rec.table("scores")
    frozen = "soft_tokens (frozen: no adapter shipped for tiny)"  # no GIRCSE adapter: never passed off as GIRCSE
    assert scores.column("method") == ["last", "mean", "kv_embedding", frozen,
                                       "sentence_encoder (reference: MiniLM alone)"]
    for family, metric in (("retrieval", "nDCG@10"), ("classification", "accuracy"), ("clustering", "V-measure"),
                           ("STS", "Spearman")):
        verdicts = scores.column(f"{family} vs best decoder (paired)")
        assert verdicts.count("best decoder method") == 1 and verdicts[-1] != "best decoder method"
        values, intervals = scores.column(f"{family} {metric}"), scores.column(f"{family} 95% CI")
        assert all(ci[0] - 1e-4 <= v <= ci[1] + 1e-4 for v, ci in zip(values, intervals))
    ranks = rec.table("ranks")
    assert sorted(ranks.column("method")) == ["kv_embedding", "last", "mean", frozen]  # decoder methods only
    assert rec.findings[0].startswith(f"{tiny_llama.facts.title or tiny_llama.facts.name}: on STS the best")
    assert sum("MiniLM alone is" in f for f in rec.findings) == 4
    assert all(("as on STS" in f) or ("not STS's best" in f) for f in rec.findings[1:4])
    assert set(rec.extra["planned_tokens"]) == {"retrieval", "classification", "clustering", "STS"}
    assert rec.table("samples").column("units") == [15, 60, 10, 20]


def test_longdoc_record_reaches_the_models_limit(long_llama):
    module = experiment("longdoc")
    cfg = module.Config(model="tiny", methods=("last", "mean", "kv_embedding"), per_length=4, n_boot=100)
    rec = run("longdoc", cfg, compute=tiny_compute(long_llama))
    records.validate(rec)
    assert rec.command == ("python -m analysis measure longdoc --model tiny --methods last,mean,kv_embedding "
                           "--per-length 4 --n-boot 100")
    curve = rec.series_named("curve_passkey")
    assert list(curve.xs) == [256, 512, 1024] and set(curve.lines) == {"last", "mean", "kv_embedding"}
    assert all(0 <= y <= 1 for ys in curve.lines.values() for y in ys)
    assert all(ci[0] <= y <= ci[1] for k in curve.lines for y, ci in zip(curve.lines[k], curve.intervals[k]))
    table = rec.table("ndcg_passkey")
    assert table.columns[1:4] == ("256", "512", "1,024")
    longest = rec.table("longest_passkey")
    assert longest.column("vs best (paired)").count("best at this length") == 1
    assert rec.sample.n == 4 * 3 and "up to 1,100" in rec.sample.how
    assert rec.findings[0].startswith(f"{long_llama.facts.title or long_llama.facts.name}, passkey: at 1,024 tokens")
    capped = run("longdoc", module.Config(model="tiny", methods=("last",), per_length=2, max_length=512, n_boot=0),
                 compute=tiny_compute(long_llama))
    assert list(capped.series_named("curve_passkey").xs) == [256, 512]


def test_longdoc_names_the_frozen_soft_tokens_so(long_llama):
    """The record runs soft tokens on the frozen model (adapter=none): its tables never call them plain soft_tokens,
    which reads as GIRCSE (#48)."""
    cfg = experiment("longdoc").Config(model="tiny", methods=("last", "soft_tokens"), per_length=2, max_length=256,
                                       n_boot=0)
    rec = run("longdoc", cfg, compute=tiny_compute(long_llama))
    assert rec.table("ndcg_passkey").column("method") == ["last", "soft_tokens (frozen)"]


def test_longdoc_refuses_an_unknown_kind_in_one_sentence(long_llama):
    from analysis.core.errors import UserError

    with pytest.raises(UserError, match="is not a long-document task"):
        run("longdoc", experiment("longdoc").Config(kinds=("poems",)), compute=tiny_compute(long_llama))


@pytest.mark.parametrize("name", ["task_families", "longdoc"])
def test_measure_help_works(name, capsys):
    from cli import main

    with pytest.raises(SystemExit) as done:
        main(["measure", name, "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "--model" in out and "--n-boot" in out
