"""The lessons that need weights trained for the default model (GIRCSE's adapter, Causal2Vec's bridge, the
compression system) and the Gemma 3 step, walked step by step with Next on the real models, in an isolated cache.
Slow (minutes): one test per lesson."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apptools import errors, figures, isolated_cache
from ui.lessons import BY_ID

REPO = Path(__file__).resolve().parent.parent
PAGE = str(REPO / "pages" / "13_lessons.py")

pytestmark = pytest.mark.real


@pytest.fixture(scope="module", autouse=True)
def lesson_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory, shared=("models", "auto_layers")) as root:
        yield root


@pytest.mark.parametrize("lesson", ["soft-tokens", "causal2vec", "compression"])
def test_every_step_on_the_default_model(lesson):
    at = AppTest.from_file(PAGE, default_timeout=1800)
    at.query_params.update({"lesson": lesson, "step": "1"})
    at.run()
    for n in range(1, len(BY_ID[lesson].steps) + 1):
        assert not at.exception, (n, at.exception)
        assert not errors(at), (n, errors(at))
        assert at.header[0].value.startswith(f"{n}. ") and len(figures(at)) == 1
        if n < len(BY_ID[lesson].steps):
            at.button(key="lesson_next").click().run()


def test_the_id_step_switches_to_gemma3():
    at = AppTest.from_file(PAGE, default_timeout=1800)
    at.query_params.update({"lesson": "where-compress", "step": "4"})
    at.run()
    assert not at.exception and not errors(at), at.exception or errors(at)
    assert "Gemma 3" in figures(at)[0]["layout"]["title"]["text"]


def test_the_id_step_reads_a_stored_curve_without_loading_gemma3(monkeypatch):
    """Once the curve is stored, the step finds it from the model's description (`describe`): the same figure,
    and Gemma 3's weights are never loaded."""
    import analysis.models.backbone as backbone
    from ui.model import _load

    def page():
        at = AppTest.from_file(PAGE, default_timeout=1800)
        at.query_params.update({"lesson": "where-compress", "step": "4"})
        return at.run()

    first = figures(page())[0]
    load = backbone.load_backbone

    def no_gemma(name, **kwargs):
        assert name != "gemma3-270m", "Gemma 3 was loaded"
        return load(name, **kwargs)

    _load.clear()
    monkeypatch.setattr(backbone, "load_backbone", no_gemma)
    at = page()
    assert not at.exception and not errors(at), at.exception or errors(at)
    assert figures(at)[0] == first
