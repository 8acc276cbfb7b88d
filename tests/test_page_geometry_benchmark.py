"""Geometry and Benchmark pages, run headless with AppTest on the real default model.

Results go to a temporary cache whose models/ links to the real converted models (as tests/test_app.py does).
"""

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from analysis import get_method
from analysis.data.corpora import demo_pairs, demo_texts
from analysis.eval.tasks import Task, run_task
from analysis.inspect.geometry import anisotropy_by_layer, measure, positive_pairs
from apptools import isolated_cache, errors, figure, tables, values

REPO = Path(__file__).resolve().parent.parent
GEOMETRY = str(REPO / "pages" / "7_geometry.py")
BENCH = str(REPO / "pages" / "8_benchmark.py")
TIMEOUT = 900
FOUR = "A cat sat on the mat.\nA kitten rested on the rug.\nStocks fell sharply today.\nThe market dropped."

pytestmark = pytest.mark.real


@pytest.fixture(scope="module", autouse=True)
def page_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory) as root:
        yield root


# ---- Geometry -----------------------------------------------------------------------------------------------

def test_geometry_plane_has_every_method_with_intervals_matching_the_library(real):
    at = AppTest.from_file(GEOMETRY, default_timeout=TIMEOUT)
    at.run()
    at.multiselect(key="geometry_methods").set_value(["last", "mean"])
    at.slider(key="geometry_boot").set_value(100)
    at.run()
    assert not at.exception, at.exception
    assert not errors(at)
    table = at.dataframe[0].value.set_index("method")
    assert list(table.index) == ["Last token (last)", "Mean pooling (mean)"]
    pos = positive_pairs(demo_pairs())
    g = measure(get_method("mean").encode(real, pos.texts), pos.left_index, pos.right_index, n_boot=100, seed=0)
    row = table.loc["Mean pooling (mean)"]
    assert row["alignment"] == pytest.approx(g.alignment, abs=1e-3)
    assert row["uniformity"] == pytest.approx(g.uniformity, abs=1e-3)
    assert row["uniformity_low"] < row["uniformity"] < row["uniformity_high"]
    traces = figure(at)["data"]
    assert len(traces) == 2 and all("error_x" in t and "error_y" in t for t in traces)  # one point per method
    assert any("10 positive pair(s)" in c.value for c in at.caption)
    # hand-marked pairs: the editor starts from the threshold, so the numbers do not move
    at.checkbox(key="geometry_by_hand").check().run()
    assert not at.exception, at.exception
    assert at.dataframe[-1].value.set_index("method").loc["Mean pooling (mean)", "alignment"] == \
        pytest.approx(g.alignment, abs=1e-3)


def test_geometry_anisotropy_by_layer(real):
    at = AppTest.from_file(GEOMETRY, default_timeout=TIMEOUT)
    at.run()
    at.multiselect(key="geometry_methods").set_value(["mean", "prompteol"])
    at.radio(key="geometry_view").set_value("layers").run()
    at.radio(key="geometry_layers_source").set_value("paste").run()
    at.text_area(key="geometry_layers_paste").set_value(FOUR).run()
    assert not at.exception, at.exception
    assert not errors(at)
    traces = figure(at)["data"]
    assert len(traces) == 2
    assert all(len(values(t["y"])) == real.facts.n_layers + 1 for t in traces)
    want = anisotropy_by_layer(real, get_method("prompteol"), FOUR.split("\n"))
    prompteol = next(t for t in traces if "prompteol" in t["name"])
    np.testing.assert_allclose(values(prompteol["y"]), want, atol=1e-4)
    assert values(prompteol["y"])[0] == pytest.approx(1.0, abs=1e-5)  # same prompt token at hidden state 0


@pytest.mark.parametrize("kind", ["pca", "umap"])
def test_geometry_maps_one_panel_per_method_coloured_by_label(kind):
    at = AppTest.from_file(GEOMETRY, default_timeout=TIMEOUT)
    at.run()
    at.multiselect(key="geometry_methods").set_value(["last", "mean"])
    at.radio(key="geometry_view").set_value("maps").run()
    at.selectbox(key="geometry_maps_set").set_value("Demo: ambiguous words").run()
    at.radio(key="geometry_map_kind").set_value(kind).run()
    assert not at.exception, at.exception
    assert not errors(at)
    spec = figure(at)
    labels = set(demo_texts("ambiguous").labels)
    assert {t["name"] for t in spec["data"]} == labels  # coloured by label
    assert {t["xaxis"] for t in spec["data"]} == {"x", "x2"}  # two panels
    assert sum(len(values(t["x"])) for t in spec["data"]) == 2 * len(demo_texts("ambiguous"))
    hover = " ".join(h for t in spec["data"] for h in t["hovertext"])
    assert demo_texts("ambiguous").texts[0][:30] in hover  # hover shows the text
    first = [values(t["x"]).tolist() for t in spec["data"]]
    at.run()  # same seed, from the cache: the same map
    assert [values(t["x"]).tolist() for t in figure(at)["data"]] == first


# ---- Benchmark ----------------------------------------------------------------------------------------------

def test_benchmark_table_fills_matches_the_library_and_reloads_from_cache(real):
    at = AppTest.from_file(BENCH, default_timeout=TIMEOUT)
    at.run()
    at.multiselect(key="bench_methods").set_value(["last", "mean"])
    at.slider(key="bench_boot").set_value(200)
    at.run()
    assert not at.exception, at.exception
    assert not errors(at)
    wide = tables(at)[0]
    assert wide.shape == (2, 2)
    assert list(wide.columns) == ["Demo pairs (Spearman)", "Topics (accuracy)"]
    m = get_method("mean")
    want = run_task(Task("Demo pairs", "sts", demo_pairs()), lambda t: m.encode(real, t), n_boot=200)
    cell = wide.loc["Mean pooling (mean)", "Demo pairs (Spearman)"]
    assert cell.startswith(f"{want.value:.3f} [{want.lo:.3f}, {want.hi:.3f}]")
    bars = figure(at)["data"]
    assert len(bars) == 2 and all("error_y" in b for b in bars)
    assert any("4 computed now" in c.value for c in at.caption)
    paired = tables(at)[1]  # each method vs the best on each set (the probe too), paired bootstrap
    assert list(paired["data"]) == ["Demo pairs", "Topics"]
    scores = {m: float(wide.loc[m, "Demo pairs (Spearman)"].split()[0]) for m in wide.index}
    best, other = paired["best"][0], paired["method"][0]
    assert scores[best] >= scores[other] and paired["difference"][0] == pytest.approx(scores[best] - scores[other],
                                                                                      abs=2e-3)
    assert 0 < paired["p"][0] <= 1 and any("same resampled pairs" in c.value for c in at.caption)
    at.run()
    assert any("0 computed now, 4 from the cache" in c.value for c in at.caption)
    assert tables(at)[0].equals(wide)


def _beir(root, qrels):
    (root / "qrels").mkdir(parents=True)
    docs = [("d1", "Cats purr and sleep all day."), ("d2", "The stock market fell sharply."),
            ("d3", "Heavy rain is expected this weekend.")]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": i, "title": "", "text": t}) for i, t in docs))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "sleepy cats"}) + "\n"
                                        + json.dumps({"_id": "q2", "text": "shares dropped"}))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)


def test_benchmark_beir_folder_and_its_errors(tmp_path, tiny_folder, monkeypatch):
    """A BEIR folder typed on the page is scored, and a broken one is named in one sentence. On a tiny model with
    an empty data folder: the registry's SciFact (the default retrieval set where it is present) would put a real
    nano retrieval run (about ten minutes per method on SmolLM2) in front of what this test is about."""
    monkeypatch.setenv("EMBEDSCOPE_DATA", str(tmp_path / "no-data"))
    _beir(tmp_path / "toy", "q1\td1\t1\nq2\td2\t1\n")
    at = AppTest.from_file(BENCH, default_timeout=TIMEOUT)
    at.session_state["embedscope_model"] = str(tiny_folder)
    at.session_state["bench_family"] = "retrieval"
    at.run()
    at.multiselect(key="bench_methods").set_value(["mean"])
    assert at.multiselect(key="bench_retrieval_sets").value == []
    at.text_input(key="bench_beir").set_value(str(tmp_path / "toy"))
    at.run()
    assert not at.exception, at.exception
    assert not errors(at)
    assert list(tables(at)[0].columns) == ["BEIR toy (nDCG@10)"]
    _beir(tmp_path / "bad", "q1\td9\t1\n")
    at.text_input(key="bench_beir").set_value(str(tmp_path / "bad")).run()
    assert not at.exception
    assert any("document 'd9' is not in corpus.jsonl" in e for e in errors(at))


def test_benchmark_without_data_sets_says_so():
    at = AppTest.from_file(BENCH, default_timeout=TIMEOUT)
    at.run()
    at.multiselect(key="bench_sets").set_value([]).run()
    assert not at.exception
    assert any("at least one data set" in i.value for i in at.info)


def _retrieval_on(folder, beir_root) -> AppTest:
    """The Benchmark page on the model in `folder`, the Retrieval family, mean pooling on the BEIR folder."""
    at = AppTest.from_file(BENCH, default_timeout=TIMEOUT)
    at.session_state["embedscope_model"] = str(folder)
    at.session_state["bench_family"] = "retrieval"
    at.run()
    at.multiselect(key="bench_methods").set_value(["mean"])
    return at.text_input(key="bench_beir").set_value(str(beir_root)).run()


def test_long_work_waits_for_a_button_and_then_runs(tmp_path, tiny_folder, monkeypatch):
    """A retrieval set of 1,000 long documents (128k tokens at the tiny model's 128-token limit) not in the cache is
    not embedded by opening the family: the page says how many tokens and waits for the button; pressed, it scores
    the cell, and the stored cell opens at once after."""
    monkeypatch.setenv("EMBEDSCOPE_DATA", str(tmp_path / "no-data"))
    root = tmp_path / "big"
    (root / "qrels").mkdir(parents=True)
    docs = [json.dumps({"_id": f"d{i}", "title": "", "text": f"document number {i} about topic {i % 7}. " * 30})
            for i in range(1000)]
    (root / "corpus.jsonl").write_text("\n".join(docs))
    (root / "queries.jsonl").write_text("\n".join(json.dumps({"_id": f"q{i}", "text": f"topic {i}"})
                                                  for i in range(5)))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" +
                                             "".join(f"q{i}\td{i}\t1\n" for i in range(5)))
    at = _retrieval_on(tiny_folder, root)
    assert not at.exception, at.exception
    assert not at.table and any("tokens to embed" in i.value for i in at.info)
    at.button(key="bench_compute").click().run()
    assert not at.exception and not errors(at)
    assert list(tables(at)[0].columns) == ["BEIR big (nDCG@10)"]
    again = _retrieval_on(tiny_folder, root)
    assert again.table and not any("tokens to embed" in i.value for i in again.info)
