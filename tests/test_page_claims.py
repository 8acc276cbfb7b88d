"""The Claims page headless (AppTest) on the real default model, in a fresh cache: no board yet says how to get one;
the estimate comes first, then the run, whose board is shown (every claim in one table, then one paper's cards: verdict
chips with their numbers, the deviations beside each claim, links to the views with the evidence) and offered as a standalone HTML file; the board is stored,
so the page opened again shows it without running anything, and Compare models puts it beside the other model's. Claims read from the published records and counted in
tokens keep it quick."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from analysis.experiments.claims.board import CLAIMS
from apptools import isolated_cache

PAGE = Path(__file__).resolve().parent.parent / "pages" / "15_claims.py"
QUICK = ["gircse-scaling", "comp-ratio", "c2v-length", "comp-paragraph"]  # read from records, or counted in tokens
QUICK_ORDER = ["gircse-scaling", "c2v-length", "comp-ratio", "comp-paragraph"]  # the board's order

pytestmark = pytest.mark.real


@pytest.fixture(scope="module", autouse=True)
def page_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory) as root:
        yield root


def test_estimate_first_then_the_board_with_chips_links_and_deviations_then_compare_models(real):
    at = AppTest.from_file(str(PAGE), default_timeout=1800)
    at.run()
    assert not at.exception, at.exception
    assert (any("No claims board for this model yet" in i.value for i in at.info)  # or the published board
            or any(c.value.startswith("Shown") for c in at.caption))
    at.session_state["claims_only"] = QUICK
    at.button(key="claims_estimate").click().run()
    assert not at.exception, at.exception
    assert any(i.value.startswith("Estimate") for i in at.info)
    at.button(key="claims_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    overview = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    assert sorted(overview["claim"]) == sorted(QUICK)  # every claim at a glance, whichever paper's cards are open
    text = ""
    for paper in dict.fromkeys(c.paper for c in CLAIMS if c.id in QUICK):  # the cards of the board's papers
        at.radio(key="claims_paper").set_value(paper).run()
        assert not at.exception, at.exception
        text += "\n".join(m.value for m in at.markdown)
    assert ":green-badge[holds here]" in text and ":red-badge[reversed here]" in text
    assert "(soft_tokens)" in text and "(lessons?lesson=compression&step=2)" in text  # evidence links
    assert "**Paper:**" in text and "**Coverage:**" in text  # the paper's number beside ours, each paper's coverage
    assert any(e.label.startswith("Deviations beside it") for e in at.expander)
    assert at.get("plotly_chart")
    assert [b for b in at.get("download_button")]
    again = AppTest.from_file(str(PAGE), default_timeout=600)
    again.run()
    assert not again.exception, again.exception
    assert any("the newest board in this cache" in c.value for c in again.caption)

    compare = AppTest.from_file(str(PAGE.parent / "10_compare_models.py"), default_timeout=600)
    compare.session_state["cmp_section"] = "claims"
    compare.run()
    assert not compare.exception, compare.exception
    table = next(d.value for d in compare.dataframe if "the paper says" in d.value.columns)
    assert list(table["claim"]) == QUICK_ORDER and "SmolLM2-135M-Instruct" in table.columns
    assert "Gemma 3 270M (base)" in table.columns  # its published board (docs/results/claims_gemma3_270m.json)
