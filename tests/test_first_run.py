"""The first run (issue 38): views that wait for a button show something useful at once for a built-in model (its
published results, labelled as recorded), and the Report page opens on the model's published report with a real
sample as a new report's default, never the demo pairs. On an empty cache without the shipped seeds, so what is
shown is what a newcomer would see if the seeds did not match the code."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptools import errors, figures, isolated_cache

PAGES = Path(__file__).resolve().parent.parent / "pages"
pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def empty_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory) as root, pytest.MonkeyPatch.context() as mp:
        mp.setenv("EMBEDSCOPE_SEEDS", "0")
        yield root


def _open(page: str, **state) -> AppTest:
    at = AppTest.from_file(str(PAGES / page), default_timeout=300)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception and not errors(at), (at.exception, errors(at))
    return at


def test_the_report_page_opens_on_the_published_report(empty_cache):
    at = _open("14_report.py")
    assert at.radio(key="report_view").value == "published"
    assert any("Recorded on" in c.value for c in at.caption)
    assert "best method" in at.table[0].value.index and {"report_html", "report_json"} <= {
        b.key for b in at.get("download_button")}
    assert at.get("plotly_chart")  # the published report's Spearman per method, drawn on the page
    assert not at.get("button")  # nothing to build: the published report is shown as it is


def test_a_new_report_defaults_to_the_report_part_of_stsb(empty_cache):
    from analysis.data import datasets

    real = datasets.get("stsb-dev-report")
    if not real.present():
        pytest.skip(f"needs STS-B in the data folder: {real.missing()}")
    at = _open("14_report.py", report_view="new")
    assert at.selectbox(key="report_set").value == real.label
    assert any("500 pair(s)" in c.value for c in at.caption)


def test_the_layer_explorer_shows_the_published_map_before_any_cell(empty_cache):
    at = _open("5_layer_explorer.py")
    assert any("the published layer map" in c.value for c in at.caption)
    fig = figures(at)[0]
    assert any(t.get("type") == "heatmap" for t in fig["data"])
