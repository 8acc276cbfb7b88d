"""The Context compression page, headless on the real default model, with weights from a temporary folder (the
adapter + LoRA at their seeded initialisation), so the page's mechanics are tested whether or not trained
weights are shipped."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apptools import errors, figures, isolated_cache, tables

REPO = Path(__file__).resolve().parent.parent
PAGE = "pages/12_context_compression.py"

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    from analysis.models.backbone import load_backbone
    from analysis.compression.system import METHOD, CompressionSystem, encoder_name
    from analysis.weights.artefacts import save_artefact

    bb = load_backbone()
    folder = tmp_path_factory.mktemp("cc_weights")
    save_artefact(folder, CompressionSystem(bb).tensors(),
                  {"method": METHOD, "model_identity": bb.identity, "encoder": encoder_name()})
    return str(folder)


@pytest.fixture(scope="module", autouse=True)
def app_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory) as root:
        yield root


def use_folder(at: AppTest, folder: str) -> AppTest:
    """Choose "a folder…" among the weights and type `folder`."""
    at.radio(key="cc_weights_choice").set_value("folder").run()
    return at.text_input(key="cc_weights").set_value(folder).run()


def test_page_answers_four_modes_and_shows_pool_attention(weights):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600).run()
    at = at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    use_folder(at, weights)
    assert not at.exception, at.exception
    assert not errors(at), errors(at)
    labels = [m.label for m in at.metric]
    assert labels == ["per-sentence pools", "one paragraph pool", "full text", "no context"]  # only the open tab
    assert "x" in at.metric[0].delta  # the compression ratio is shown
    fig = figures(at)[0]
    assert len(fig["data"][0]["y"]) == 6  # the example paragraph's six sentences, one row each


def test_a_second_visit_reads_answers_and_attention_without_loading_the_system(weights, monkeypatch):
    """Answers and pool attention are stored per item: a new session shows the same metrics and figure without
    loading the encoder, adapter and LoRA."""
    from analysis.compression.system import CompressionSystem
    from ui.traces import compression_system

    def opened():
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600).run()
        at = at.switch_page(PAGE).run()
        use_folder(at, weights)
        assert not at.exception and not errors(at), at.exception or errors(at)
        return [(m.label, m.value, m.delta) for m in at.metric], figures(at)[0], at.caption

    metrics, figure, _ = opened()
    compression_system.clear()

    def not_loaded(*args, **kwargs):
        raise AssertionError("the compression system was loaded")

    monkeypatch.setattr(CompressionSystem, "from_artefact", not_loaded)
    again, figure_again, captions = opened()
    assert again == metrics and figure_again == figure
    assert any("tokens as text" in c.value for c in captions)


def test_page_without_weights_says_how_to_train(tmp_path):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600).run()
    at = at.switch_page(PAGE).run()
    use_folder(at, str(tmp_path))
    assert not at.exception
    assert any("train compression" in i.value for i in at.info)


def test_page_with_shipped_weights_answers_from_pools():
    """The shipped artefact, as a user opens the page: its training facts are shown, and on the built-in example
    (a held-out persona) the per-sentence pools give the right answer."""
    from analysis.data import personas
    from analysis.models.backbone import load_backbone
    from analysis.compression.system import default_artefact, normalise_answer

    if not (default_artefact(load_backbone()) / "manifest.json").exists():
        pytest.skip("no compression weights are shipped (python -m analysis train compression)")
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600).run()
    at = at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert any("Weights:" in c.value and "min of training" in c.value for c in at.caption)
    gold = personas.generate("heldout", 4)[3].answer
    assert normalise_answer(at.metric[0].value) == normalise_answer(gold)


def _opened_on(weights, section: str) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600).run()
    at = at.switch_page(PAGE)
    at.session_state["cc_section"] = section
    at = at.run()
    use_folder(at, weights)
    assert not at.exception and not errors(at), at.exception or errors(at)
    return at


def test_several_people_tab_splits_the_answers_attention_by_person(weights):
    """Issue 26: pick N people and see which person's pools the answer reads: one row per person, the asked one
    marked, and the asked share against chance."""
    at = _opened_on(weights, "Several people")
    assert [m.label for m in at.metric] == ["Answer from per-sentence pools"]
    rows = figures(at)[0]["data"][0]["y"]
    assert len(rows) == 5 and sum(r.startswith("▶ ") for r in rows) == 1  # five people, one asked
    assert any("chance 0.20" in c.value for c in at.caption)
    at.slider(key="cc_people").set_value(3).run()
    at.toggle(key="cc_names").set_value(False).run()
    assert not at.exception and not errors(at), at.exception or errors(at)
    assert len(figures(at)[0]["data"][0]["y"]) == 3 and any("chance 0.33" in c.value for c in at.caption)


def test_measured_tab_shows_the_recorded_tables_and_scaling_curve(weights, tmp_path, monkeypatch):
    from analysis.experiments.machinery import records
    from analysis.experiments.machinery.records import Record, Series, Table

    record = Record(id="compression_people", experiment="compression_people", title="t",
                    command="python -m analysis measure compression_people", config={}, data="d", sample=None,
                    models=(), code_version=None, date="2026-11-25", wall_seconds=None, machine=None,
                    tables=(Table("scaling", "Scaling", ("people", "all"), ((5, "80"), (10, "70"))),),
                    series=(Series("scaling", "Exact match", "people per context", (5, 10),
                                   {"each N's own run": [0.8, 0.7], "chance": [0.2, 0.1],
                                    "the five-person run, untrained on N": [0.8, 0.5]},
                                   {"each N's own run": [[0.75, 0.85], [0.65, 0.75]]}),),
                    findings=("Selection becomes copying.",))
    records.write(record, tmp_path)
    monkeypatch.setattr(records, "folder", lambda: tmp_path)
    at = _opened_on(weights, "Measured across people")
    assert len(tables(at)) == 1 and any("Selection becomes copying." in m.value for m in at.markdown)
    curve = figures(at)[0]["data"]
    assert list(curve[0]["x"]) == [5, 10] and list(curve[0]["y"]) == [0.8, 0.7]  # each N's own run
    assert list(curve[1]["y"]) == [0.2, 0.1] and list(curve[2]["y"]) == [0.8, 0.5]  # chance, the base run
    (tmp_path / "compression_people.json").unlink()
    at = _opened_on(weights, "Measured across people")
    assert any("measure compression_people" in i.value for i in at.info)


def test_reconstruction_tab_and_the_differences_from_the_source(weights, tmp_path, monkeypatch):
    """Experiment C's tab: weights trained for questions only say how to train for reconstruction, a run trained
    with --reconstruct reconstructs a held-out paragraph live, the record's examples are shown; the page lists its
    differences from the source."""
    import json

    from analysis.experiments.machinery import records
    from analysis.experiments.machinery.records import Record, Table

    monkeypatch.setattr(records, "folder", lambda: tmp_path)
    at = _opened_on(weights, "Reconstruction")
    assert any("--reconstruct 0.5" in i.value for i in at.info)
    assert any("measure compression_reconstruction" in c.value for c in at.caption)
    assert any(e.label == "Differences from the source" for e in at.expander)
    record = Record(id="compression_reconstruction", experiment="compression_reconstruction", title="t",
                    command="python -m analysis measure compression_reconstruction --weights run", config={}, data="d",
                    sample=None, models=(), code_version=None, date="2026-11-26", wall_seconds=None, machine=None,
                    tables=(Table("examples", "Examples", ("paragraph", "reconstruction", "token F1"),
                                  (("This is Ann.", "This is Ann.", 1.0),)),), findings=("Token F1 0.9.",))
    records.write(record, tmp_path)
    trained = tmp_path / "trained"
    trained.mkdir()
    (trained / "weights.safetensors").write_bytes((Path(weights) / "weights.safetensors").read_bytes())
    manifest = json.loads((Path(weights) / "manifest.json").read_text())
    manifest["hyperparameters"] = {"reconstruct": 0.5}
    (trained / "manifest.json").write_text(json.dumps(manifest))
    at = _opened_on(str(trained), "Reconstruction")
    assert tables(at)[0]["reconstruction"].tolist() == ["This is Ann."]
    assert any("Token F1 0.9." in m.value for m in at.markdown)
    at.toggle(key="cc_reconstruct").set_value(True).run()
    assert not at.exception and not errors(at), at.exception or errors(at)
    assert any(c.value.startswith("Token F1") for c in at.caption)
