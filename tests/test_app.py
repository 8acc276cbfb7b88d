"""The app, run headless with streamlit.testing.v1.AppTest on the real default model.

Every page found in pages/ is run through app.py (so later pages are covered automatically); Embed &
compare, the sidebar and the ui widgets get behaviour tests. Cache entries go to a temporary
EMBEDSCOPE_CACHE whose models/ is a symlink to the real store's converted models (the ~30 s GGUF
conversion happens at most once, in the real store, and is never repeated per test run).
"""

import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import ui
from apptools import isolated_cache, errors

REPO = Path(__file__).resolve().parent.parent
APP = str(REPO / "app.py")
TIMEOUT = 600  # seconds per script run: the first run may convert the default model; later pages may be slow

pytestmark = pytest.mark.real


@pytest.fixture(scope="module", autouse=True)
def app_cache(tmp_path_factory):
    """A fresh cache root for this module's results, sharing the real converted models and the once-per-model
    layers=auto windows (KV-Embedding, offered by several pages)."""
    with isolated_cache(tmp_path_factory, shared=("models", "auto_layers")) as root:
        yield root


def run_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    return at.run()


def open_page(page: str, **state) -> AppTest:
    """Run app.py, switch to `page` (relative path) with `state` in the session, run it."""
    at = run_app()
    assert not at.exception, at.exception
    for key, value in state.items():
        at.session_state[key] = value
    return at.switch_page(page).run()


# ---- every page -------------------------------------------------------------------------------------------

def test_app_home_and_sidebar():
    at = run_app()
    assert not at.exception, at.exception
    assert not errors(at)
    sidebar = " ".join(c.value for c in at.sidebar.caption)
    assert "30 layers" in sidebar and "d=576" in sidebar  # the loaded model's facts
    assert "decoder layer ℓ produces hidden state ℓ+1" in sidebar
    assert "Precision: auto, so float32 for every method" in sidebar  # which precision runs, and why (#53)
    assert at.sidebar.button(key="ui_clear_cache").label == "Clear cache"
    assert any("Cache" in m.value for m in at.sidebar.markdown)
    assert at.title[0].value == "embedscope"  # the home page is the default
    page_links = at.get("page_link")
    assert len(page_links) == len(ui.page_files()) - 1  # one link per view


@pytest.mark.parametrize("page", [p.relative_to(REPO).as_posix() for p in ui.page_files()])
def test_every_page_runs(page):
    at = open_page(page)
    assert not at.exception, f"{page}: {at.exception}"
    assert not errors(at), f"{page}: {errors(at)}"
    assert at.sidebar.radio(key="ui_model_choice").value == "default"  # app.py's sidebar framed the page


def test_pages_are_titled_from_docstrings():
    titles = [ui.nav.page_title(p) for p in ui.page_files()]
    assert titles[:2] == ["Home", "Embed & compare"]
    assert len(set(ui.nav.url_path(p) for p in ui.page_files())) == len(titles)
    numbers = [int(p.name.split("_", 1)[0]) for p in ui.page_files()]
    assert numbers == list(range(1, len(numbers) + 1)), numbers  # one number per page, no gaps: the menu order


# ---- Embed & compare --------------------------------------------------------------------------------------

EMBED = "pages/2_embed_compare.py"
FOUR = "A cat sat on the mat.\nA kitten rested on the rug.\nStocks fell sharply today.\nThe market dropped."


def embed_page(text: str, methods=("last", "prompteol")) -> AppTest:
    at = run_app().switch_page(EMBED)
    at.run()
    at.radio(key="embed_source").set_value("paste").run()
    at.multiselect(key="embed_methods").set_value(list(methods))
    at.text_area(key="embed_paste").set_value(text)
    return at.run()


def test_embed_compare_two_methods_heatmaps_table_timing():
    at = embed_page(FOUR)
    assert not at.exception, at.exception
    assert not errors(at)
    charts = at.get("plotly_chart")
    assert len(charts) == 2  # one heatmap per method
    config = charts[0].proto.config
    assert '"displayModeBar": true' in config and "toImageButtonOptions" in config  # PNG from the toolbar
    downloads = [b.proto.id.rsplit("-", 1)[-1] for b in at.get("download_button")]  # ids end with the key
    assert {"csv_similarity_last", "csv_similarity_prompteol", "csv_neighbours"} <= set(downloads)
    timing, neighbours = at.dataframe[0].value, at.dataframe[1].value
    assert list(timing["cache"]) == ["miss", "miss"]
    assert (timing["seconds (computing)"] > 0).all()
    assert len(neighbours) == 4 * 3  # 4 texts x k=3 neighbours, one column per method
    assert {"Last token (last)", "PromptEOL (prompteol)"} <= set(neighbours.columns)
    # The same inputs again: both results come from the cache.
    at.run()
    assert list(at.dataframe[0].value["cache"]) == ["hit", "hit"]


def test_embed_compare_neighbours_are_right():
    # Two near-duplicates and two unrelated texts: each duplicate's first neighbour is the other.
    at = embed_page("The cat sat on the mat.\nThe cat sat on the mat!\nQuarterly revenue grew.\nIt rained in Oslo.",
                    methods=("mean",))
    table = at.dataframe[1].value
    first = table[table["rank"] == 1].set_index("text")["Mean pooling (mean)"]
    assert first["The cat sat on the mat."] == "The cat sat on the mat!"
    assert first["The cat sat on the mat!"] == "The cat sat on the mat."


def test_embed_compare_empty_input_is_a_message():
    at = embed_page("   \n\n  ")
    assert not at.exception, at.exception
    assert any("No texts" in e for e in errors(at))
    assert not at.get("plotly_chart")


def test_embed_compare_no_method_is_a_message():
    at = embed_page(FOUR, methods=())
    assert not at.exception
    assert any("at least one method" in i.value for i in at.info)


def test_huge_text_is_refused_with_a_message():
    at = embed_page("word " * (ui.MAX_CHARS // 5 + 10))
    assert not at.exception
    assert any("characters" in e and f"{ui.MAX_CHARS:,}" in e for e in errors(at))


def test_many_texts_are_limited():
    lines = "\n".join(f"Sentence number {i}." for i in range(ui.MAX_TEXTS + 20))
    at = run_app().switch_page(EMBED)
    at.run()
    at.radio(key="embed_source").set_value("paste").run()
    at.text_area(key="embed_paste").set_value(lines)
    at.multiselect(key="embed_methods").set_value([])  # stop before embedding: the input side is under test
    at.run()
    assert not at.exception
    limit = at.number_input(key=f"embed_limit_{ui.MAX_TEXTS + 20}")
    assert limit.max == ui.MAX_TEXTS and limit.value == 200  # a default limit, never all 5,020
    assert any(f"{ui.MAX_TEXTS:,}" in w.value for w in at.warning)
    assert any("200 text(s) from Pasted texts (of 5,020)" in c.value for c in at.caption)


def test_invalid_parameter_is_a_message():
    at = embed_page(FOUR, methods=("echo",))
    at.text_input(key="embed_echo_template").set_value("only one copy: {text}").run()
    assert not at.exception
    assert any("exactly twice" in e for e in errors(at))
    assert not at.get("plotly_chart")


def test_layer_parameter_is_bounded_by_the_model():
    at = embed_page(FOUR, methods=("last",))
    layer = at.number_input(key="embed_last_layer_L30")
    assert (layer.min, layer.max, layer.value) == (-31, 30, -1)
    layer.set_value(0).run()  # hidden state 0: the token embeddings
    assert not at.exception and not errors(at)
    assert "layer=0" in at.dataframe[0].value["params"][0]


# ---- sidebar: other models -------------------------------------------------------------------------------

def test_unknown_model_id_is_a_clear_error():
    at = run_app()
    at.radio(key="ui_model_choice").set_value("other").run()
    at.text_input(key="ui_model_id").set_value("no-such-org/no-such-model-xyz").run()
    assert not at.exception, at.exception
    assert any("no-such-org/no-such-model-xyz" in e and "not found" in e for e in errors(at))
    assert at.sidebar.warning  # the sidebar says the model is not loaded


def test_local_folder_model_and_truncation_message(tiny_folder):
    at = run_app()
    at.radio(key="ui_model_choice").set_value("other").run()
    at.text_input(key="ui_model_id").set_value(str(tiny_folder)).run()
    assert not at.exception and not errors(at)
    assert "4 layers" in " ".join(c.value for c in at.sidebar.caption)
    at.switch_page(EMBED).run()
    at.radio(key="embed_source").set_value("paste").run()
    at.multiselect(key="embed_methods").set_value(["mean"])
    at.text_area(key="embed_paste").set_value("short one\n" + "a long text " * 200)
    at.run()
    assert not at.exception and not errors(at)
    warned = [w.value for w in at.warning if "truncated" in w.value]
    assert warned and "limit of 128 tokens" in warned[0]
    at.run()  # from the cache now: the warning is still shown
    assert list(at.dataframe[0].value["cache"]) == ["hit"]
    assert any("truncated" in w.value for w in at.warning)


# ---- ui pieces in isolation ----------------------------------------------------------------------------

def test_clear_cache_keeps_model_weights_and_removes_auto_layer_records(tmp_path, monkeypatch):
    import cache

    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path))
    store = cache.Store(tmp_path)
    store.put(cache.make_key({"x": 1}), {"a": np.ones(1000)}, namespace="embeddings")
    store.put(cache.make_key({"x": 2}), {"ids": np.ones(31)}, namespace=cache.keys.AUTO_LAYERS)  # a layers=auto window
    legacy = tmp_path / "auto_layers" / ("ab" * 16 + ".json")  # a record of the layout before it was an entry
    legacy.write_text('{"layers": [9, 10, 11, 12]}')
    weights = tmp_path / "models" / "some-model" / "model.safetensors"
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"\0" * 2048)

    def script():
        import ui.model

        ui.model.cache_panel()

    at = AppTest.from_function(script, default_timeout=60).run()
    assert "2 entries" in at.markdown[0].value and "2.0 KB" in at.caption[0].value
    at.button(key="ui_clear_cache").click().run()
    assert not at.exception
    assert store.count() == 0 and weights.is_file() and not (tmp_path / "auto_layers").exists()
    assert "0 entries" in at.markdown[0].value and any("Removed 3" in s.value for s in at.success)
    assert "0 B of results" in at.markdown[0].value  # nothing the size panel counted is left behind


def test_every_method_gets_parameter_widgets():
    def script():
        import streamlit as st

        import ui
        from analysis.methods import list_methods

        with ui.user_errors():
            methods = ui.method_picker("t", default=[m.name for m in list_methods()])
            st.session_state["out"] = [m.name for m in methods]

    from analysis.methods import list_methods

    at = AppTest.from_function(script, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    assert not errors(at)
    assert at.session_state["out"] == [m.name for m in list_methods()]
    declared = [m for m in list_methods() if m.deviations]  # each also gets its "differences from the paper"
    assert len(at.expander) == len(list_methods()) + len(declared)
    assert sorted(e.label for e in at.expander if e.label.endswith("differences from the paper")) == \
        sorted(f"{m.title}: differences from the paper" for m in declared)


def test_shown_runs_once_and_keeps_warnings():
    def script():
        import warnings

        import numpy as np
        import streamlit as st

        import ui
        from cache.compute import computed

        def compute(progress):
            st.session_state["calls"] = st.session_state.get("calls", 0) + 1
            progress(1, 2, "half way")
            warnings.warn("something to know")
            progress(2, 2, "done")
            return {"x": np.arange(3.0)}, {"note": "hi"}

        parts = {"v": 1, "t": st.session_state.get("t", 0)}
        arrays, meta = ui.shown("Test job", lambda progress: computed(ui.store(), "uitest", parts, compute, progress))
        st.session_state["meta"] = meta
        st.session_state["x"] = arrays["x"].tolist()

    at = AppTest.from_function(script, default_timeout=TIMEOUT)
    at.session_state["t"] = time.time()  # a fresh key per test run
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["x"] == [0.0, 1.0, 2.0] and at.session_state["calls"] == 1
    assert at.session_state["meta"]["cache_hit"] is False
    at.run()
    assert at.session_state["calls"] == 1 and at.session_state["meta"]["cache_hit"] is True
    assert at.session_state["meta"]["note"] == "hi"
    assert any("something to know" in w.value for w in at.warning)  # shown again on the hit


def test_pairs_input_counts():
    def script():
        import ui

        with ui.user_errors():
            ui.pairs_input("p")

    at = AppTest.from_function(script, default_timeout=TIMEOUT).run()
    assert not at.exception and not errors(at)
    assert any("pair(s)" in c.value for c in at.caption)
    at.selectbox(key="p_set").set_value("Lee corpus (human ratings)").run()
    assert any("1,225 pair(s), 50 distinct texts" in c.value for c in at.caption)


# ---- Compare models -----------------------------------------------------------------------------------------

def test_compare_models_reads_the_cache_without_loading_the_models(monkeypatch):
    """Both built-in models, once converted, are described from their folders: opening the page loads neither
    (loading Gemma 3 too took 5 s of the page's first figure)."""
    import ui.model
    from analysis import load_backbone

    for name in ("default", "gemma3-270m"):
        load_backbone(name)  # converted (the suite's other tests do the same)

    loaded, real = [], ui.model._try_load

    def recorded(name):
        loaded.append(name)
        return real(name)

    monkeypatch.setattr(ui.model, "_try_load", recorded)
    at = open_page("pages/10_compare_models.py")
    assert not at.exception, at.exception
    assert not errors(at)
    assert at.get("plotly_chart")
    assert "gemma3-270m" not in loaded, loaded  # the sidebar's model is app.py's, loaded once per server


@pytest.mark.parametrize("page", ["app.py", "pages/3_intrinsic_dimension.py", "pages/4_attention.py",
                                  "pages/5_layer_explorer.py", "pages/6_sensitivity.py", "pages/7_geometry.py"])
def test_a_stored_first_figure_needs_no_model_load(page, monkeypatch):
    """The sidebar's facts and a view's stored first figure need only the model's description (`LazyBackbone`): the
    seconds of importing transformers' modeling code and loading the weights are paid when a computation needs
    them, not on opening the app (issue 38)."""
    import ui.model

    ui.model._lazy.clear()  # a handle an earlier test loaded would hide a load
    loads, real = [], ui.model._load_shown
    monkeypatch.setattr(ui.model, "_load_shown", lambda *a: loads.append(a) or real(*a))
    at = run_app() if page == "app.py" else open_page(page)
    assert not at.exception and not errors(at), at.exception or errors(at)
    sidebar = " ".join(c.value for c in at.sidebar.caption)
    assert "30 layers" in sidebar and "135 M parameters" in sidebar  # the facts a load gives, read from the folder
    assert page == "app.py" or at.get("plotly_chart")
    assert not loads, f"{page} loaded the model"


def test_sensitivity_tokenizes_only_before_real_work():
    """The token budget guards computing Jacobians; the stored default (a seed) passed it when it was computed, so
    the page's first figure reads it without the tokenizer's seconds (issue 38's profile: 2.6 of its 10 s)."""
    import ui.model

    ui.model._lazy.clear()
    at = open_page("pages/6_sensitivity.py")
    assert not at.exception and not errors(at) and at.get("plotly_chart")
    assert ui.model._lazy("default", "cpu", "auto")._tokenizer is None
    at.text_area(key="sens_text").set_value("A text nobody has measured the Jacobians of yet.").run()
    assert ui.model._lazy("default", "cpu", "auto")._tokenizer is not None  # a new text is checked first


def test_compare_models_reads_the_methods_table_from_the_cache():
    """Cells that `analysis bench` stored for both built-in models show up in the table, with the cost ratio to
    `last` on the same model (known values written into this module's private cache)."""
    import cache
    from analysis import load_backbone
    from analysis.data.corpora import shared_stsb
    from analysis.methods import get_method
    from analysis.eval.tasks import load_task, select_task
    from cache.keys import BENCH, bench_parts

    if shared_stsb("dev") is None:
        pytest.skip("STS-B dev not found at ../shared/data/stsbenchmark")
    task, _ = select_task(load_task("stsb-dev"), sample=500, seed=0)  # the page's default: 500 pairs by genre
    store = cache.default_store()
    known = {("default", "last"): (0.40, 10.0), ("default", "prompteol"): (0.81, 17.5),
             ("gemma3-270m", "last"): (0.30, 20.0), ("gemma3-270m", "prompteol"): (0.69, 30.0)}
    for (model, method), (rho, seconds) in known.items():
        parts = bench_parts(load_backbone(model).identity, get_method(method), task, n_boot=1000, seed=0)
        store.get_or_compute(parts, lambda: ({"score": np.array([rho, rho - 0.05, rho + 0.05])},
                                             {"metric": "spearman", "n": 500, "task": task.name,
                                              "encode_seconds": seconds}), namespace=BENCH)
    at = open_page("pages/10_compare_models.py", cmp_section="methods")
    assert not at.exception, at.exception
    assert not errors(at)
    table = at.dataframe[0].value
    flat = {(str(m), str(col[0]), str(col[1])): v for m, row in table.iterrows() for col, v in row.items()}
    assert flat[("prompteol", "Spearman", "SmolLM2-135M-Instruct")] == pytest.approx(0.81)
    assert flat[("prompteol", "Spearman", "Gemma 3 270M (base)")] == pytest.approx(0.69)
    assert flat[("prompteol", "× last", "SmolLM2-135M-Instruct")] == pytest.approx(1.75)
    assert flat[("prompteol", "× last", "Gemma 3 270M (base)")] == pytest.approx(1.5)
    assert flat[("prompteol", "95% CI", "SmolLM2-135M-Instruct")] == "[0.760, 0.860]"
    from analysis.experiments.machinery import records

    at.select_slider(key="cmp_limit").set_value(200).run()  # a sample nothing was computed on
    assert not at.exception, at.exception
    assert any("the published record instead" in c.value for c in at.caption)  # labelled as the record
    recorded = at.dataframe[0].value.set_index("method")
    scores = records.read("methods_models").table("scores")
    want = dict(zip(scores.column("method"), scores.column("SmolLM2-135M-Instruct")))
    assert recorded.loc["prompteol", "SmolLM2-135M-Instruct: Spearman"] == pytest.approx(want["prompteol"])
