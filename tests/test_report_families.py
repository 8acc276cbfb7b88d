"""The model report per task family (issue 34): each family's sample scored for every method with a paired difference
to the family's best, unit by unit under the clock (a budget that runs out leaves the weakest methods out, each named),
a family without data named with how to get it (the report stays complete), and the recommendation per family and
overall saying where the families disagree (known answers on hand-made sections). Samples made in the test."""

import json

import numpy as np
import pytest

from analysis.compute.direct import Direct
from analysis.core.errors import UserError
from analysis.data.corpora import Pairs, Texts
from analysis.data.files import Beir
from analysis.data import longdoc
from analysis.eval.classification import held_out
from analysis.eval.tasks import Task
from analysis.models.tiny import tiny_backbone
from analysis.report import build as report_build
from analysis.report import families

WORDS = "cat dog sat ran the a on mat big small red blue house car tree bird sang sky".split()


@pytest.fixture(scope="module")
def backbone():
    return tiny_backbone("llama", n_layers=4, max_length=600)


@pytest.fixture(scope="module")
def pairs():
    rng = np.random.default_rng(0)
    return Pairs("tiny pairs", [" ".join(rng.choice(WORDS, 5)) for _ in range(14)],
                 [" ".join(rng.choice(WORDS, 5)) for _ in range(14)], rng.uniform(0, 5, 14))


def samples(backbone) -> dict:
    """A tiny sample per family, standing in for SciFact and Banking77."""
    rng = np.random.default_rng(1)
    docs = {f"d{i}": " ".join(rng.choice(WORDS, 8)) for i in range(30)}
    queries = {f"q{i}": " ".join(docs[f"d{i}"].split()[:3]) for i in range(12)}
    texts = [f"{WORDS[i % 4]} {WORDS[4 + i % 4]} " + " ".join(rng.choice(WORDS, 3)) for i in range(120)]
    labelled = Texts("intents", texts, [f"intent {i % 4}" for i in range(120)])
    docs_long = longdoc.generate("passkey", backbone.tokenizer, max_length=600, lengths=[256], n=6)
    return {"retrieval": Task("tiny retrieval", "retrieval", Beir("tiny", docs, queries,
                                                                   {f"q{i}": {f"d{i}": 1} for i in range(12)})),
            "classification": Task("tiny intents", "classification", held_out(labelled)),
            "clustering": Task("tiny intents, clustering", "clustering", labelled),
            "longdoc": Task(docs_long.name, "longdoc", docs_long)}


@pytest.fixture
def tiny_samples(backbone, monkeypatch):
    made = samples(backbone)

    def sample_task(family, bb, seed=0):
        if family == "longdoc" and bb.facts.max_length < 256:
            raise UserError("The model reads at most 128 tokens, shorter than every passkey document length")
        return made[family]

    monkeypatch.setattr(families, "sample_task", sample_task)
    return made


_WINDOWS: dict = {}


def _compute(backbone):
    """The report's door computing here, the ID window computed once per model."""
    compute = Direct()
    if backbone.identity not in _WINDOWS:
        _WINDOWS[backbone.identity] = compute.window(backbone)
    compute.window = lambda backbone, compute=True: _WINDOWS[backbone.identity]
    return compute


def _report(backbone, pairs, budget=30, compute=None, clock=None, **prepare):
    plan = report_build.prepare(backbone, pairs, budget_minutes=budget, tasks=[], **prepare)
    return plan, report_build.build(backbone, pairs, plan, compute=compute or _compute(backbone), n_boot=100,
                                    clock=clock)


def test_every_family_per_method_with_paired_differences(backbone, pairs, tiny_samples):
    from analysis.report.html import render

    plan, report = _report(backbone, pairs, families=families.FAMILIES)
    assert plan.estimate["families"] > 0 and set(plan.family_forwards) == {t.name for t in tiny_samples.values()}
    assert plan.family_forwards["Long documents: Passkey (6 per length, seed 0)"] > \
        plan.family_forwards["tiny intents, clustering"] / 120 * 12  # long texts cost more per text
    section = report["families"]
    assert report_build.problems(json.loads(json.dumps(report))) == [] and report["complete"], report["missing"]
    assert {t["family"] for t in section["tasks"]} == set(families.FAMILIES)
    labels = {r["label"] for r in report["quality"]["methods"]}
    for t in section["tasks"]:
        rows = {r["label"]: r for r in t["rows"]}
        assert set(rows) == labels and not rows[t["best"]]["reference"]
        assert rows[t["best"]]["difference_to_best"] is None
        for r in rows.values():
            if r["label"] != t["best"]:
                lo, hi = r["difference_ci"]
                assert lo <= r["difference_to_best"] <= hi and 0 < r["p"] <= 1
    rec = report["recommendation"]["families"]
    assert set(rec["per_task"]) == {t["task"] for t in section["tasks"]}
    assert rec["overall"]["best"] in labels and "Overall:" in rec["overall"]["reason"]
    assert all(r in report["recommendation"]["reasons"] for r in rec["reasons"])
    html = render(report)
    assert '<section id="families">' in html and "fig_families" in html and "MiniLM alone" in html


def test_a_budget_that_runs_out_leaves_the_weakest_methods_out_by_name(backbone, pairs, tiny_samples):
    """A fake clock on which every family unit takes two minutes: a 12-minute budget holds a few units, the STS-best
    method first and the reference second."""
    fake = {"now": 0.0}
    compute = _compute(backbone)
    encode = compute.encode

    def slow(backbone, method, texts):
        encoded = encode(backbone, method, texts)
        if len(texts) != len(pairs.unique_texts()):  # a family's texts (queries, then documents), not the STS sample's
            fake["now"] += 60.0
        return encoded

    compute.encode = slow
    plan, report = _report(backbone, pairs, budget=12, compute=compute, clock=lambda: fake["now"],
                           families=("retrieval",))
    section = report["families"]
    assert "families" in report["missing"] and "the budget of 12 min ran out" in report["missing"]["families"]
    measured = [r["label"] for r in section["tasks"][0]["rows"]]
    quality = {r["label"]: r for r in report["quality"]["methods"]}
    assert measured[:2] == families.order(report["quality"], plan.methods)[:2]
    assert quality[measured[1]]["reference"] and 2 <= len(measured) < len(quality)
    assert report["recommendation"]["families"]["per_task"]  # it still answers for what was measured


def test_a_family_without_data_is_named_and_the_report_stays_complete(pairs, tiny_samples):
    short = tiny_backbone("llama", n_layers=4, max_length=128)
    plan, report = _report(short, pairs, families=("longdoc", "clustering"))
    assert "longdoc" in plan.families_skipped and [t.kind for t in plan.families] == ["clustering"]
    assert report["complete"] and report["families"]["skipped"]["longdoc"].startswith("The model reads at most")
    assert any(r.startswith("Long documents: not measured (The model reads") for r in
               report["recommendation"]["reasons"])


def test_no_families_asked_is_no_section(backbone, pairs, tiny_samples):
    _, report = _report(backbone, pairs)
    assert "families" not in report and "families" not in report["recommendation"]


def _section(*tasks):
    """A families section from (family, best-first [(label, value, p)]) tasks."""
    out = []
    for family, rows in tasks:
        best = rows[0][0]
        out.append({"task": f"{family} set", "family": family, "metric": "m", "unit": "items", "n": 50, "best": best,
                    "bootstrap": "b", "rows": [{"label": k, "value": v, "ci": [v - .05, v + .05],
                                                "difference_to_best": None if k == best else v - rows[0][1],
                                                "difference_ci": None if k == best else [v - rows[0][1] - .02,
                                                                                          v - rows[0][1] + .02],
                                                "p": p, "reference": k == "minilm"} for k, v, p in rows]})
    return {"tasks": out, "skipped": {}, "n_boot": 1000, "seed": 0}


def _quality(*rows):
    return {"best": rows[0][0], "methods": [{"label": k, "spearman": v, "reference": k == "minilm"} for k, v in rows]}


def test_the_families_disagree_known_answer():
    quality = _quality(("kv", 0.80), ("mean", 0.70), ("last", 0.50), ("minilm", 0.85))
    section = _section(("retrieval", [("mean", 0.60, None), ("kv", 0.40, 0.01), ("last", 0.20, 0.001),
                                      ("minilm", 0.70, 0.02)]),
                       ("clustering", [("mean", 0.50, None), ("kv", 0.49, 0.60), ("last", 0.30, 0.01)]))
    rec = families.recommend(quality, section)
    assert rec["per_task"]["retrieval set"]["best"] == "mean" and rec["per_task"]["retrieval set"]["not_different"] == []
    assert rec["per_task"]["clustering set"]["not_different"] == ["kv"]
    assert "MiniLM alone 0.700, +0.100 (above)" in rec["per_task"]["retrieval set"]["reason"]
    overall = rec["overall"]
    assert overall["ranks"]["kv"] == {"STS": 1.0, "retrieval (retrieval set)": 2.0, "clustering (clustering set)": 2.0}
    assert overall["best"] == "mean" and overall["mean_rank"]["mean"] == pytest.approx(4 / 3)
    assert overall["disagree"] == ["STS"] and "STS ranks kv first (mean is 2nd there)" in overall["reason"]


def test_every_family_agreeing_and_nothing_measured_known_answers():
    quality = _quality(("kv", 0.80), ("mean", 0.70))
    agree = families.recommend(quality, _section(("retrieval", [("kv", 0.6, None), ("mean", 0.5, 0.01)])))
    assert agree["overall"]["best"] == "kv" and agree["overall"]["disagree"] == []
    assert "every family ranks it first" in agree["overall"]["reason"]
    none = families.recommend(quality, {"tasks": [], "skipped": {"retrieval": "SciFact is not on this machine: run "
                                                                              "`python -m analysis data fetch scifact`"}})
    assert none["overall"] is None
    assert "Retrieval: not measured (SciFact is not on this machine: run `python -m analysis data fetch scifact`)." \
        in none["reasons"]


def test_the_command_takes_families_and_refuses_an_unknown_one(tmp_path, capsys):
    import cli

    code = cli.main(["report", "--model", "no-such/model", "--data", "demo", "--families", "retrieval,poetry",
                     "--out", str(tmp_path / "r.html")])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "'poetry' is not a task family" in err


def test_the_report_page_measures_the_families(backbone, tiny_samples, tmp_path, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from tests.apptools import errors, shown
    from ui.model import MODEL_KEY

    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "tiny"
    backbone.model.save_pretrained(folder)
    backbone.tokenizer.save_pretrained(folder)
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "pages" / "14_report.py"),
                           default_timeout=600)
    at.session_state[MODEL_KEY] = str(folder)
    at.session_state["report_set"] = "Demo paraphrase pairs"
    at.session_state["report_limit_20"] = 12
    at.session_state["report_boot"] = 20
    at.session_state["report_probe"] = False
    at.run()
    assert not at.exception and not errors(at), (at.exception, errors(at))
    assert any("families" in shown(i.value) for i in at.info)  # the estimate names the section
    at.button(key="report_run").click().run()
    assert not at.exception and not errors(at), (at.exception, errors(at))
    html = " ".join(str(c.proto) for c in at.get("iframe"))  # the rendered report the page embeds
    assert "Quality per task family" in html


def test_the_families_come_after_the_layer_map_and_the_mechanism():
    """The families are the one step whose estimate can pass any budget; run before the seconds-long mechanism and
    layer map they took the time those needed (a 14-min report under load lost both for 5 s)."""
    from analysis.report.build import STEPS

    assert STEPS.index("families") > max(STEPS.index("layers"), STEPS.index("mechanism"))
