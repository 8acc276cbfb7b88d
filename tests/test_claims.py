"""The claims board: every claim declared in full (the paper's words, the test, the rule, deviations that resolve,
evidence views that exist), the whole board on a tiny model (each claim measured or refused with its reason, as a
valid record and a standalone HTML file), a budget that leaves claims "not measured" saying why, claims read from
records measured on the model, the cache keeping timings and boards, and the command's checks before any work."""

import json

import pytest

from analysis.core.errors import UserError
from analysis.experiments.claims import PAPERS
from analysis.experiments.claims.board import CLAIMS, choose, prepare, run
from analysis.experiments.claims.context import Settings
from analysis.experiments.machinery import verdicts
from analysis.models.tiny import tiny_backbone

MEASURED = (verdicts.HOLDS, verdicts.REVERSED, verdicts.UNRESOLVED)
RATE = (0.01, 0.1, 10.0, 1000.0)  # a timing probe's result (seconds per text at 10 and 1,000 tokens): no probe run


@pytest.fixture(scope="module")
def tiny():
    """A tiny Llama that reads 512 tokens: long enough for two long-document lengths."""
    return tiny_backbone("llama", max_length=512)


@pytest.fixture(scope="module")
def beir(tmp_path_factory):
    """A small retrieval set in BEIR layout: eight documents, four judged queries."""
    root = tmp_path_factory.mktemp("beir")
    (root / "qrels").mkdir()
    topics = ["rivers and boats", "bread and ovens", "stars and comets", "bees and honey", "trains and tracks",
              "snow and ice", "violins and bows", "maps and roads"]
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": t, "text": f"A note about {t}."})
                                               + "\n" for i, t in enumerate(topics)))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": f"what about {topics[i]}?"})
                                                + "\n" for i in range(4)))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n"
                                                                                      for i in range(4)))
    rows = [f"{word} note number {i},{label}" for label, word in enumerate(("river", "bread", "comet", "honey"))
            for i in range(12)]  # a labelled set for the classification and clustering claims
    (root / "labelled.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    return root


def small(beir, **over) -> Settings:
    return Settings(**{"sts_sample": 24, "n_boot": 50, "long_n": 12, "long_k": ("1", "4"),
                       "retrieval": f"beir:{beir}", "labelled": str(beir / "labelled.csv"), "timing_texts": 4,
                       "repeats": 2, **over})


def compute_for(backbone):
    from analysis.compute.direct import Direct

    return Direct(backbones=lambda name: backbone)


def needs_stsb():
    from analysis.data.datasets import stsb_dev_part

    try:
        stsb_dev_part("report")
    except UserError as err:
        pytest.skip(f"STS-B dev is not in the data folder: {err}")


# ---- the claims as declared ---------------------------------------------------------------------------------------
def test_every_claim_declared_in_full():
    from analysis.experiments.machinery.fidelity import of
    from ui.lessons import BY_ID
    from ui.nav import page_files, url_path

    assert len({c.id for c in CLAIMS}) == len(CLAIMS)
    views = {url_path(p) for p in page_files()}
    for c in CLAIMS:
        assert c.where and c.says.endswith(".") and c.test and c.rule, c.id
        assert c.evidence and c.deviations, c.id
        for source in c.deviations:
            of(source)  # every source names a method or a trained system
        for ev in c.evidence:
            assert ev.view in views, (c.id, ev.view)
            if ev.view == "lessons":
                assert 1 <= ev.query["step"] <= len(BY_ID[ev.query["lesson"]].steps), c.id
            if ev.view == "benchmark":  # the Benchmark page's ?family= opens one of its task families
                assert ev.query["family"] in ("sts", "retrieval", "classification", "clustering", "longdoc"), c.id
    assert "PAPERS" and all(c.paper in PAPERS for c in CLAIMS)


# ---- the whole board on a tiny model ------------------------------------------------------------------------------
def test_the_whole_board_on_a_tiny_model(tiny, beir):
    """Every claim is measured or refused with what it needs (nothing fails, nothing is left for the budget); the
    board is a valid record, carries the deviations beside each claim, and renders as one standalone page."""
    needs_stsb()
    from analysis.experiments import run as measure
    from analysis.experiments.claims.html import render
    from analysis.experiments.claims.record import Config
    from analysis.experiments.machinery import records

    config = Config(**{**small(beir).__dict__, "model": "tiny"})
    seen = []
    rec = measure("claims", config, compute=compute_for(tiny), progress=lambda *a: seen.append(a))
    records.validate(rec)
    assert rec.id == "claims_tiny_llama" and rec.wall_seconds is not None and seen
    board = rec.extra["board"]
    words = {c["id"]: c["verdict"] for c in board["claims"]}
    assert set(words) == {c.id for c in CLAIMS}
    for cid, v in words.items():
        assert v["word"] in MEASURED + (verdicts.CANNOT, verdicts.NOT_MEASURED), (cid, v)
        assert v["detail"], cid
        if v["word"] in MEASURED:
            assert v["number"], cid
        if v["word"] == verdicts.NOT_MEASURED:  # only a run this machine can make, with its command
            assert "`python -m analysis" in v["detail"] and "failed" not in v["detail"], (cid, v)
    measured = [cid for cid, v in words.items() if v["word"] in MEASURED]
    assert {"kv-reroute", "kv-causal-mask", "kv-n-pairs", "kv-prompt-robust", "kv-align-uniform", "htp-long-gap",
            "htp-retrieval", "htp-sts-tp", "htp-cost", "htp-local-global", "htp-sentence-blocks"} <= set(measured)
    needs = {cid: v["detail"] for cid, v in words.items() if v["word"] == verdicts.NOT_MEASURED}
    assert "train gircse" in needs["gircse-baseline"] and "train causal2vec" in needs["c2v-readouts"]
    cannot = {cid for cid, v in words.items() if v["word"] == verdicts.CANNOT}
    assert {"kv-scale-30b", "gircse-baselines", "c2v-mteb-sota", "comp-large-n"} <= cannot
    row = next(c for c in board["claims"] if c["id"] == "kv-bias")
    assert row["quote"].startswith("performance improves from b = 0") and "Table 17" in row["where"]
    assert "0.7483" in row["paper_number"] and row["differs"]
    assert all("coverage" in p and "tested here" in p["coverage"]["line"] for p in board["papers"].values())
    kv = next(c for c in board["claims"] if c["id"] == "kv-reroute")
    assert kv["deviations"] and all(d["sentence"] for d in kv["deviations"])
    assert board["complete"]
    assert rec.table("board").column("claim") == [c.id for c in CLAIMS]
    page = render([board])
    assert all(c.id in page for c in CLAIMS) and 'class="chip"' in page and "figures-gz" in page
    assert "Coverage:" in page and "0.7483" in page  # each paper's coverage, the paper's number beside ours
    assert rec.table("coverage").column("paper") == [p["title"] for p in board["papers"].values()]
    from analysis.experiments.claims.record import headline
    from analysis.experiments.machinery.render import render as results

    line = f"| tiny-llama | {board['counts'][verdicts.HOLDS]} | {board['counts'][verdicts.REVERSED]} |"
    assert headline([rec]).splitlines()[4].startswith(line)  # the README's per-model counts
    assert "## Does the paper hold on tiny-llama? The claims board" in results({rec.id: rec})


def test_a_budget_leaves_claims_not_measured_saying_why(tiny, beir):
    needs_stsb()
    plan = prepare(tiny, compute_for(tiny), small(beir), claims=choose(["kv-reroute", "htp-sts-tp", "gircse-baseline"]),
                   rate=RATE)
    board = run(plan, budget_seconds=0.001)
    words = {c["id"]: c["verdict"] for c in board["claims"]}
    assert words["gircse-baseline"]["word"] == verdicts.NOT_MEASURED  # refused while planning: no time needed
    assert "train gircse" in words["gircse-baseline"]["detail"]
    for cid in ("kv-reroute", "htp-sts-tp"):
        assert words[cid]["word"] == verdicts.NOT_MEASURED
        assert "budget" in words[cid]["detail"] and "resumes from the cache" in words[cid]["detail"]
    assert not board["complete"]


def test_a_plan_counts_only_the_work_the_cache_lacks(tiny, beir, tmp_path):
    """A board run again plans nothing to compute for what the cache holds (the KV window, STS pairs, long documents,
    retrieval vectors), so a budget too small for the first run measures the second; a claim's estimate never
    computes anything."""
    needs_stsb()
    from cache import Store
    from cache.cached import Cached

    compute = Cached(Store(tmp_path))
    ids = choose(["kv-reroute", "htp-long-gap", "htp-retrieval"])
    first = prepare(tiny, compute, small(beir), claims=ids, rate=RATE)
    assert all(first.estimate(c.id) > 0 for c in ids) and "window" not in first.ctx.memo  # planning computed nothing
    assert run(first)["complete"]
    again = prepare(tiny, compute, small(beir), claims=ids, rate=RATE)
    assert again.as_dict()["estimate_seconds"] == 0
    budget = first.as_dict()["estimate_seconds"] / 2
    assert first.estimate("kv-reroute") > budget  # the first run could not have started it
    board = run(again, budget_seconds=budget)
    assert {c["verdict"]["word"] for c in board["claims"]} <= set(MEASURED) and board["complete"]


def test_claims_are_read_from_records_measured_on_the_model(tiny, beir, tmp_path):
    """A record that names the model's identity is read, not recomputed (the numbers are the record's, judged by the
    claim's rule); one of another model is not. The run closest to the paper is judged (the paper's vocabulary sizes)
    and the other shown beside it, its conflict said; a comparison whose fair run is missing (B2 as long as B, a
    scaling study not trained at each N) is not measured, with its command, the unfair numbers beside."""
    needs_stsb()
    from test_experiments import small_record

    from analysis.experiments.machinery import records

    T = records.Table
    tables = {
        "gircse": (T("paired", "", ("A − B", "all"), (("GIRCSE K=20 − Causal-EOS K=0", "+0.040 [+0.010, +0.070]"),
                                                       ("GIRCSE K=5 − Causal-EOS K=0", "-0.030 [-0.055, -0.007]"))),
                   T("scores", "", ("configuration", "Spearman"), (("GIRCSE K=20", 0.8), ("GIRCSE K=5", 0.73),
                                                                   ("Causal-EOS K=0", 0.76)))),
        "compression_source_vocabulary": (T("heldout", "", ("mode", "all", "context tokens per position", "n"),
                                            (("sentence", "57.5 [50.6, 64.1]", 9.6, 200),
                                             ("paragraph", "10.0 [6.6, 14.9]", 58.1, 200),
                                             ("text", "100.0 [98.1, 100.0]", 1.0, 200))),),
        "compression": (T("heldout", "", ("mode", "all", "context tokens per position", "n"),
                          (("sentence", "99.5 [97.2, 99.9]", 9.31, 200), ("paragraph", "48.5 [41.7, 55.4]", 55.7, 200),
                           ("text", "100.0 [98.1, 100.0]", 1.0, 200))),),
        "compression_people": (T("experiment_b", "", ("condition", "all", "n"),
                                 (("five people", "16.0 [10.1, 24.4]", 100),
                                  ("five people, longer run", "80.0 [71.1, 86.7]", 100),
                                  ("five people, names", "83.0 [74.5, 89.1]", 100))),
                               T("scaling", "", ("people", "all", "n", "steps trained at N (best)"),
                                 ((5, "83.0 [74.5, 89.1]", 100, "120 (best 120)"),
                                  (100, "14.0 [7.0, 26.2]", 50, "0: the 5-person run")))),
        "compression_reconstruction": (T("reconstruction", "", ("context", "token F1", "95% CI", "n"),
                                         (("per-sentence pools", 0.8, [0.75, 0.85], 100),
                                          ("no context (the floor)", 0.2, [0.15, 0.25], 100))),),
    }
    for rid, tabs in tables.items():
        records.write(small_record(id=rid, experiment=rid, models=(records.Model("x", tiny.identity),), tables=tabs),
                      tmp_path)
    records.write(small_record(id="causal2vec", experiment="causal2vec", models=(records.Model("x", "another"),)),
                  tmp_path)
    ids = ["gircse-baseline", "comp-ratio", "comp-paragraph", "comp-names", "comp-sublinear", "comp-reconstruction",
           "c2v-encoder"]
    board = run(prepare(tiny, compute_for(tiny), small(beir), claims=choose(ids), records_folder=tmp_path, rate=RATE))
    got = {c["id"]: c for c in board["claims"]}
    expected = {"gircse-baseline": (verdicts.HOLDS, "+0.040 [+0.010, +0.070]"),
                "comp-ratio": (verdicts.REVERSED, "57.5% [50.6, 64.1] against a bar of 80.4%"),  # 90% of 89.3%
                "comp-paragraph": (verdicts.HOLDS, "+47.5 points [+39.0, +55.0]"),
                "comp-reconstruction": (verdicts.HOLDS, "+0.600 [+0.529, +0.671]")}  # half-width (2 x 0.05^2)^0.5
    for cid, (word, number) in expected.items():
        assert got[cid]["verdict"] == {**got[cid]["verdict"], "word": word, "number": number}, cid
        assert got[cid]["source"].startswith("read from docs/results/"), cid
    assert "compression_source_vocabulary" in got["comp-ratio"]["source"]
    beside = " ".join(got["comp-ratio"]["beside"])
    assert "small vocabulary" in beside and "99.5%" in beside and "conflicts with the judged run" in beside
    assert got["gircse-baseline"]["values"] == {"GIRCSE K=20": 0.8, "Causal-EOS K=0": 0.76, "GIRCSE K=5": 0.73}
    assert "-0.030" in got["gircse-baseline"]["beside"][0]
    names = got["comp-names"]
    assert names["verdict"]["word"] == verdicts.NOT_MEASURED and "--names" in names["verdict"]["detail"]
    assert "+67.0 points" in names["beside"][0] and names["values"]["without names (2,000 steps) %"] == 80.0
    sub = got["comp-sublinear"]
    assert sub["verdict"]["word"] == verdicts.NOT_MEASURED and "cascade" in sub["verdict"]["detail"]
    assert "against a bar of 73.2%" in sub["beside"][0]  # 67.0 / 76.0 x 83%: the paper's ratio
    assert got["c2v-encoder"]["verdict"]["word"] == verdicts.NOT_MEASURED  # another model's record; no bridge here
    assert "train causal2vec" in got["c2v-encoder"]["verdict"]["detail"]


# ---- the cache ----------------------------------------------------------------------------------------------------
def test_a_timing_is_kept_and_the_newest_board_is_read(tmp_path):
    from cache import Store
    from cache.cached import Cached
    from cache.claims import latest_board, save_board

    store, calls = Store(tmp_path), []
    door = Cached(store)
    parts = {"timing": "kv", "model": "m", "methods": {}, "texts": ["a"], "repeats": 1}
    first = door.remember(parts, lambda: calls.append(1) or {"plain forward": [1.0, 1.0]}, modules=("analysis.eval.cost",))
    again = door.remember(parts, lambda: calls.append(1) or {"plain forward": [9.0, 9.0]}, modules=("analysis.eval.cost",))
    assert first == again == {"plain forward": [1.0, 1.0]} and calls == [1]
    old = {"model": {"identity": "m"}, "created": "2026-01-01T00:00:00+00:00", "claims": []}
    new = {**old, "created": "2026-02-01T00:00:00+00:00"}
    save_board(store, new)
    save_board(store, old)
    assert latest_board(store, "m")["created"] == new["created"] and latest_board(store, "other") is None


# ---- the command --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, says", [
    (["--out", "/no/such/folder/b.html"], "does not exist"),
    (["--out", "{tmp}/b.txt"], "must name an .html file"),
    (["--out", "{tmp}/b.html", "--budget-minutes", "0"], "--budget-minutes must be a positive"),
    (["--out", "{tmp}/b.html", "--claims", "kv-nothing"], "No claim 'kv-nothing'"),
    (["--out", "{tmp}/b.html", "--long-k", "1,long"], "--long-k must be two or more whole numbers"),
    (["--out", "{tmp}/b.html", "--n-boot", "-1"], "--n-boot must be"),
])
def test_the_command_refuses_bad_flags_before_any_work(argv, says, tmp_path, capsys):
    from cli import main

    code = main(["claims", *[a.replace("{tmp}", str(tmp_path)) for a in argv], "--model", "/no/such/model"])
    err = capsys.readouterr().err
    assert code == 2 and says in err and "Traceback" not in err and err.count("\n") == 1


def test_the_model_report_shows_the_newest_board_it_reads(tmp_path):
    from types import SimpleNamespace

    from analysis.report.html import SECTION_HTML
    from cache import Store
    from cache.claims import report_summary, save_board

    store = Store(tmp_path)
    model = SimpleNamespace(identity="m", facts=SimpleNamespace(name="/no/such/model"))
    none = report_summary(store, model)
    assert none["rows"] == [] and "No claims board for this model yet" in SECTION_HTML["claims"](
        none, {"model": {"name": "m"}}, [])
    save_board(store, {"model": {"identity": "m"}, "created": "2026-01-01T00:00:00+00:00",
                       "counts": {verdicts.HOLDS: 1, verdicts.CANNOT: 1}, "papers": {"kv": {"title": "KV-Embedding"}},
                       "claims": [{"paper": "kv", "id": "kv-reroute", "says": "Re-routing <helps>.",
                                   "verdict": {"word": verdicts.HOLDS, "number": "+0.031 [+0.012, +0.050]"}}]})
    summary = report_summary(store, model)
    assert summary["rows"][0]["word"] == verdicts.HOLDS and summary["source"].startswith("the newest board")
    html = SECTION_HTML["claims"](summary, {"model": {"name": "m"}}, [])
    assert "+0.031 [+0.012, +0.050]" in html and "Re-routing &lt;helps&gt;." in html and "1 holds here" in html


def test_the_command_writes_the_board_as_html_and_json(tiny_model_folder, tmp_path, capsys):
    """`claims` on a model folder: the estimate first, then the board; the HTML and its JSON beside it (plotly.js
    shared beside them with --shared-plotly)."""
    needs_stsb()
    from cli import main

    out = tmp_path / "board.html"
    code = main(["claims", "--model", str(tiny_model_folder), "--claims", "htp-sts-tp,gircse-baseline",
                 "--sts-sample", "16", "--n-boot", "20", "--no-cache", "--budget-minutes", "10", "--out", str(out),
                 "--shared-plotly"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err.startswith("estimate:")
    result = json.loads(captured.out)
    board = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert [c["id"] for c in board["claims"]] == ["htp-sts-tp", "gircse-baseline"]
    assert result["counts"] == board["counts"] and result["complete"]
    page = out.read_text(encoding="utf-8")
    assert "htp-sts-tp" in page and '<script src="plotly.gz.js">' in page and (tmp_path / "plotly.gz.js").is_file()
