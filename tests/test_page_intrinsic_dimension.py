"""Intrinsic-dimension, Attention and Layer-explorer pages, run headless with AppTest on the real default model,
plus the `id` command. Inputs are kept small (a dozen texts / pairs) so the real model stays quick.

Results go to a temporary cache whose models/ and auto_layers/ link to the real ones (the converted model and
the once-per-model ID window behind layers=auto)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from analysis.data.corpora import demo_pairs
from apptools import isolated_cache, figures, values

REPO = Path(__file__).resolve().parent.parent
PAGES = REPO / "pages"
TIMEOUT = 1800
TEXTS = "\n".join([
    "She sat on the bank of the river and watched the water.", "He went to the bank to deposit his paycheck.",
    "The river bank was covered in wildflowers.", "The bank raised its interest rates again.",
    "A cat is sleeping on the sofa.", "A kitten naps on the couch.", "Stocks fell sharply on Monday.",
    "The market dropped at the start of the week.", "He plays the violin every evening.",
    "Music fills the house at night.", "The train to Paris was delayed.", "Our flight left two hours late.",
])

pytestmark = pytest.mark.real


@pytest.fixture(scope="module", autouse=True)
def page_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory, shared=("models", "auto_layers")) as root:
        yield root


def test_intrinsic_dimension_page_draws_trajectory_window_and_rules(real):
    at = AppTest.from_file(str(PAGES / "3_intrinsic_dimension.py"), default_timeout=TIMEOUT)
    at.session_state["id_source"] = "paste"
    at.session_state["id_paste"] = TEXTS
    at.session_state["id_methods"] = ["kv_embedding"]
    at.session_state["id_kv_embedding_layers"] = "none"
    at.session_state["id_boot"] = 5
    at.run()
    assert not at.exception, at.exception
    assert any("Not computed yet" in i.value for i in at.info)  # heavy work waits for the button ...
    recorded = figures(at)  # ... and until then the published report's trajectory is shown, labelled
    assert len(recorded) == 1 and any("Shown until you compute" in c.value for c in at.caption)
    assert len(values(recorded[0]["data"][0]["x"])) == real.facts.n_layers + 1
    at.button(key="id_compute").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    fig = figures(at)[0]
    main = [t for t in fig["data"] if t.get("mode") == "lines+markers"]
    assert len(main) == 1 and len(values(main[0]["x"])) == real.facts.n_layers + 1
    y = values(main[0]["y"])
    assert np.isnan(y[0]) and np.isfinite(y[1:]).all()  # state 0 of a fixed prompt: one distinct point
    undefined = [t for t in fig["data"] if t.get("name", "").endswith("undefined")]
    assert undefined and 0 in values(undefined[0]["x"])
    assert fig["layout"].get("shapes"), "the selected window is drawn"
    table = at.dataframe[0].value
    assert table["rule"].iloc[0] in ("u-shape", "several-minima", "flat")
    # second visit: from the cache, without pressing Compute again
    at.run()
    assert not at.exception and at.get("plotly_chart")
    assert any("from the cache" in c.value for c in at.caption)


def test_attention_page_prefix_heatmap_and_word_attention(real):
    at = AppTest.from_file(str(PAGES / "4_attention.py"), default_timeout=TIMEOUT)
    at.session_state["attn_text"] = "The bank raised its rates."
    at.session_state["attn_kv_kv_embedding_layers"] = "12,13,14,15"
    at.session_state["attn_words_methods"] = ["prompteol", "echo", "kv_embedding"]
    at.session_state["attn_words_kv_embedding_layers"] = "12,13,14,15"
    drawn = {}
    for view in ("prefix", "contextual", "words"):  # one view at a time, chosen by the radio
        at.session_state["attn_view"] = view
        at.run()
        assert not at.exception, at.exception
        assert not at.error, [e.value for e in at.error]
        (drawn[view],) = figures(at)
    prefix, contextual, words = drawn["prefix"], drawn["contextual"], drawn["words"]
    ctx = values(contextual["data"][0]["z"]).astype(float)  # (L, H) text -> contextual-token attention mass
    assert ctx.shape == (real.facts.n_layers, real.facts.n_heads) and np.all((ctx >= 0) & (ctx <= 1))
    heat = prefix["data"][0]
    z = values(heat["z"]).astype(float)  # (L, H)
    assert z.shape == (real.facts.n_layers, real.facts.n_heads)
    assert np.all(z[[0, 11, 16, 29]] == 0) and np.all(z[12:16] > 0)
    bars = [t for t in words["data"] if t["type"] == "bar"]
    assert len(bars) == 3
    for b in bars:
        assert len(values(b["x"])) == 5  # five words
        assert abs(sum(values(b["y"])) - 1) < 1e-6  # shares of the text's attention
    rest = at.dataframe[0].value
    kv_row = rest[rest["method"].str.contains("kv_embedding")].iloc[0]
    assert kv_row["on the prefix"] > 0 and rest[rest["method"].str.contains("echo")]["on the prefix"].iloc[0] == 0


def test_layer_explorer_sweeps_caches_and_resumes(real):
    def page():
        at = AppTest.from_file(str(PAGES / "5_layer_explorer.py"), default_timeout=TIMEOUT)
        at.session_state["explorer_set"] = "Demo paraphrase pairs"
        at.session_state["explorer_starts"] = (1, 29)
        at.session_state["explorer_step"] = 14
        at.session_state[f"explorer_limit_{len(demo_pairs())}"] = 12
        return at

    at = page()
    at.run()
    assert not at.exception, at.exception
    if any(b.key == "explorer_first_run" for b in at.button):
        # an empty cache: the ID trajectory behind layers=auto is not there yet; this button computes it and
        # then runs the sweep in the same rerun
        at.button(key="explorer_first_run").click().run()
    else:
        assert any("3 cell(s), 0 already computed" in m.value for m in at.markdown)
        at.button(key="explorer_run").click().run()
    assert any("3 cell(s), 0 already computed" in m.value for m in at.markdown)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    summary = "\n".join(m.value for m in at.markdown)
    assert "Best cell" in summary and "ID window" in summary and "prompt only" in summary and "PromptEOL" in summary
    fig = figures(at)[0]
    heat = next(t for t in fig["data"] if t["type"] == "heatmap")
    assert list(values(heat["x"])) == [1, 15, 29]
    assert np.all(np.isfinite(np.array(values(heat["z"]), dtype=float)))

    at2 = page()  # a new session: every cell comes from the cache; a finer grid only adds the missing ones
    at2.session_state["explorer_step"] = 7
    at2.run()
    assert any("5 cell(s), 3 already computed" in m.value for m in at2.markdown)


def test_id_command_json(tmp_path):
    data = tmp_path / "texts.txt"
    data.write_text(TEXTS + "\n")
    out = subprocess.run([sys.executable, "-m", "analysis", "id", "--data", str(data), "--bootstrap", "3",
                          "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["n_texts"] == 12 and result["params"]["layers"] == "none"
    assert len(result["trajectory"]) == 31 and result["trajectory"][0]["defined"] is False
    assert result["selection"]["rule"] in ("u-shape", "several-minima", "flat")
    bad = subprocess.run([sys.executable, "-m", "analysis", "id", "--data", str(tmp_path / "missing.txt")],
                         cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT)
    assert bad.returncode == 2 and "not found" in bad.stderr and "Traceback" not in bad.stderr
