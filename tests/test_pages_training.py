"""Training page (shipped bridge's curves, a live run) and the Attention page's contextual-token view, run headless
with AppTest on the real default model, in an isolated cache."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apptools import errors, figures, isolated_cache, tables

REPO = Path(__file__).resolve().parent.parent
TIMEOUT = 1800

pytestmark = pytest.mark.real


@pytest.fixture(scope="module", autouse=True)
def page_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory) as root:
        yield root


def test_training_page_shows_the_shipped_runs_and_one_runs_curves():
    from analysis.methods.causal2vec import shipped_folder
    from analysis.models.backbone import load_backbone
    from analysis.training.queue import PARTS
    from analysis.weights.artefacts import read_manifest

    at = AppTest.from_file(str(REPO / "pages" / "11_training.py"), default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    assert not errors(at)
    folder = shipped_folder(load_backbone())
    man = read_manifest(folder)
    names = [t.get("name") for t in figures(at)[0]["data"]]
    assert "loss" in names and "dev Spearman" in names and len(figures(at)) == 1  # one run's curves at a time
    table = tables(at)[0]
    assert table["steps"].iloc[0] == man["steps_done"]
    shipped = [folder / "ablations" / name for name in ("no-contextual", "concat", "mlp-only", "eos-readout",
                                                         "bidirectional", "contextual-before")]
    assert len(table) == 1 + sum((f / "manifest.json").exists() for f in shipped)  # every shipped run, one table
    trained = tables(at)[1]  # every part `train all` trains, and whether this copy holds it
    assert list(trained["part"]) == [p.label for p in PARTS]
    assert trained.set_index("part").loc["causal2vec", "weights"] == "in this copy"
    control = next((label for label in at.radio(key="train_curves").options if label.startswith("control")), None)
    if control is not None:  # a control's curves, chosen
        at.radio(key="train_curves").set_value(control).run()
        assert not at.exception and control in figures(at)[0]["layout"]["title"]["text"]


def test_a_live_run_becomes_a_bridge(page_cache):
    from analysis.data.corpora import shared_stsb
    from analysis.methods.causal2vec import bridge_choices

    if shared_stsb("train") is None:
        pytest.skip("STS-B train not found at ../shared/data/stsbenchmark (development data, not shipped)")
    at = AppTest.from_file(str(REPO / "pages" / "11_training.py"), default_timeout=TIMEOUT).run()
    at.text_input(key="train_name").set_value("t1")
    at.slider(key="train_steps").set_value(5)
    at.button[0].click().run()  # Start / continue
    assert not at.exception, at.exception
    assert any("Done" in s.value for s in at.success)
    assert any(c.endswith("/t1") for c in bridge_choices())
    assert len(figures(at)) == 2  # the chosen shipped run's curves and the live run's


def test_attention_page_shows_attention_to_the_contextual_token():
    at = AppTest.from_file(str(REPO / "pages" / "4_attention.py"), default_timeout=TIMEOUT)
    at.query_params["view"] = "contextual"  # the address opens the view (a link from a lesson or a claim)
    at.run()
    assert not at.exception, at.exception
    assert not errors(at)
    assert at.radio(key="attn_view").value == "contextual"
    ctx = [f for f in figures(at) if any(a.get("text") == "mean over heads" for a in f["layout"].get("annotations", []))]
    assert ctx, "no contextual-token figure"
    at.radio(key="attn_view").set_value("words").run()
    assert not at.exception and not errors(at)
    table = at.dataframe[-1].value
    assert "on the contextual token" in table.columns
