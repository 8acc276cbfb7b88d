"""The Benchmark page's task families (issue 34) on a tiny model chosen as a folder: long documents drawn as nDCG@1
against document length per method (LongEmbed's figure), MTEB classification and clustering on Banking77's selection
part (skipped without ../shared/data), each method against the best with a paired interval."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis.models.tiny import tiny_backbone
from apptools import errors, figure, isolated_cache, tables, values

BENCH = str(Path(__file__).resolve().parent.parent / "pages" / "8_benchmark.py")


@pytest.fixture(scope="module", autouse=True)
def page_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory) as root:
        yield root


@pytest.fixture(scope="module")
def long_folder(tmp_path_factory):
    """A tiny random Llama reading 1,100 tokens: long documents of 256, 512 and 1,024 tokens fit."""
    folder = tmp_path_factory.mktemp("tiny-long-page")
    bb = tiny_backbone("llama", max_length=1100)
    bb.model.save_pretrained(folder)
    bb.tokenizer.save_pretrained(folder)
    return folder


def _open(folder, family: str) -> AppTest:
    at = AppTest.from_file(BENCH, default_timeout=600)
    at.session_state["embedscope_model"] = str(folder)
    at.session_state["bench_family"] = family
    at.run()
    at.multiselect(key="bench_methods").set_value(["last", "mean"])
    at.slider(key="bench_boot").set_value(100)
    return at


def test_long_documents_draw_ndcg_against_length_per_method(long_folder):
    at = _open(long_folder, "longdoc")
    at.slider(key="bench_longdoc_n").set_value(4)
    at.run()
    assert not at.exception, at.exception
    assert not errors(at)
    assert at.multiselect(key="bench_longdoc_lengths").options == ["256", "512", "1024"]  # up to the model's limit
    wide = tables(at)[0]
    assert list(wide.index) == ["Last token (last)", "Mean pooling (mean)"] and "(nDCG@1)" in wide.columns[0]
    spec = figure(at)
    assert [t["name"] for t in spec["data"]] == ["Last token (last)", "Mean pooling (mean)"]
    for t in spec["data"]:
        assert values(t["x"]).tolist() == [256, 512, 1024] and all(0 <= y <= 1 for y in values(t["y"]))
        assert "array" in t["error_y"]
    assert spec["layout"]["xaxis"]["type"] == "log" and "nDCG@1" in spec["layout"]["yaxis"]["title"]["text"]
    paired = tables(at)[1]
    assert len(paired) == 1 and any("(length, query) items" in c.value for c in at.caption)


def _banking_or_skip():
    from analysis.data.datasets import get

    if not get("banking77-select").present():
        pytest.skip("Banking77 not found at ../shared/data/banking77 (development data, not shipped)")


@pytest.mark.parametrize("family, metric, unit", [("classification", "accuracy", "texts"),
                                                  ("clustering", "V-measure", "experiments")])
def test_classification_and_clustering_on_banking77(family, metric, unit, tiny_folder):
    _banking_or_skip()
    at = _open(tiny_folder, family)
    sets = at.multiselect(key=f"bench_{family}_sets")
    sets.set_value([o for o in sets.options if "selection part" in o])  # never the report part for a look
    at.slider(key=f"bench_{family}_sample").set_value(200)
    at.run()
    if any(b.key == "bench_compute" for b in at.button):  # the tiny tokenizer's ~49 tokens a query: over the line
        at.button(key="bench_compute").click().run()
    assert not at.exception, at.exception
    assert not errors(at)
    wide = tables(at)[0]
    assert wide.shape == (2, 1) and f"({metric})" in wide.columns[0]
    assert any(f"same resampled {unit}" in c.value for c in at.caption)
    assert any("stratified by label" in c.value for c in at.caption)
