"""`python -m analysis report` end to end on a tiny model folder and a tiny genre-labelled STS file: the HTML
parses and holds every section, the JSON has the documented keys, an interrupted report resumes from every
finished cell, a report whose budget runs out writes its HTML and JSON marked incomplete and a second run fills the
gaps from the cache, the recommendation's rules give known answers (ties, the cheapest method, the ID rule's trust
threshold, every section missing, no significance without a test), and bad input or a too-small budget ends in one
sentence with nothing written."""

import json
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import cli
from analysis.compute.direct import Direct
from analysis.models.tiny import save_tiny
from analysis.report import build as report_build
from analysis.report.html import ORDER

WORDS = "cat dog sat ran the a on mat big small red blue house car tree bird sang sky".split()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(model folder, STS file) with an isolated cache for the module."""
    from tests.apptools import isolated_cache

    with isolated_cache(tmp_path_factory, shared=()):
        root = tmp_path_factory.mktemp("report")
        folder = save_tiny(root / "tiny-llama", n_layers=6)
        rng = np.random.default_rng(0)
        lines = ["sentence1,sentence2,score,genre"]
        for i in range(16):
            lines.append(f"{' '.join(rng.choice(WORDS, 5))}.,{' '.join(rng.choice(WORDS, 5))}.,"
                         f"{rng.uniform(0, 5):.2f},{'news' if i % 2 else 'captions'}")
        data = root / "pairs.csv"
        data.write_text("\n".join(lines) + "\n", encoding="utf-8")
        yield str(folder), str(data)


def run(args, capsys):
    code = cli.main(["report", *args])
    out, err = capsys.readouterr()
    return code, out, err


class Sections(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.missing = [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.ids.append(attrs.get("id"))
        if attrs.get("class") == "missing":
            self.missing += 1


@pytest.fixture(scope="module")
def made(setup, tmp_path_factory):
    """One report written by the command: (exit code, stdout, stderr, the HTML's path)."""
    import contextlib
    import io

    folder, data = setup
    out = tmp_path_factory.mktemp("made") / "r.html"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = cli.main(["report", "--model", folder, "--data", data, "--sample", "12", "--n-boot", "50", "--families",
                         "none", "--budget-minutes", "10", "--out", str(out)])
    return code, stdout.getvalue(), stderr.getvalue(), out


def test_report_end_to_end(made):
    code, stdout, err, out = made
    assert code == 0, err
    result = json.loads(stdout)
    assert result["complete"] and result["missing"] == {}
    assert "estimate:" in err  # the estimate comes before the work
    parser = Sections()
    parser.feed(out.read_text(encoding="utf-8"))
    assert parser.ids == [s for s in ORDER if s != "families"] and parser.missing == 0
    assert out.stat().st_size < 4 * 2**20
    report = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert tuple(k for k in report if k != "claims") == report_build.KEYS  # the documented keys, the claims optional
    assert report_build.problems(report) == [] and report["claims"]["rows"] == []  # no claims board in this cache
    assert report["data"]["genres"] == {"captions": 6, "news": 6}  # the sample is stratified by genre
    q = report["quality"]
    labels = {r["label"] for r in q["methods"]}
    # soft tokens run on the frozen model here: the report never calls them plain soft_tokens (#48)
    assert {"last", "mean", "prompteol", "echo", "kv_embedding", "soft_tokens (frozen)"} <= labels
    assert "soft_tokens" not in labels
    best = next(r for r in q["methods"] if r["label"] == q["best"])
    assert best["difference_to_best"] is None and all(len(r["ci"]) == 2 for r in q["methods"])
    assert all(r["p"] is not None for r in q["methods"] if r["label"] != q["best"])
    probe = {r["label"]: r for r in q["tasks"]}  # the default polarity probe, every method
    assert set(probe) == labels and {r["metric"] for r in probe.values()} == {"accuracy"}
    rows = {r["label"]: r for r in report["cost"]["rows"]}
    assert rows["plain forward"]["ratio"] == 1.0 and set(rows) == labels | {"plain forward"}
    layers = report["layers"]
    assert len(layers["id_trajectory"]) == 7 and layers["selection"]["rule"] in ("u-shape", "several-minima", "flat")
    assert layers["map"]["cells"] and layers["map"]["id_window"]["rank_among_cells"] >= 1
    assert len(report["mechanism"]["prefix_mass"]["mass"]) == 6
    rec = report["recommendation"]
    window, n_cells = layers["map"]["id_window"], len(layers["map"]["cells"])
    rule = window["gap_to_best"] <= 0.01 or window["rank_among_cells"] <= max(1, -(-n_cells // 4))  # best quarter
    assert rec["best"] == q["best"] and rec["id_rule"]["trusted"] is rule and rec["reasons"]


def test_reports_in_one_folder_can_share_one_plotly_file(made, tmp_path):
    """--shared-plotly (what scripts/reports.sh uses): plotly.js goes once into plotly.gz.js beside the reports, each
    report is small and loads it, and a second report leaves the shared file as it is."""
    from analysis.core.standalone import SHARED_PLOTLY
    from analysis.report.html import save

    report = json.loads(made[3].with_suffix(".json").read_text(encoding="utf-8"))
    first, _ = save(report, tmp_path / "a.html", shared_plotly=True)
    shared = tmp_path / SHARED_PLOTLY
    written = shared.stat().st_mtime_ns
    second, _ = save(report, tmp_path / "b.html", shared_plotly=True)
    assert shared.stat().st_mtime_ns == written and shared.read_text(encoding="utf-8").startswith("window.PLOTLY_GZ")
    for page in (first, second):
        text = page.read_text(encoding="utf-8")
        assert f'<script src="{SHARED_PLOTLY}"></script>' in text and 'id="plotly-gz"' not in text
        assert page.stat().st_size < 2**20 and made[3].stat().st_size > 2**20


def test_an_interrupted_report_resumes_from_every_finished_cell(setup, monkeypatch):
    from analysis.data.files import read_sts
    from analysis.models.backbone import load_backbone
    from cache import default_store
    from cache.keys import EMBEDDINGS, STS_SCORE
    from cache.cached import Cached
    from cache.store import Store

    folder, data = setup
    backbone, pairs = load_backbone(folder), read_sts(data)
    pairs = type(pairs)("resume", pairs.left[:10], pairs.right[:10], pairs.scores[:10])  # cells of their own
    puts = []
    real_put = Store.put
    monkeypatch.setattr(Store, "put", lambda self, key, arrays, meta, *a, namespace="default", **k: (
        puts.append(namespace), real_put(self, key, arrays, meta, *a, namespace=namespace, **k))[1])
    stop = {"now": False}

    def progress(fraction, message):
        if message.startswith("layer map: cell 3/"):
            stop["now"] = True  # three cells are finished and stored

    def report():
        plan = report_build.prepare(backbone, pairs, budget_minutes=10)
        return report_build.build(backbone, pairs, plan, compute=Cached(default_store()), n_boot=20, progress=progress,
                                  should_stop=lambda: stop["now"])

    first = report()
    assert first["interrupted"] and first["quality"] is not None and first["layers"]["map"] is None
    assert set(first["missing"]) == {"layers"} and "3 of" in first["missing"]["layers"]  # the map is the last step
    assert first["recommendation"]["id_rule"]["trusted"] is None  # said, not guessed
    cells_done = puts.count(STS_SCORE) - 1  # the prompt-only reference is stored beside the cells
    assert cells_done == 3
    puts.clear()
    stop["now"] = False
    second = report_build.build(backbone, pairs, report_build.prepare(backbone, pairs, budget_minutes=10),
                                compute=Cached(default_store()), n_boot=20)
    assert second["complete"]
    assert puts.count(EMBEDDINGS) == 0 and all(r["cached"] for r in second["quality"]["methods"])
    assert second["layers"]["cached"] == cells_done  # every finished cell reused, none computed twice
    assert second["layers"]["computed"] == puts.count(STS_SCORE) > 0
    assert second["layers"]["cached"] + second["layers"]["computed"] >= second["plan"]["cells"]


def test_ctrl_c_leaves_a_partial_report_that_says_what_is_missing(setup, tmp_path, capsys, monkeypatch):
    from analysis.report import sections

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sections, "cost", interrupted)
    folder, data = setup
    out = tmp_path / "partial.html"
    code, stdout, err = run(["--model", folder, "--data", data, "--sample", "12", "--n-boot", "20", "--tasks", "none",
                             "--families", "none", "--out", str(out)], capsys)
    assert code == 2 and stdout == "" and "resumes from the cache" in err.splitlines()[-1]
    assert sum(line.startswith("error:") for line in err.splitlines()) == 1  # progress lines before it
    parser = Sections()
    text = out.read_text(encoding="utf-8")
    parser.feed(text)
    assert parser.ids == [s for s in ORDER if s != "families"] and parser.missing == 3 and "INCOMPLETE (interrupted)" in text
    report = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert report["interrupted"] and not report["complete"] and report["quality"] is not None
    assert set(report["missing"]) == {"cost", "layers", "mechanism"}
    assert report["recommendation"]["best"] == report["quality"]["best"]  # made from what was measured


@pytest.mark.parametrize("args, words", [
    (["--budget-minutes", "0.0001"], "too small for even the quality table"),
    (["--budget-minutes", "nan"], "--budget-minutes"),
    (["--data", "/nonexistent/pairs.tsv"], "pairs.tsv"),
    (["--model", "/nonexistent/model"], "model"),
    (["--out", "report.txt"], ".html"),
    (["--tasks", "stsb-nonexistent"], "stsb-nonexistent"),
    (["--tasks", "demo"], "give it as --data"),
])
def test_bad_input_is_one_sentence_and_writes_nothing(setup, tmp_path, capsys, args, words, monkeypatch):
    folder, data = setup
    monkeypatch.chdir(tmp_path)
    base = {"--model": folder, "--data": data, "--sample": "12", "--out": "r.html"}
    base.update(dict(zip(args[::2], args[1::2])))
    code, stdout, err = run([x for kv in base.items() for x in kv], capsys)
    assert code == 2 and stdout == "" and err.count("\n") == 1 and words in err, err
    assert list(tmp_path.iterdir()) == []


# ---- the Report page and the Compare models reader -------------------------------------------------------------

def test_report_page_estimates_first_then_builds_and_offers_downloads(setup):
    from streamlit.testing.v1 import AppTest

    from tests.apptools import errors, shown
    from ui.model import MODEL_KEY

    folder, _ = setup
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "pages" / "14_report.py"),
                          default_timeout=300)
    at.session_state[MODEL_KEY] = folder
    at.session_state["report_set"] = "Demo paraphrase pairs"  # chosen: a new report's default is STS-B's report part
    at.session_state["report_limit_20"] = 10  # 10 of the 20 demo pairs
    at.session_state["report_boot"] = 20
    at.session_state["report_probe"] = False  # the command's test covers the probe
    at.session_state["report_families"] = False  # tests/test_report_families.py covers the families
    at.run()
    assert not at.exception and not errors(at), (at.exception, errors(at))
    assert any(shown(i.value).startswith("Estimate:") for i in at.info)  # after the note on STS-B where it is absent
    assert not at.get("download_button")  # nothing runs before the click
    at.button(key="report_run").click().run()
    assert not at.exception and not errors(at), (at.exception, errors(at))
    downloads = {b.key for b in at.get("download_button")}
    assert {"report_html", "report_json", "csv_report_quality"} <= downloads  # the report, and its first figure's data
    assert at.get("plotly_chart")  # Spearman per method, drawn on the page above the report's frame
    assert "best method" in at.table[0].value.index


def test_two_report_jsons_side_by_side(made):
    from analysis.core.errors import UserError
    from ui.reports import read_report, side_by_side

    path = made[3].with_suffix(".json")
    report = read_report(path.read_bytes(), path.name)
    other = {**report, "model": {**report["model"], "title": "another"}}
    table = side_by_side({"a.json": report, "b.json": other})
    assert list(table.columns) == ["a.json", "b.json"]
    assert table.loc["best method", "a.json"] == report["quality"]["best"]
    assert table.loc["model", "b.json"] == "another"
    with pytest.raises(UserError, match="not a model report"):
        read_report(b'{"schema": 1}', "x.json")
    broken = {**report, "cost": {**report["cost"], "rows": [{"label": "last"}]}}
    with pytest.raises(UserError, match="a cost row has no 'seconds'"):
        read_report(json.dumps(broken).encode(), "x.json")
    with pytest.raises(UserError, match="not a JSON file"):
        read_report(b"\xff", "x.json")


def test_compare_uploads_asks_for_two_files():
    from streamlit.testing.v1 import AppTest

    def page():
        from ui.reports import compare_uploads

        compare_uploads("t")

    at = AppTest.from_function(page).run()
    assert not at.exception and "Upload two report JSONs" in at.info[0].value


def test_the_layer_map_is_sized_to_the_time_and_the_per_request_limits(setup):
    from analysis.core import budgets
    from analysis.data.files import read_sts
    from analysis.models.backbone import load_backbone

    folder, data = setup
    backbone, pairs = load_backbone(folder), read_sts(data)
    roomy = report_build.prepare(backbone, pairs, budget_minutes=10)
    with budgets.override(grid_cells=6):
        capped = report_build.prepare(backbone, pairs, budget_minutes=10)
    assert 0 < len(capped.cells) < len(roomy.cells) and len(capped.cells) + 1 <= 6  # + the ID window's cell
    with budgets.override(grid_cells=1):
        assert "layers" in report_build.prepare(backbone, pairs, budget_minutes=10).skipped


def test_a_model_without_an_id_window_is_reported_without_kv_embedding(setup):
    from analysis.core.errors import UserError
    from analysis.data.files import read_sts
    from analysis.models.backbone import load_backbone
    from analysis.report.html import render

    folder, data = setup
    backbone, pairs = load_backbone(folder), read_sts(data)

    def no_window():
        raise UserError("layers=auto: no window could be chosen (only 2 layer(s) have a defined ID; need 3).")

    compute = Direct()
    compute.window = lambda backbone, compute=True: no_window()
    plan = report_build.prepare(backbone, pairs, budget_minutes=10)
    report = report_build.build(backbone, pairs, plan, compute=compute, n_boot=20)
    assert "kv_embedding" not in {r["label"] for r in report["quality"]["methods"]}
    assert set(report["missing"]) == {"layers"} and "cannot be chosen" in report["missing"]["layers"]
    assert report["recommendation"]["id_rule"]["trusted"] is None and report["mechanism"]["prefix_mass"] is None
    assert "Missing:" in render(report)


def test_interleaved_timing_rotates_which_configuration_runs_first():
    """Whatever runs first in a round pays for the previous round's leftovers: each round starts one further on."""
    from analysis.core.timing import interleaved_medians

    calls = []
    interleaved_medians({k: (lambda k=k: calls.append(k)) for k in "abc"}, repeats=4)
    assert calls == list("abc" "bca" "cab" "abc")


# ---- the recommendation's rules, on hand-made sections (known answers) ---------------------------------------------

def quality_table(rows, n_pairs=100, n_boot=1000, not_measured=None):
    """A quality section from (label, spearman, p) rows; the best is the highest Spearman (its p is None)."""
    best = max(rows, key=lambda r: r[1])
    return {"best": best[0], "n_pairs": n_pairs, "n_boot": n_boot, "seed": 0, "bootstrap": "paired", "tasks": [],
            "not_measured": not_measured or {},
            "methods": [{"label": label, "spearman": rho, "ci": [rho - 0.05, rho + 0.05] if n_boot else [None, None],
                         "difference_to_best": None if label == best[0] else rho - best[1], "difference_ci": None,
                         "p": p} for label, rho, p in rows]}


def cost_table(ratios):
    return {"baseline": "plain forward", "texts": 16, "repeats": 3,
            "rows": [{"label": "plain forward", "seconds": 1.0, "ratio": 1.0, "peak_mb": 0.0}]
            + [{"label": k, "seconds": v, "ratio": v, "peak_mb": 0.0} for k, v in ratios.items()]}


def layers_with_map(n_cells, rank, gap):
    best = {"start": 5, "width": 3, "bias": 1.0, "spearman": 0.80}
    return {"map": {"cells": [{}] * n_cells, "best": best,
                    "id_window": {"layers": [3, 4, 5], "spearman": 0.80 - gap, "rank_among_cells": rank,
                                  "gap_to_best": gap}}}


def test_tied_and_worse_methods_are_told_apart_by_p():
    from analysis.report.recommend import recommend

    rec = recommend(quality_table([("a", 0.80, None), ("b", 0.78, 0.30), ("c", 0.70, 0.01)]), None, None)
    assert rec["best"] == "a" and rec["not_different"] == ["b"]
    assert "Not significantly different from it (paired bootstrap, p >= 0.05): b (-0.020, p = 0.30)." in rec["reasons"]
    assert "Significantly worse (paired bootstrap, p < 0.05): c." in rec["reasons"]
    everyone = recommend(quality_table([("a", 0.80, None), ("c", 0.70, 0.01)]), None, None)
    assert everyone["not_different"] == [] and \
        "Every other method is significantly worse (paired bootstrap, p < 0.05)." in everyone["reasons"]
    edge = recommend(quality_table([("a", 0.80, None), ("b", 0.79, 0.05)]), None, None)
    assert edge["not_different"] == ["b"]  # p = 0.05 exactly is not below the level


def test_best_per_cost_is_the_cheapest_method_tied_with_the_best():
    from analysis.report.recommend import recommend

    q = quality_table([("a", 0.80, None), ("b", 0.78, 0.30), ("c", 0.70, 0.01)])
    rec = recommend(q, cost_table({"a": 2.0, "b": 1.1, "c": 0.9}), None)
    assert rec["best_per_cost"] == "b"  # c is cheaper still, but significantly worse
    assert any(r.startswith("Per unit of cost: b (1.10x the plain forward, against 2.00x for a)")
               for r in rec["reasons"])
    no_tie = recommend(quality_table([("a", 0.80, None), ("b", 0.78, 0.01)]), cost_table({"a": 2.0, "b": 1.1}), None)
    assert no_tie["best_per_cost"] == "a" and "no cheaper method is statistically tied with it" in no_tie["reasons"][-2]
    cheapest = recommend(quality_table([("a", 0.80, None), ("b", 0.78, 0.30)]), cost_table({"a": 0.9, "b": 1.1}), None)
    assert cheapest["best_per_cost"] == "a" and "no method measured costs less" in cheapest["reasons"][-2]
    untested = recommend(quality_table([("a", 0.80, None), ("b", 0.78, 0.30), ("c", 0.75, None)]),
                         cost_table({"a": 2.0, "b": 1.1, "c": 0.5}), None)
    assert untested["best_per_cost"] is None and "c cost less than b but was not tested" in untested["reasons"][-2]


@pytest.mark.parametrize("n_cells, rank, gap, trusted", [
    (8, 2, 0.05, True),  # rank 2 of 8: within the best quarter (ceil(8 / 4) = 2)
    (8, 3, 0.05, False),  # rank 3 of 8, far below the best
    (8, 3, 0.01, True),  # exactly TRUST_GAP below the best cell
    (8, 3, 0.0101, False),  # just past it
    (3, 1, 0.0, True),  # a map of 3 cells: the best quarter is the best cell
    (3, 2, 0.02, False),
])
def test_the_id_rule_is_trusted_within_the_gap_or_the_best_quarter(n_cells, rank, gap, trusted):
    from analysis.report.recommend import id_rule

    verdict = id_rule(layers_with_map(n_cells, rank, gap))
    assert verdict["trusted"] is trusted
    assert f"rank {rank} of {n_cells} map cells" in verdict["reason"]
    assert ("can be trusted" if trusted else "NOT to be trusted") in verdict["reason"]


@pytest.mark.parametrize("gap, words", [(0.013, "0.013 below the best cell"), (-0.001, "0.001 above the best cell"),
                                        (0.0002, "level with the best cell")])
def test_the_id_window_against_the_best_cell_reads_the_right_way(gap, words):
    """The ID window is not a map cell, so it can beat the best of them: "-0.001 below" read backwards (the Gemma
    report said so)."""
    from analysis.report.recommend import id_rule

    assert words in id_rule(layers_with_map(5, 1, gap))["reason"]


def test_every_section_missing_gives_unknowns_with_their_reasons():
    """What `report --budget-minutes 15` crashed on: the layer map None (or the whole section) must give "unknown"."""
    from analysis.report.recommend import recommend

    missing = {"quality": "the budget of 2 min ran out before this", "cost": "failed: RuntimeError: out of memory",
               "layers": "the run was interrupted before this finished"}
    rec = recommend(None, None, None, missing)
    assert (rec["best"], rec["best_per_cost"], rec["id_rule"]["trusted"]) == (None, None, None)
    assert rec["not_different"] == []
    assert rec["reasons"] == [
        "Which method is best is unknown, since no method was measured: the budget of 2 min ran out before this.",
        "Whether the ID rule can be trusted is unknown, since the layers section is missing: the run was interrupted "
        "before this finished."]
    q = quality_table([("a", 0.80, None), ("b", 0.70, 0.01)])
    partial = recommend(q, None, {"id_trajectory": [], "map": None}, missing)
    assert partial["best"] == "a" and partial["id_rule"]["trusted"] is None
    assert "Per unit of cost: unknown, since the cost section is missing: failed: RuntimeError: out of memory." in \
        partial["reasons"]
    assert partial["id_rule"]["reason"].endswith("the layer map is missing: the run was interrupted before this "
                                                 "finished.")
    unscored = recommend(q, None, {"map": {"cells": [{}], "best": {}, "id_window": None}})
    assert unscored["id_rule"]["trusted"] is None


@pytest.mark.parametrize("n_pairs, n_boot, why", [(100, 0, "--n-boot 0"), (8, 1000, "8 pairs, fewer than the 10")])
def test_no_statement_of_significance_without_a_test(n_pairs, n_boot, why):
    from analysis.report.recommend import recommend

    q = quality_table([("a", 0.80, None), ("b", 0.78, None), ("c", 0.50, None)], n_pairs=n_pairs, n_boot=n_boot)
    rec = recommend(q, cost_table({"a": 2.0, "b": 1.1, "c": 0.9}), None)
    assert rec["best"] == "a" and rec["not_different"] == [] and rec["best_per_cost"] is None
    assert not [r for r in rec["reasons"] if "significant" in r or "p <" in r or "p >=" in r], rec["reasons"]
    assert f"No paired test was run ({why}" in " ".join(rec["reasons"])
    alone = recommend(quality_table([("a", 0.80, None), ("b", 0.78, None)], n_boot=0), cost_table({"a": 1.0, "b": 2.0}),
                      None)
    assert alone["best_per_cost"] == "a"  # nothing untested costs less


# ---- a budget that runs out --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def model_and_window(setup):
    """The tiny model and its `layers=auto` window, computed once (the window is the slow part on the tiny model)."""
    from analysis.models.backbone import load_backbone

    backbone = load_backbone(setup[0])
    return backbone, Direct().window(backbone)


def budget_pairs(setup, name: str, n: int = 12):
    from analysis.data.files import read_sts

    pairs = read_sts(setup[1])
    return type(pairs)(name, pairs.left[:n], pairs.right[:n], pairs.scores[:n])


def test_a_budget_that_runs_out_writes_an_incomplete_report_and_a_second_run_fills_the_gaps(
        setup, model_and_window, tmp_path):
    """A fake clock: each method's embeddings "take" 4 minutes, so a 10-minute budget holds two methods (a third
    would end past it). The HTML and JSON are written, marked incomplete, and name what is missing and why; the same
    report run again with time to spare reuses those two methods from the cache and completes."""
    from analysis.report.html import render, save
    from cache import Store
    from cache.cached import Cached

    backbone, window = model_and_window
    pairs = budget_pairs(setup, "budget")
    store = Store(tmp_path / "store")  # this test's own: nothing cached before its first run
    fake = {"now": 0.0}

    def compute(slow: bool):
        door = Cached(store)
        door.window, encode = (lambda backbone, compute=True: window), door.encode

        def four_minutes(backbone, method, texts):
            encoded = encode(backbone, method, texts)
            fake["now"] += 240.0
            return replace(encoded, seconds=240.0)  # what the budget's drift sees: far slower than estimated

        door.encode = four_minutes if slow else encode
        return door

    plan = report_build.prepare(backbone, pairs, budget_minutes=10, tasks=[])
    report = report_build.build(backbone, pairs, plan, compute=compute(True), n_boot=0, clock=lambda: fake["now"])
    html, path = save(report, tmp_path / "r.html")
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert report_build.problems(saved) == [] and not saved["complete"] and not saved["interrupted"]
    measured = [r["label"] for r in saved["quality"]["methods"]]
    assert measured == list(plan.methods)[:2]
    assert set(saved["missing"]) == {"quality", "cost", "mechanism", "layers"}
    assert all("the budget of 10 min ran out" in why for why in saved["missing"].values())
    assert saved["quality"]["not_measured"].keys() == set(plan.methods) - set(measured)
    assert saved["recommendation"]["best_per_cost"] is None and saved["recommendation"]["id_rule"]["trusted"] is None
    text = html.read_text(encoding="utf-8")
    assert "INCOMPLETE" in text and "the budget of 10 min ran out" in text and "paired bootstrap, p" not in text
    assert text == render(saved)  # the JSON holds everything the page shows

    again = report_build.build(backbone, pairs, report_build.prepare(backbone, pairs, budget_minutes=60, tasks=[]),
                               compute=compute(False), n_boot=0)
    assert again["complete"], again["missing"]
    assert [r["label"] for r in again["quality"]["methods"] if r["cached"]] == measured  # filled from the cache


def test_the_command_writes_an_incomplete_report_when_the_budget_is_gone_before_the_work(setup, tmp_path, capsys,
                                                                                        monkeypatch):
    """A clock on which every reading is 1e6 s after the one before: the whole budget is spent before
    the first section may start, so every section is missing; the command still writes both files, says so, and
    exits 0. (A clock that only runs fast is not enough: a tiny model can load within its budget.)"""
    import itertools

    from analysis.report import clock

    ticks = itertools.count(0, 1e6)
    monkeypatch.setattr(clock, "now", lambda: next(ticks))
    folder, data = setup
    out = tmp_path / "late.html"
    code, stdout, err = run(["--model", folder, "--data", data, "--sample", "12", "--tasks", "none", "--families",
                             "none", "--out", str(out)], capsys)
    assert code == 0, err
    result = json.loads(stdout)
    assert not result["complete"] and set(result["missing"]) == {"quality", "cost", "mechanism", "layers"}
    assert err.splitlines()[-1].startswith("warning: the report is incomplete")
    report = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert report_build.problems(report) == [] and report["quality"] is None and report["layers"] is None
    assert report["recommendation"]["best"] is None
    parser = Sections()
    parser.feed(out.read_text(encoding="utf-8"))
    assert parser.ids == [s for s in ORDER if s != "families"] and parser.missing == 4


def test_the_estimate_is_calibrated_on_texts_from_across_the_sample(setup, model_and_window, monkeypatch):
    """The probe times texts spread over the sample (a sorted sample's first texts may all be short) and takes the
    median of its passes."""
    from analysis.methods.base import EmbeddingMethod
    from analysis.report import plan as planning

    backbone, _ = model_and_window
    seen = []
    real = EmbeddingMethod.encode
    monkeypatch.setattr(EmbeddingMethod, "encode", lambda self, bb, texts, **k: (seen.append(list(texts)),
                                                                                 real(self, bb, texts, **k))[1])
    texts = [f"text number {i}" for i in range(100)]
    seconds = planning.calibrate(backbone, texts)
    assert seconds > 0 and len(seen) == 1 + planning.TIMING_REPEATS
    assert seen[1][0] == "text number 0" and seen[1][-1] == "text number 99" and len(seen[1]) == planning.TIMING_TEXTS
