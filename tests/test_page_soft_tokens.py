"""Soft tokens page, run headless with AppTest on the real default model (marker `real`), and its recorded K curve
with the fair baseline on a tiny random model (a local folder) with a stand-in results record.

Results go to a temporary cache whose models/ links to the real converted models (as tests/test_app.py does).
"""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from analysis.data.corpora import demo_pairs
from analysis.methods.soft_tokens import DEFAULT_INSTRUCTION
from analysis.inspect.generation import generate_soft_tokens, scaling_curve
from apptools import isolated_cache, errors, figures, tables, values

REPO = Path(__file__).resolve().parent.parent
PAGE = str(REPO / "pages" / "9_soft_tokens.py")
TIMEOUT = 900
TEXT = "The cat sat on the mat."



@pytest.fixture(scope="module", autouse=True)
def page_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory) as root:
        yield root


def small_page(k=4, adapter_choice=None, **widgets) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.run()
    if adapter_choice:
        at.radio(key="soft_adapter_choice").set_value(adapter_choice).run()
    for key, value in widgets.items():
        at.text_input(key=key).set_value(value)
    at.run()
    if any(getattr(e, "key", None) == "soft_text" for e in at.text_area):  # absent when the page stopped early
        at.text_area(key="soft_text").set_value(TEXT)
        at.slider(key="soft_k").set_value(k)
    return at.run()


def open_section(at: AppTest, name: str) -> AppTest:
    """Switch the page's tabs to `name` (only the open tab runs and draws) and rerun."""
    at.session_state["soft_section"] = name
    return at.run()


@pytest.mark.real
def test_page_runs_with_defaults_on_the_shipped_adapter():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    assert not errors(at)
    assert at.radio(key="soft_adapter_choice").value == "shipped"
    assert any("trained for this model" in s.value for s in at.success)
    table = tables(at)[0]
    assert table.shape[0] == 10  # K = 10 steps by default
    assert [t.label for t in at.tabs] == ["Step by step", "Trained vs frozen", "Two instructions",
                                          "How the adapter was trained", "Test-time scaling"]
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert titles == ["Probability of the leading tokens at each step"]  # the first tab, one figure: shown in 3 s
    titles = [f["layout"]["title"]["text"] for f in figures(open_section(at, "Trained vs frozen"))]
    assert any(t.startswith("trained:") for t in titles) and any(t.startswith("frozen:") for t in titles)
    open_section(at, "How the adapter was trained")
    assert not at.exception, at.exception
    losses = next(f for f in figures(at) if "Per-step contrastive losses" in f["layout"]["title"]["text"])
    assert [d["name"] for d in losses["data"]][:5] == [f"L_{k}" for k in range(1, 6)]


@pytest.mark.real
def test_frozen_choice_says_so():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    at.radio(key="soft_adapter_choice").set_value("none").run()
    assert not at.exception, at.exception
    assert any("the model is frozen" in i.value and "contrastive" in i.value for i in at.info)
    assert [t.label for t in at.tabs] == ["Step by step", "Two instructions", "Test-time scaling"]


@pytest.mark.real
def test_step_view_matches_the_library(real):
    at = small_page(k=4)
    assert not at.exception, at.exception
    assert not errors(at)
    want = generate_soft_tokens(real, TEXT, DEFAULT_INSTRUCTION, k=4, topn=8)
    table = tables(at)[0]
    assert list(table.index) == ["step 1", "step 2", "step 3", "step 4"]
    np.testing.assert_allclose(table["entropy"].to_numpy(), np.round(want["entropy"], 2), atol=0.011)
    first = table.iloc[0, 1]  # "token  p" of step 1, rank 1
    assert first.endswith(f"{want['top_probs'][0, 0]:.3f}")
    heat = figures(at)[0]["data"][0]
    assert heat["type"] == "heatmap" and heat["x"] == [f"step {s}" for s in range(1, 5)]
    at.radio(key="soft_step_figure").set_value("curves").run()
    curves = next(f for f in figures(at) if "drift per step" in f["layout"]["title"]["text"])
    drift = values(next(t for t in curves["data"] if t.get("xaxis") == "x2")["y"])  # the right-hand panel
    np.testing.assert_allclose(drift, want["drift"], atol=1e-4)
    assert drift[-1] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.real
def test_two_instructions_side_by_side(real):
    at = open_section(small_page(k=3, soft_instr_b="Which emotion does this text express?"), "Two instructions")
    assert not at.exception, at.exception
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert any(t.startswith("A: ") for t in titles) and any(t.startswith("B: Which emotion") for t in titles)
    only = tables(at)[0]  # the only table of this tab
    assert list(only["instruction"]) == ["A only", "B only", "both"]
    a = generate_soft_tokens(real, TEXT, DEFAULT_INSTRUCTION, k=3, topn=8)
    b = generate_soft_tokens(real, TEXT, "Which emotion does this text express?", k=3, topn=8)
    cos = float(a["embedding"] @ b["embedding"])
    assert any(f"{cos:.3f}" in c.value for c in at.caption)


@pytest.mark.real
def test_hard_mode_and_top_k():
    at = small_page(k=3)
    at.radio(key="soft_mode").set_value("hard")
    at.number_input(key="soft_top_k").set_value(5)
    at.run()
    assert not at.exception, at.exception
    assert not errors(at)
    table = tables(at)[0]
    assert (table["entropy"] <= np.log(5) + 0.01).all()  # top-5 truncation bounds the entropy


@pytest.mark.real
def test_test_time_scaling_matches_the_library_and_is_cached(real):
    at = open_section(small_page(k=2, adapter_choice="none"), "Test-time scaling")
    at.radio(key="soft_pairs_source").set_value("set")
    at.selectbox(key="soft_pairs_set").set_value("Demo paraphrase pairs")
    at.run()
    at.multiselect(key="soft_ks").set_value([1, 3])
    from analysis.inspect.generation import adapter_variants

    shipped = next(label for label, a in adapter_variants(real).items() if a == "shipped")
    at.multiselect(key="soft_variants").set_value([shipped, "frozen (no adapter)"])
    at.toggle(key="soft_scaling_run").set_value(True)
    at.run()
    assert not at.exception, at.exception
    assert not errors(at)
    # the live curve on the chosen pairs, not the recorded held-out one drawn above it
    fig = next(f for f in figures(at) if f["layout"]["title"]["text"].endswith(": Spearman vs K"))
    for line, adapter in zip(fig["data"], ["shipped", "none"]):
        want = scaling_curve(real, demo_pairs(), ks=(0, 1, 3), adapter=adapter)
        assert values(line["x"]).tolist() == [0, 1, 3]
        np.testing.assert_allclose(values(line["y"]), want["spearman"], atol=1e-6)
        np.testing.assert_allclose(values(line["error_y"]["array"]), want["ci"][:, 1] - want["spearman"], atol=1e-6)
    table = at.dataframe[-1].value
    assert list(table["K"]) == [0, 1, 3, 0, 1, 3]
    at.run()
    assert any("from the cache" in c.value for c in at.caption)


@pytest.mark.real
def test_adapter_folder(tmp_path, real):
    at = small_page(k=2, adapter_choice="folder", soft_adapter=str(tmp_path / "missing"))
    assert not at.exception, at.exception
    assert any("does not exist" in e for e in errors(at))

    import copy

    import torch
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    peft_model = get_peft_model(copy.deepcopy(real.model), LoraConfig(r=2, target_modules=["q_proj", "v_proj"],
                                                                      init_lora_weights=False))
    peft_model.save_pretrained(tmp_path / "lora")
    del peft_model
    at = small_page(k=2, adapter_choice="folder", soft_adapter=str(tmp_path / "lora"))
    assert not at.exception, at.exception
    assert not errors(at)
    assert any("Adapter loaded" in s.value for s in at.success)
    assert not any("the model is frozen" in i.value for i in at.info)
    frozen = generate_soft_tokens(real, TEXT, DEFAULT_INSTRUCTION, k=2, topn=8, adapter="none")
    entropy = tables(at)[0]["entropy"].to_numpy()
    assert not np.allclose(entropy, np.round(frozen["entropy"], 2))


@pytest.mark.real
def test_bad_input_is_a_message_not_a_traceback():
    at = small_page(k=2, soft_instr_a="Put {text} here")
    assert not at.exception, at.exception
    assert any("must not contain {text}" in e for e in errors(at))
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    at.text_area(key="soft_text").set_value("   ").run()
    assert not at.exception, at.exception
    assert any("Enter a text" in e for e in errors(at))


# ---- the recorded K curve, on a tiny model -------------------------------------------------------------------------
def recorded(identity: str, adapters: dict | None = None):
    """A stand-in for docs/results/gircse.json, in the shape `measure gircse` writes."""
    from analysis.experiments.machinery.records import Model, Record, Sample, Series, Table

    def ci(ys):
        return [[round(y - 0.1, 2), round(y + 0.1, 2)] for y in ys]

    lines = {"GIRCSE": [0.5, 0.55, 0.6], "frozen model": [0.3, 0.2, 0.25]}
    scores = [(f"{label} K={k}", y, c) for label, ys in lines.items() for k, y, c in zip((0, 1, 5), ys, ci(ys))]
    scores += [("Causal-EOS K=0", 0.52, [0.42, 0.62]), ("ablation icr-mean (older recipe) K=5", 0.4, [0.3, 0.5]),
               ("PromptEOL", 0.65, [0.6, 0.7])]
    return Record(id="gircse", experiment="gircse", title="t", command="python -m analysis measure gircse",
                  config={}, data="STS-B dev report part", sample=Sample(500, "stratified by genre"),
                  models=(Model("tiny", identity),), code_version="0+x", date="2026-11-25", wall_seconds=1.0,
                  machine=None,
                  tables=(Table("scores", "s", ("configuration", "Spearman", "95% CI"), tuple(scores)),
                          Table("paired", "p", ("A − B", "all"), (("GIRCSE K=5 − Causal-EOS K=0",
                                                                   "+0.080 [+0.010, +0.150]"),))),
                  series=(Series("k_curve", "k", "K", (0, 1, 5), lines, {k: ci(v) for k, v in lines.items()}),
                          Series("cost", "c", "K", (0, 1, 5), {"× plain forward": [2.0, 2.6, 4.2]})),
                  extra={"adapters": adapters or {}})


def open_on(folder, section="Test-time scaling") -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state["embedscope_model"] = str(folder)
    at.session_state["soft_section"] = section
    return at.run()


def test_recorded_curve_shows_the_fair_baseline_without_computing(tiny_folder, tmp_path, monkeypatch):
    from analysis import load_backbone
    from analysis.experiments.machinery import records

    monkeypatch.setattr(records, "folder", lambda: tmp_path)
    records.write(recorded(load_backbone(str(tiny_folder)).identity), tmp_path)
    at = open_on(tiny_folder)
    assert not at.exception, at.exception
    assert not errors(at)
    fig = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("Held-out STS-B"))
    names = [d["name"] for d in fig["data"]]
    assert names == ["GIRCSE", "frozen model", "Causal-EOS (K = 0)", "PromptEOL",
                     "ablation icr-mean (older recipe) K=5"]
    baseline = fig["data"][2]
    assert values(baseline["y"]).tolist() == [0.52, 0.52] and baseline["line"]["dash"] == "dash"
    assert [(s["y0"], s["y1"]) for s in fig["layout"]["shapes"]] == [(0.42, 0.62)]  # its 95% band
    np.testing.assert_allclose(values(fig["data"][0]["y"]), [0.5, 0.55, 0.6])
    assert any("fair baseline Causal-EOS" in c.value for c in at.caption)
    claims = next(d.value for d in at.dataframe if "A − B" in d.value.columns)
    assert claims.iloc[0, 0] == "GIRCSE K=5 − Causal-EOS K=0"
    assert not any("out of date" in w.value for w in at.warning)
    assert not at.toggle(key="soft_scaling_run").value  # nothing long runs on the first view


def test_a_stale_or_foreign_record_says_so(tiny_folder, tmp_path, monkeypatch):
    from analysis import load_backbone
    from analysis.experiments.machinery import records

    monkeypatch.setattr(records, "folder", lambda: tmp_path)
    records.write(recorded(load_backbone(str(tiny_folder)).identity, {"shipped": "shipped@0"}), tmp_path)
    at = open_on(tiny_folder)
    assert not at.exception, at.exception
    assert any("shipped adapter changed" in w.value and "out of date" in w.value for w in at.warning)
    records.write(recorded("another model"), tmp_path)
    at = open_on(tiny_folder)
    assert not at.exception, at.exception
    assert any("No K curve is recorded for this model" in i.value for i in at.info)
    assert not any(f["layout"]["title"]["text"].startswith("Held-out STS-B") for f in figures(at))


def test_the_fair_baseline_is_a_model_choice_with_its_training_log(tiny_folder, tmp_path, monkeypatch):
    """With a (stand-in) shipped GIRCSE adapter and Causal-EOS baseline for the model, the page offers both; the
    baseline's steps show what it writes though it was never trained to generate, and its manifest's log."""
    from analysis import load_backbone
    from analysis.experiments.machinery import records
    from analysis.weights import artefacts
    from analysis.weights.adapters import PLACES
    from tests.test_gircse_shipping import fake_adapter

    monkeypatch.setattr(records, "folder", lambda: tmp_path / "no-records")
    monkeypatch.setattr(artefacts, "ARTEFACTS", tmp_path / "artefacts")
    bb = load_backbone(str(tiny_folder))
    model_dir = artefacts.shipped_dir("gircse", bb.facts)
    fake_adapter(bb, model_dir, seed=1)
    fake_adapter(bb, model_dir / PLACES["causal-eos"], seed=2, objective="causal-eos")
    at = open_on(tiny_folder, "Step by step")
    assert not at.exception, at.exception
    assert at.radio(key="soft_adapter_choice").options == ["Trained here (GIRCSE, shipped adapter)",
                                                          "Fair baseline (Causal-EOS)", "Frozen (no adapter)",
                                                          "A folder…"]
    at.radio(key="soft_adapter_choice").set_value("causal-eos").run()
    assert not at.exception, at.exception
    assert not errors(at)
    assert any("never trained to do" in i.value for i in at.info)
    assert "How the adapter was trained" in [t.label for t in at.tabs]
    assert any("Objective **causal-eos**" in c.value for c in open_section(at, "How the adapter was trained").caption)
    titles = [f["layout"]["title"]["text"] for f in figures(open_section(at, "Trained vs frozen"))]
    assert any(t.startswith("trained:") for t in titles)  # what it writes, beside the frozen model's
    variants = open_section(at, "Test-time scaling").multiselect(key="soft_variants").value
    assert variants == ["GIRCSE (shipped)", "Causal-EOS (fair baseline)", "frozen (no adapter)"]


def test_soft_generation_is_read_back_from_the_store(tiny_folder, tmp_path, monkeypatch):
    """A soft-token report goes through the disk cache: a second call (nothing held in memory) reads the same report
    without generating or loading the adapter, the settings' defaults spelled out or not; a retrained adapter is a
    new entry."""
    from analysis import load_backbone
    from analysis.weights import artefacts
    from tests.test_gircse_shipping import fake_adapter
    from ui import traces

    monkeypatch.setattr(artefacts, "ARTEFACTS", tmp_path / "artefacts")
    bb = load_backbone(str(tiny_folder))
    fake_adapter(bb, artefacts.shipped_dir("gircse", bb.facts), seed=1)
    first = traces.soft_generation(bb, TEXT, DEFAULT_INSTRUCTION, k=3, adapter="shipped")
    library = generate_soft_tokens(bb, TEXT, DEFAULT_INSTRUCTION, k=3, adapter="shipped")

    def same(a, b):
        assert a.keys() == b.keys()
        for key, value in a.items():
            if isinstance(value, np.ndarray):
                assert isinstance(b[key], np.ndarray) and b[key].dtype == value.dtype, key
                np.testing.assert_array_equal(b[key], value, err_msg=key)
            else:
                assert b[key] == value and type(b[key]) is type(value), key

    same(library, first)

    def not_again(*args, **kwargs):
        raise AssertionError("generated again")

    monkeypatch.setattr("analysis.inspect.generation.generate_soft_tokens", not_again)  # what cache.compute calls
    same(first, traces.soft_generation(bb, TEXT, DEFAULT_INSTRUCTION, k=3, topn=10, mode="soft", adapter="shipped"))
    fake_adapter(bb, artefacts.shipped_dir("gircse", bb.facts), seed=2)
    with pytest.raises(AssertionError, match="generated again"):
        traces.soft_generation(bb, TEXT, DEFAULT_INSTRUCTION, k=3, adapter="shipped")
