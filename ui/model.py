"""The model chosen in the sidebar (held once per process with st.cache_resource), and the cache store."""

from __future__ import annotations

import threading

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

import cache
from analysis.core.errors import UserError
from analysis.core.precision import CHOICES, TOLERANCE, bf16_supported, verdicts_for
from analysis.models import backbone as backbone_module  # by module: tests replace load_backbone
from analysis.models.backbone import BUILTIN, DEVICES, builtin
from ui.text import md

MODEL_KEY = "embedscope_model"  # session-state key of the chosen model name ("default", an HF id or a path)
DEVICE_KEY, DTYPE_KEY = "embedscope_device", "embedscope_dtype"  # where and in which dtype models run
LAYER_CONVENTION = "Hidden state 0 = embeddings; decoder layer ℓ produces hidden state ℓ+1."
DEFAULT_TITLE = "SmolLM2-135M-Instruct"


def model_name() -> str:
    """The model the sidebar asks for; "default" when the sidebar has not been drawn (a page run alone)."""
    return st.session_state.get(MODEL_KEY, "default")


def store() -> cache.Store:
    return cache.default_store()


def hardware() -> tuple[str, str]:
    """(device, dtype) chosen in the sidebar: cpu and auto (each method in the precision its evidence allows,
    `analysis.core.precision`) unless changed."""
    return st.session_state.get(DEVICE_KEY, "cpu"), st.session_state.get(DTYPE_KEY, "auto")


@st.cache_resource(show_spinner=False, max_entries=3)  # Compare models holds two models at once
def _load(name: str, device: str = "cpu", dtype: str = "float32"):
    return backbone_module.load_backbone(name, device=device, dtype=dtype)


def _needs_conversion(name: str) -> bool:
    """True when a built-in model's GGUF has not been converted to safetensors yet (first run: 30 s to 2 min)."""
    entry = builtin(name)
    return entry is not None and not any(
        (store().root / cache.store.MODELS).glob(f"{entry.folder_prefix}-*/embedscope.json"))


def title_of(name: str) -> str:
    entry = builtin(name)
    return entry.title if entry else name


def _try_load(name: str):
    if not name.strip():
        raise UserError("Enter a Hugging Face model id or a local folder in the sidebar, or choose a built-in model.")
    if _needs_conversion(name):
        msg = (f"First start: converting {title_of(name)} from its GGUF file to safetensors. This happens once and "
               "takes 30 seconds to 2 minutes.")
    else:
        msg = f"Loading {md(title_of(name))}…"
    with st.spinner(msg, show_time=True):
        return _load(name, *hardware())


def load_named(name: str):
    """Another model than the sidebar's (Compare models), same device and dtype; errors as for get_backbone."""
    try:
        return _try_load(name)
    except UserError as err:
        st.error(str(err))
        st.stop()


def described(name: str):
    """A built-in model as cache keys see it, on the sidebar's device and precision, without loading its weights
    (`analysis.models.describe`): a view reads its stored result with it and loads the model only on a
    miss. None when only a load can tell (or cannot: `load_named` then says why)."""
    return _describe(name, *hardware())


def _describe(name: str, device: str, dtype: str):
    """`describe`, or None where it raises: the load that follows says why in its own sentence."""
    # lazy: keeps torch, transformers off the pages' and the command line's start
    from analysis.models.describe import describe

    try:
        return describe(name, device=device, dtype=dtype)
    except UserError:
        return None


class LazyBackbone:
    """The chosen built-in model before anything needs its weights: `identity` and `facts` read from its converted
    folder (`describe`, milliseconds, exactly what loading gives), every other attribute taken from the Backbone,
    loaded on first use. A view whose first figure is stored (a seed, or an earlier visit) reads it by identity and
    never pays the seconds of importing transformers and loading the model (issue 38's profile: most of a fresh
    page's 10 s)."""

    def __init__(self, described, load, *, auto: bool = False, twin=None):
        self.identity, self.facts = described.identity, described.facts
        self.auto, self._twin = auto, twin  # --dtype auto: `in_dtype` hands out the twin, itself lazy
        self._described = described
        self._load, self._loaded, self._tokenizer = load, None, None
        self._loading = threading.Lock()

    def in_dtype(self, dtype: str):
        """This model in `dtype` without loading it: itself, or its lazy twin (`_lazy` in that dtype)."""
        return self if dtype == self.facts.dtype else self._twin(dtype)

    @property
    def is_loaded(self) -> bool:
        return self._loaded is not None

    @property
    def tokenizer(self):
        """The loaded model's tokenizer, or before any load the same tokenizer read alone from the converted folder
        (`load_tokenizer`, set up as loading sets it up): a view that only tokenizes waits a second, not for the
        weights."""
        if self._loaded is not None:
            return self._loaded.tokenizer
        with self._loading:
            if self._tokenizer is None:
                # lazy: keeps torch, transformers off the pages' and the command line's start
                from analysis.models.describe import load_tokenizer

                self._tokenizer = load_tokenizer(self._described)
        return self._tokenizer

    def __getattr__(self, name: str):  # only what __init__ did not set: the model, tokenizer, lock, ...
        if name.startswith("_"):
            raise AttributeError(name)
        with self._loading:
            if self._loaded is None:
                self._loaded = self._load()
        return getattr(self._loaded, name)


@st.cache_resource(show_spinner=False, max_entries=3)
def _lazy(name: str, device: str, dtype: str) -> LazyBackbone | None:
    """One handle per model and process, shared by every session as the loaded model is (so what the library memoises
    per backbone, merged adapter copies, is made once); None when only a load can describe the model."""
    found = _describe(name, device, dtype)
    if found is None:
        return None
    return LazyBackbone(found, lambda: _load_shown(name, device, dtype), auto=dtype == "auto",
                        twin=lambda other: _lazy(name, device, other) or _load(name, device, other))


def _load_shown(name: str, device: str, dtype: str):
    """`_load` behind the same spinner as `_try_load` when a page's own thread asks (a worker thread has no page to
    show it on)."""
    if get_script_run_ctx(suppress_warning=True) is None:
        return _load(name, device, dtype)
    with st.spinner(f"Loading {md(title_of(name))}…", show_time=True):
        return _load(name, device, dtype)


LOADED_KEY = "ui_backbone"  # session state: (model name, Backbone) of the last successful load


def _backbone():
    """The chosen model, looked up once per session and model choice (the sidebar, the method picker and every
    method on a page ask for it on each rerun; only a new choice goes through loading again). A converted built-in
    model comes as a `LazyBackbone`: loaded, behind the same spinner, only when something needs its weights."""
    name = model_name()
    key = (name, *hardware())  # a new device or precision is a new model too
    held = st.session_state.get(LOADED_KEY)
    if held is not None and held[0] == key:
        return held[1]
    backbone = _lazy(*key) or _try_load(name)
    st.session_state[LOADED_KEY] = (key, backbone)
    return backbone


def get_backbone():
    """The loaded model chosen in the sidebar. On failure: the error as one sentence, and the page stops."""
    try:
        return _backbone()
    except UserError as err:
        st.error(md(err))  # the message quotes the typed model name: never rendered as Markdown
        st.stop()


def display_name(facts) -> str:
    return facts.title or (DEFAULT_TITLE if facts.name == "default" else facts.name)


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
        "attention": (f"{facts.n_sliding} of {facts.n_layers} layers see a sliding window of "
                      f"{facts.sliding_window:,} tokens" if facts.sliding_window else "global in every layer"),
        "runs as": f"{facts.dtype} on {facts.device}",
        **({"licence": facts.licence} if facts.licence else {}),
    }


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def _choose_model() -> None:
    options = ["default", *[n for n in BUILTIN if n != "smollm2-135m"], "other"]
    choice = st.radio("Model", options, key="ui_model_choice",
                      format_func=lambda c: {"default": DEFAULT_TITLE, "other": "Other"}.get(c) or title_of(c),
                      help="The built-in models (SmolLM2-135M-Instruct, the default; Gemma 3 270M, the base model, "
                           "under the Gemma Terms of Use), or any causal LM already on this machine. Nothing is "
                           "downloaded at run time.")
    if choice != "other":
        st.session_state[MODEL_KEY] = choice
    else:
        typed = st.text_input("Hugging Face id, local folder or .gguf file", key="ui_model_id",
                              placeholder="e.g. Qwen/Qwen2.5-0.5B or /path/to/model",
                              help="An id must already be in the local Hugging Face cache; a folder must "
                                   "hold config.json, the weights and the tokenizer; a .gguf file is converted once.")
        st.session_state[MODEL_KEY] = typed.strip()
    with st.expander("Hardware", expanded=False):
        st.selectbox("Device", DEVICES, key=DEVICE_KEY,
                     help="cpu (default), cuda, mps, or auto: the best available; on CUDA a model too large for one "
                          "GPU is split over the GPUs and the CPU (accelerate, device_map=auto).")
        st.selectbox("Precision", CHOICES, key=DTYPE_KEY,
                     help="auto (default): each method in bfloat16 where this machine has bfloat16 units and the "
                          "model's dtype record measured its scores unmoved, float32 otherwise; float32: exact "
                          "everywhere; bfloat16 halves the memory. Results are cached separately per precision.")


def precision_line(requested: str, backbone) -> str:
    """The sidebar's one line on the precision the methods run in and why: under auto, what this model's dtype record
    (`analysis.core.precision`) says, read by identity, so the model is not loaded to say it."""
    if requested != "auto":
        return f"Precision: {requested} for every method, as chosen."
    if not bf16_supported(backbone.facts.device):
        return "Precision: auto, so float32 for every method: this machine has no bfloat16 units."
    verdicts = verdicts_for(backbone.identity)
    if verdicts is None:
        return ("Precision: auto, so float32 for every method: no bfloat16 evidence for this model yet "
                "(`python -m analysis measure dtype`).")
    named = {n: n.removeprefix("view:") + " view" if n.startswith("view:") else n for n in verdicts}
    fast = md(", ".join(sorted(named[n] for n, v in verdicts.items() if v["dtype"] == "bfloat16")) or "nothing")
    kept = md(", ".join(sorted(named[n] for n, v in verdicts.items() if v["dtype"] != "bfloat16")) or "nothing")
    return (f"Precision: auto, so bfloat16 for {fast} (this model's dtype record found them unmoved: scores within "
            f"±{TOLERANCE}, views within their tolerance); float32 for {kept} (not shown to stay within it: the dtype "
            "record in docs/RESULTS.md says which moved and which its sample could not bound) and anything unmeasured.")


def cache_sizes(s: cache.Store) -> tuple[int, int]:
    """(bytes of stored results, bytes of converted model weights) under the store's root (training runs are
    neither)."""
    results = models = 0
    for item in (s.root.iterdir() if s.root.is_dir() else []):
        if item.is_dir():
            size = cache.Store(item).size_bytes()  # follows item itself if it is a symlink (tests link models/)
        else:
            size = item.lstat().st_size
        if item.name == cache.store.MODELS:
            models += size
        elif item.name != cache.store.RUNS:
            results += size
    return results, models


def cache_panel() -> None:
    """Cache size and a "Clear cache" button (results only: converted model weights and training runs are kept)."""
    s = store()
    result_bytes, model_bytes = cache_sizes(s)
    st.markdown(f"**Cache**: {human_bytes(result_bytes)} of results ({s.count()} entries)")
    st.caption(f"Converted model weights: {human_bytes(model_bytes)} (kept when clearing). Folder: {md(s.root)}")
    if st.button("Clear cache", key="ui_clear_cache",
                 help="Delete stored results; converted models and training runs stay."):
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
                      f"{f.n_params / 1e6:.0f} M parameters"
                      + (f" · sliding window {f.sliding_window:,} in {f.n_sliding} layers" if f.sliding_window else "")
                      + (f" · {f.dtype} on {f.device}" if (f.dtype, f.device) != ("float32", "cpu") else "")
                      + (f" · licence: {f.licence}" if f.licence and f.name != "default" else ""))
    facts_box.caption(precision_line(hardware()[1], backbone))
