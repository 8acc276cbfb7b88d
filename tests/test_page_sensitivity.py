"""The Sensitivity page, run headless with AppTest on the real default model, and the new methods offered by the
pages that list methods (Embed & compare, Attention).

Results go to a temporary cache whose models/ links to the real converted models (as tests/test_app.py does).
"""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from analysis import get_method
from analysis.inspect import sensitivity as S
from apptools import isolated_cache, figures, values

REPO = Path(__file__).resolve().parent.parent
PAGE = str(REPO / "pages" / "6_sensitivity.py")
TIMEOUT = 900
SHORT = "The cat sat on the mat. Then it slept."

pytestmark = pytest.mark.real


@pytest.fixture(scope="module", autouse=True)
def page_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory, shared=("models", "auto_layers")) as root:  # KV-Embedding's auto window
        yield root


def page(**state) -> AppTest:
    """Run the page with widget values preset (so the first run does not compute the heavier defaults)."""
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_sensitivity_page_shows_both_readouts_and_the_bound(real):
    at = page(sens_text=SHORT, sens_methods=["mean", "htp"], sens_probes=4)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    figs = figures(at)
    assert len(figs) == 1  # one figure, for the method chosen under "Figure for" (the first by default)
    names = {t["name"] for t in figs[0]["data"]}
    assert {"last-token readout", "mean readout", "bound, last", "bound, mean"} <= names
    assert figs[0]["layout"]["yaxis"]["type"] == "log"
    # the page's numbers are the library's (same seed, same probes)
    s = S.jacobian_norms(real, get_method("mean"), SHORT, layer=real.facts.n_layers, probes=4)
    last = [t for t in figs[0]["data"] if t["name"] == "last-token readout"][0]
    np.testing.assert_allclose(values(last["y"]), s.last, rtol=1e-4)
    text = " ".join(m.value for m in at.markdown)
    assert "decades" in text and "Spearman" in text and "bound" in text
    assert sum("Last-token sensitivity changes" in m.value for m in at.markdown) == 2  # a sentence per method
    assert len(at.dataframe[0].value) == 2  # and a summary row per method
    at.radio(key="sens_shown").set_value("htp").run()
    assert not at.exception, at.exception
    (fig,) = figures(at)
    assert fig["layout"]["title"]["text"].startswith(get_method("htp").title)
    at.multiselect(key="sens_methods").set_value(["mean"]).run()  # the shown method taken out: the first is shown
    assert not at.exception and figures(at)[0]["layout"]["title"]["text"].startswith("Vanilla")


def test_sensitivity_page_exact_option_and_long_text_message(real):
    # the 64-token default text is too long for exact norms: a message, not a traceback
    at = page(sens_methods=["mean"], sens_exact=True)
    assert not at.exception
    assert any("at most 24 tokens" in e.value for e in at.error)
    at.text_area(key="sens_text").set_value("A cat sat.")
    at.number_input(key="sens_probes").set_value(8)
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("largest relative error" in c.value for c in at.caption)


@pytest.mark.parametrize("page, key", [("2_embed_compare.py", "embed_methods"),
                                       ("4_attention.py", "attn_words_methods")])
def test_pages_that_list_methods_offer_tp_and_htp(page, key):
    at = AppTest.from_file(str(REPO / "pages" / page), default_timeout=TIMEOUT)
    at.session_state["attn_view"] = "words"  # the Attention page lists methods in its word view
    at.run()
    assert not at.exception, at.exception
    options = at.multiselect(key=key).options
    titles = {get_method(n).title for n in ("htp", "token_prepending")}
    assert titles <= set(options), options


def test_attention_word_view_runs_with_tp_and_htp():
    """The placeholders are extra positions the prompt's tokenization does not have; the word view must count
    them apart (with the re-routed prefix), not fail on the length mismatch."""
    at = AppTest.from_file(str(REPO / "pages" / "4_attention.py"), default_timeout=TIMEOUT)
    at.session_state["attn_view"] = "words"
    at.session_state["attn_words_methods"] = ["htp", "token_prepending", "prompteol"]
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value.set_index("method")
    assert (table.filter(like="(htp)", axis=0)["on the prefix"] > 0).all()
    assert (table.filter(like="(token_prepending)", axis=0)["on the prefix"] > 0).all()
    assert (table.filter(like="(prompteol)", axis=0)["on the prefix"] == 0).all()
    shares = table[["on the text", "on the prompt", "on the prefix"]].sum(axis=1)
    assert np.allclose(shares, 1.0, atol=1e-4)  # nothing lost by moving the placeholder columns
