"""Hostile input in the app (issue 10): every string a visitor supplies (model names, pasted texts, labels,
instructions) is shown as plain text, never as Markdown, HTML or a Plotly label; bad input is one sentence on
the page and never a traceback; four sessions at once and a cache cleared while they write raise nothing.
AppTest on a tiny random model saved as a folder."""

# ruff: noqa: F811 -- pytest fixtures imported from hostile.py are named again as test arguments
from __future__ import annotations

import html
import json
import threading
from pathlib import Path

import numpy as np
import pytest

from analysis.core import budgets
from analysis.methods import get_method
from apptools import figures, isolated_cache, values
from hostile import REPO, broken_dirs, long_text, one_sentence, plain, rendered, tiny_dir  # noqa: F401 -- fixtures

APP = str(REPO / "app.py")


MARKUP = ["![](http://example.com/x.png)", "<b>bold</b>", '<a href="http://example.com">link</a>', "$x^2$ :red[x]",
          "[link](javascript:alert(1))", "**strong** _em_ `code` # heading"]


@pytest.mark.parametrize("text", MARKUP)
def test_md_and_label_show_user_text_literally(text):
    from ui.text import label, md

    html_out = rendered(md(text))
    assert "<img" not in html_out and "<a " not in html_out and "<b>" not in html_out and "<strong>" not in html_out
    assert html.unescape(html_out).strip() == f"<p>{text}</p>"
    assert "<" not in label(text) and html.unescape(label(text)) == text


@pytest.mark.parametrize("text", MARKUP)
def test_static_table_cells_are_shown_as_typed(text):
    """ui.show_table escapes every header, row name and cell (st.table renders Markdown); floats keep six
    significant digits, missing values are blank."""
    from ui.figures import _cell
    from ui.text import md

    assert _cell(text) == md(text)
    assert html.unescape(rendered(_cell(text))).strip() == f"<p>{text}</p>"
    assert (_cell(float(np.float32(1.31))), _cell(None), _cell(float("nan")), _cell(3)) == ("1.31", "", "", "3")


# ==== the pages (AppTest on the tiny model folder) ===============================================================
@pytest.fixture(scope="module")
def app_cache(tmp_path_factory):
    with isolated_cache(tmp_path_factory, shared=()) as root:
        yield root


def page(path: str, model: str, **state):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / path), default_timeout=120)
    at.session_state["embedscope_model"] = model
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def app_with_model(name: str):
    """app.py with "Other" chosen in the sidebar and `name` typed."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["ui_model_choice"] = "other"
    at.session_state["ui_model_id"] = name
    return at.run()


def page_errors(at) -> list[str]:
    """The error boxes as the reader sees them (they are Markdown with user text escaped)."""
    return [plain(e.value) for e in at.error]


def no_traceback(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("name", ["![](http://example.com/x.png)", "<img src=x onerror=alert(1)>",
                                  "[click](http://example.com)"])
def test_model_name_in_the_error_box_is_plain_text(app_cache, name):
    at = app_with_model(name)
    no_traceback(at)
    boxes = [e.value for e in at.error]
    assert boxes
    shown = rendered(boxes[0])
    assert "<img" not in shown and "<a " not in shown
    assert name in html.unescape(shown)  # the text as typed, literally


@pytest.mark.parametrize("name", ["config-is-a-list", "zero-heads", "truncated-safetensors", "pickle-bin",
                                  "vocabulary-mismatch"])
def test_broken_model_in_the_sidebar_does_not_break_pages(app_cache, broken_dirs, name):
    at = app_with_model(broken_dirs[name])
    no_traceback(at)
    assert any("could not be loaded" in w.value for w in at.sidebar.warning)
    boxes = page_errors(at)
    assert len(boxes) == 1
    one_sentence(boxes[0])
    at.switch_page("pages/2_embed_compare.py").run()  # another page: the same sentence, no traceback
    no_traceback(at)
    assert page_errors(at)


def test_model_path_that_is_a_file_in_the_sidebar(app_cache, tiny_dir):
    at = app_with_model(str(Path(tiny_dir) / "config.json"))
    no_traceback(at)
    assert any("is a file" in e for e in page_errors(at))


EMBED = "pages/2_embed_compare.py"
PASTE_MARKUP = '<b>bold claim</b> here\n<a href="http://example.com">click me</a> now\nplain words'


def test_pasted_markup_is_shown_as_text_in_the_heatmap(app_cache, tiny_dir):
    at = page(EMBED, tiny_dir, embed_source="paste", embed_paste=PASTE_MARKUP, embed_methods=["mean"])
    no_traceback(at)
    assert not page_errors(at)
    spec = json.dumps(figures(at))
    assert "<b>bold claim" not in spec and "<a href" not in spec
    fig = figures(at)[0]["data"][0]
    assert any("<b>bold claim</b>" in html.unescape(x) for x in fig["x"])  # literally, once rendered
    hover = json.dumps(fig["text"])
    assert "&lt;a href=" in hover


@pytest.mark.parametrize("layers, words", [("0-3000000", "past any model"), ("12-9", "backwards"),
                                           ("7", "do not exist"), ("0-1000", "do not exist")])
def test_kv_layers_widget_is_one_short_sentence(app_cache, tiny_dir, layers, words):
    at = page(EMBED, tiny_dir, embed_source="paste", embed_paste="one\ntwo", embed_methods=["kv_embedding"],
              embed_kv_embedding_layers=layers)
    no_traceback(at)
    boxes = page_errors(at)
    assert any(words in e and len(e) < 300 for e in boxes), boxes
    assert not at.get("plotly_chart")


@pytest.mark.parametrize("method, key, value", [
    ("prompteol", "template", "no placeholder here"),
    ("echo", "template", "once {text}"),
    ("token_prepending", "template", "{text} {text}"),
    ("htp", "template", "no text"),
    ("kv_embedding", "template", "custom without it"),
])
def test_template_widget_without_placeholder(app_cache, tiny_dir, method, key, value):
    at = page(EMBED, tiny_dir, embed_source="paste", embed_paste="one\ntwo", embed_methods=[method],
              **{f"embed_{method}_{key}": value})
    no_traceback(at)
    assert any("{text}" in e for e in page_errors(at)), page_errors(at)
    assert not at.get("plotly_chart")


def test_attention_page_refuses_a_long_text_before_work(app_cache, tiny_dir):
    text = long_text(1200)  # ~1,200 tokens: over the 512-token attention budget, under the model's 1,024 + prompt
    at = page("pages/4_attention.py", tiny_dir, attn_text=text, attn_kv_kv_embedding_layers="0,1",
              attn_words_methods=["prompteol"])
    no_traceback(at)
    assert any("attention" in e and "512" in e for e in page_errors(at)), page_errors(at)


def test_attention_page_shows_words_as_text(app_cache, tiny_dir):
    at = page("pages/4_attention.py", tiny_dir, attn_text="the <b>bank</b> <i>raised</i> rates",
              attn_view="words", attn_words_methods=["prompteol"])
    no_traceback(at)
    assert not page_errors(at)
    spec = json.dumps(figures(at))
    assert "<b>" not in spec.replace("<br>", "") and "&lt;b&gt;" in spec


def test_sensitivity_page_exact_on_a_long_text(app_cache, tiny_dir):
    at = page("pages/6_sensitivity.py", tiny_dir, sens_text=long_text(40), sens_exact=True,
              sens_methods=["mean"], sens_probes=2)
    no_traceback(at)
    assert any("Exact norms" in e and "at most 24 tokens" in e for e in page_errors(at)), page_errors(at)


def test_layer_explorer_grid_is_bounded(app_cache, tiny_dir):
    at = page("pages/5_layer_explorer.py", tiny_dir, explorer_widths=list(range(1, 11)),
              explorer_biases=[-2.0, 0.0, 0.5, 1.0, 2.0, 4.0], explorer_rot=["literal", "re-rotated to 0"],
              explorer_step=1, explorer_starts=(0, 3))
    no_traceback(at)
    boxes = page_errors(at)
    assert any("sweep cells" in e for e in boxes), boxes


def test_layer_explorer_work_is_bounded_and_a_refused_run_does_not_restart(app_cache, tiny_dir, monkeypatch):
    """Few cells on many texts are bounded too (texts x cells), before any cell runs; the refusal is shown once."""
    import dataclasses

    small = dataclasses.replace(budgets.APP, sweep_text_forwards=10)
    monkeypatch.setattr(budgets, "current", lambda: small)  # the page runs in AppTest's own thread
    at = page("pages/5_layer_explorer.py", tiny_dir, explorer_set="Demo paraphrase pairs", explorer_step=2,
              explorer_running=True)
    no_traceback(at)
    boxes = page_errors(at)
    assert any("text forwards" in e and "at most 10 is allowed" in e for e in boxes), boxes
    assert any("prompt-only text passes (at most 10 per run)" in m.value for m in at.markdown)
    assert not page_errors(at.run())  # the next rerun does not start the refused sweep again


def test_soft_tokens_instruction_markup_is_text(app_cache, tiny_dir):
    at = page("pages/9_soft_tokens.py", tiny_dir, soft_instr_b="<b>Which</b> emotion? ![](http://example.com/i.png)",
              soft_k=2, soft_section="Two instructions")
    no_traceback(at)
    assert not page_errors(at), page_errors(at)
    spec = json.dumps(figures(at))
    assert "<b>Which" not in spec and "&lt;b&gt;Which" in spec
    labels = " ".join(r.options[i] if isinstance(r.options[i], str) else "" for r in at.radio
                      for i in range(len(r.options)))
    assert "<img" not in rendered(labels)


def test_no_nan_on_any_page_message(app_cache, tiny_dir):
    at = page(EMBED, tiny_dir, embed_source="paste", embed_paste="a\nb\nc", embed_methods=["last", "mean"])
    no_traceback(at)
    shown = " ".join([e.value for e in at.error] + [m.value for m in at.markdown] + [c.value for c in at.caption])
    assert "nan" not in shown.lower().split()
    for fig in figures(at):
        z = values(fig["data"][0]["z"]).astype(float)
        assert np.isfinite(z).all()


# ==== concurrency: four sessions computing at once ===============================================================
def test_four_sessions_at_once_one_valid_cache_entry(app_cache, tiny_dir, tmp_path, monkeypatch):
    """Four app sessions on one server (threads of one process, as Streamlit runs them) compute at the same time;
    two ask for the same entry. Every session finishes without an error, and the shared entry is stored once."""
    import cache

    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "shared"))  # this test's entries only
    texts = {0: "same one\nsame two\nsame three", 1: "same one\nsame two\nsame three",
             2: "other a\nother b", 3: "third x\nthird y\nthird z\nthird w"}
    results, barrier = {}, threading.Barrier(4)

    def session(i):
        barrier.wait()
        try:
            results[i] = page(EMBED, tiny_dir, embed_source="paste", embed_paste=texts[i], embed_methods=["mean"])
        except BaseException as error:  # shown by the assertion below, not lost in a thread
            results[i] = error

    threads = [threading.Thread(target=session, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert len(results) == 4, "a session did not finish in 300 s"
    assert not [r for r in results.values() if isinstance(r, BaseException)], results
    for i, at in results.items():
        no_traceback(at)
        assert not page_errors(at), (i, page_errors(at))
        assert len(at.get("plotly_chart")) == 1, (i, [(e.type, getattr(e, "value", None)) for e in at.main])
    store = cache.default_store()
    from analysis.models.backbone import load_backbone

    bb = load_backbone(tiny_dir)
    entries = [cache.cached_encode(store, bb, get_method("mean"), t.split("\n")) for t in set(texts.values())]
    assert all(hit for _, _, hit in entries)  # every session's result was stored ...
    lists = list((Path(store.root) / "embeddings").rglob("meta.json"))
    assert len(lists) == 3  # ... once per distinct request: the two identical sessions share one valid entry
    shards = list((Path(store.root) / "vectors").rglob("meta.json"))
    assert len(shards) == 3  # and each document's vector once (a shard per request that computed)
    for emb, _, _ in entries:
        assert np.isfinite(emb).all()


def test_clear_cache_while_sessions_write_raises_nothing(tmp_path):
    """`Clear cache` pressed in one session while others store results: no exception anywhere (the race used to
    raise FileNotFoundError in about 4% of operations)."""
    import cache

    store, problems = cache.Store(tmp_path / "c"), []

    def writer(w):
        for i in range(40):
            try:
                store.get_or_compute({"writer": w, "i": i % 7}, lambda: ({"x": np.full(64, float(i))}, {}),
                                     namespace="race")
            except Exception as err:  # noqa: BLE001 -- the test is that nothing at all escapes
                problems.append(repr(err))

    def clearer():
        for _ in range(40):
            try:
                store.clear()
            except Exception as err:  # noqa: BLE001
                problems.append(repr(err))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)] + [threading.Thread(target=clearer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not problems, problems[:3]
