"""The model chosen in the sidebar (held once per process with st.cache_resource), and the cache store."""

from __future__ import annotations

import streamlit as st

import cache
from analysis.errors import UserError
from ui.text import md

MODEL_KEY = "embedscope_model"  # session-state key of the chosen model name ("default", an HF id or a path)
LAYER_CONVENTION = "Hidden state 0 = embeddings; decoder layer ℓ produces hidden state ℓ+1."
DEFAULT_TITLE = "SmolLM2-135M-Instruct"


def model_name() -> str:
    """The model the sidebar asks for; "default" when the sidebar has not been drawn (a page run alone)."""
    return st.session_state.get(MODEL_KEY, "default")


def store() -> cache.Store:
    return cache.default_store()


@st.cache_resource(show_spinner=False, max_entries=2)
def _load(name: str):
    from analysis.backbone import load_backbone

    return load_backbone(name)


def _needs_conversion() -> bool:
    """True when the default model's GGUF has not been converted to safetensors yet (first run: ~30 s)."""
    return not any((store().root / cache.store.MODELS).glob("smollm2-*/embedscope.json"))


def _try_load(name: str):
    if not name.strip():
        raise UserError("Enter a Hugging Face model id or a local folder in the sidebar, or choose the default model.")
    if name == "default" and _needs_conversion():
        msg = ("First start: converting the default model (SmolLM2-135M-Instruct) from its GGUF file to "
               "safetensors. This happens once and takes about 30 seconds.")
    else:
        msg = f"Loading {DEFAULT_TITLE if name == 'default' else md(name)}…"
    with st.spinner(msg, show_time=True):
        return _load(name)


LOADED_KEY = "ui_backbone"  # session state: (model name, Backbone) of the last successful load


def _backbone():
    """The chosen model, looked up once per session and model choice (the sidebar, the method picker and every
    method on a page ask for it on each rerun; only a new choice goes through loading again)."""
    name = model_name()
    held = st.session_state.get(LOADED_KEY)
    if held is not None and held[0] == name:
        return held[1]
    backbone = _try_load(name)
    st.session_state[LOADED_KEY] = (name, backbone)
    return backbone


def get_backbone():
    """The loaded model chosen in the sidebar. On failure: the error as one sentence, and the page stops."""
    try:
        return _backbone()
    except UserError as err:
        st.error(md(err))  # the message quotes the typed model name: never rendered as Markdown
        st.stop()


def display_name(facts) -> str:
    return DEFAULT_TITLE if facts.name == "default" else facts.name


def facts_table(facts) -> dict[str, str]:
    """Human-readable facts of a model, in display order."""
    return {
        "model": display_name(facts),
        "architecture": facts.architecture,
        "decoder layers": f"{facts.n_layers} (hidden states 0..{facts.n_layers})",
        "attention heads": f"{facts.n_heads} query, {facts.n_kv_heads} key/value (head size {facts.head_dim})",
        "hidden size": str(facts.hidden_size),
        "vocabulary": f"{facts.vocab_size:,}",
        "longest input": f"{facts.max_length:,} tokens",
        "parameters": f"{facts.n_params / 1e6:,.1f} M",
    }


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def _choose_model() -> None:
    choice = st.radio("Model", ["default", "other"], key="ui_model_choice", horizontal=True,
                      format_func=lambda c: DEFAULT_TITLE if c == "default" else "Other",
                      help="The built-in default, or any causal LM already on this machine. "
                           "Nothing is downloaded at run time.")
    if choice == "default":
        st.session_state[MODEL_KEY] = "default"
    else:
        typed = st.text_input("Hugging Face id or local folder", key="ui_model_id",
                              placeholder="e.g. Qwen/Qwen2.5-0.5B or /path/to/model",
                              help="An id must already be in the local Hugging Face cache; a folder must "
                                   "hold config.json, the weights and the tokenizer.")
        st.session_state[MODEL_KEY] = typed.strip()


def cache_sizes(s: cache.Store) -> tuple[int, int]:
    """(bytes of stored results, bytes of converted model weights) under the store's root."""
    results = models = 0
    for item in (s.root.iterdir() if s.root.is_dir() else []):
        if item.is_dir():
            size = cache.Store(item).size_bytes()  # follows item itself if it is a symlink (tests link models/)
        else:
            size = item.lstat().st_size
        if item.name == cache.store.MODELS:
            models += size
        else:
            results += size
    return results, models


def cache_panel() -> None:
    """Cache size and a "Clear cache" button (results only: converted model weights are kept)."""
    s = store()
    result_bytes, model_bytes = cache_sizes(s)
    st.markdown(f"**Cache**: {human_bytes(result_bytes)} of results ({s.count()} entries)")
    st.caption(f"Converted model weights: {human_bytes(model_bytes)} (kept when clearing). Folder: {md(s.root)}")
    if st.button("Clear cache", key="ui_clear_cache", help="Delete stored results; converted models stay."):
        removed = s.clear()
        st.session_state["ui_cleared"] = removed
        st.rerun()
    if "ui_cleared" in st.session_state:
        st.success(f"Removed {st.session_state.pop('ui_cleared')} cached result(s).")


def sidebar() -> None:
    """Drawn by app.py on every page: model choice and facts, cache size and clear button, layer convention.
    Never stops the page: a model that fails to load is reported here and again by the page's get_backbone()."""
    with st.sidebar:
        _choose_model()
        facts_box = st.container()
        st.divider()
        cache_panel()
        st.caption(LAYER_CONVENTION)
    try:
        backbone = _backbone()
    except UserError:
        facts_box.warning("This model could not be loaded: see the message on the page.")
        return
    f = backbone.facts
    facts_box.caption(f"{md(display_name(f))} · {md(f.architecture)} · {f.n_layers} layers · {f.n_heads} heads "
                      f"({f.n_kv_heads} KV) · d={f.hidden_size} · ≤{f.max_length:,} tokens · "
                      f"{f.n_params / 1e6:.0f} M parameters")
