"""The Explain page headless with AppTest: on a tiny random Llama (a local folder) in an isolated cache, opened by its
address with both texts and two methods; the heatmap is the library's matrix; the address follows the choices; past
the budget it is one sentence. On the real default model (marker `real`) the default view runs."""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from analysis import get_method
from analysis.core import budgets
from analysis.inspect import attribution as A
from analysis.models.backbone import load_backbone
from apptools import errors, figures, isolated_cache, values
from conftest import tiny_method

REPO = Path(__file__).resolve().parent.parent
PAGE = str(REPO / "pages" / "16_explain.py")
TEXT_A, TEXT_B = "A cat sat on the mat.", "A kitten rested on a rug"


@pytest.fixture(scope="module", autouse=True)
def page_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory) as root:
        yield root


def open_page(folder, **query) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=600)
    at.session_state["embedscope_model"] = str(folder)
    at.session_state["explain_steps"] = 9  # a short path: the page's mechanics, not the integral's accuracy
    at.query_params.update(query)
    return at.run()


def test_the_address_opens_a_pair_under_two_methods(tiny_folder):
    at = open_page(tiny_folder, a=TEXT_A, b=TEXT_B, method="mean", method2="htp")
    assert not at.exception, at.exception
    assert not errors(at), errors(at)
    assert at.text_area(key="explain_a").value == TEXT_A and at.text_area(key="explain_b").value == TEXT_B
    assert [h.value for h in at.subheader] == [get_method("mean").title, get_method("htp").title]
    figs = figures(at)
    assert len(figs) == 4  # a token-pair heatmap and the curves per method
    assert len(at.get("html")) == 4  # A's and B's tokens, coloured, per method
    text = " ".join(m.value for m in at.markdown)
    assert "interaction" in text and "completeness gap" in text and "embedding says" in text
    # the heatmap is the library's matrix, each word once and the method's own tokens summed last
    ex = A.explain_pair(load_backbone(str(tiny_folder)), tiny_method("mean"), TEXT_A, TEXT_B, steps=9)
    _, _, M = A.grouped_pairs(ex)
    np.testing.assert_allclose(values(figs[0]["data"][0]["z"]).reshape(M.shape), M, rtol=1e-4, atol=1e-7)


def test_the_address_follows_the_choices_and_one_method_is_enough(tiny_folder):
    at = open_page(tiny_folder, a=TEXT_A, b=TEXT_B, method="prompteol", method2="none")
    assert not at.exception and not errors(at), (at.exception, errors(at))
    assert len(figures(at)) == 2 and at.query_params["method2"] == "none"
    at.checkbox(key="explain_second").check().run()
    assert not at.exception and at.query_params["method2"] == "last" and len(figures(at)) == 4
    at.text_area(key="explain_b").set_value("A dog ran in the park.").run()
    assert at.query_params["b"] == "A dog ran in the park."


@pytest.fixture(scope="module")
def long_folder(tmp_path_factory):
    """A tiny Llama whose 1,024 positions hold more than an explanation's budget (the shared one truncates first)."""
    from analysis.models.tiny import tiny_backbone

    folder = tmp_path_factory.mktemp("tiny_llama_long")
    bb = tiny_backbone("llama", max_length=1024)
    bb.model.save_pretrained(folder)
    bb.tokenizer.save_pretrained(folder)
    return folder


def test_past_the_budget_is_one_sentence(long_folder):
    long = " ".join(["word"] * (budgets.APP.explain_tokens + 5))
    at = open_page(long_folder, a=long, b=TEXT_B, method="last", method2="none")
    assert not at.exception, at.exception
    assert any("Too much for one request" in e for e in errors(at)), errors(at)
    assert not figures(at)


@pytest.mark.real
def test_the_default_view_on_the_real_model():
    at = AppTest.from_file(PAGE, default_timeout=1800).run()
    assert not at.exception, at.exception
    assert not errors(at), errors(at)
    assert [h.value for h in at.subheader] == [get_method("prompteol").title, get_method("last").title]
    assert len(figures(at)) == 4
    said = [m.value for m in at.markdown if "embedding says" in m.value]
    assert len(said) == 4
