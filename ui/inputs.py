"""Input widgets: methods with generated parameter widgets, texts, similarity pairs.

Each widget raises `UserError` (or shows a message and stops the page) on bad input; pages run under
`ui.user_errors()`, so a user never sees a traceback.
"""

from __future__ import annotations

import streamlit as st

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.core.intake import check_sizes  # every request's texts against the budgets (the command line's too)
from analysis.data import datasets, samples
from analysis.data.corpora import Pairs, Texts
from analysis.data.files import read_sts, read_texts
from analysis.weights import stand_in
from ui.compute import ready
from ui.deviations import show as show_deviations
from ui.model import get_backbone
from ui.text import md

# The app's limits, from the one table in analysis/core/budgets.py (an app session runs under budgets.APP).
MAX_TEXTS = budgets.APP.texts
MAX_PAIRS = budgets.APP.pairs
MAX_CHARS = budgets.APP.chars_per_text
DEFAULT_LIMIT = 200


# ---- one of several views ------------------------------------------------------------------------------

def choice(label: str, options, key: str, *, format_func=str, address: str | None = None, help: str | None = None):
    """A horizontal radio over `options`. `?<address>=<option>` in the page's address opens that option (a link from a
    lesson or a claim) unless this session has chosen already; a choice no longer offered (its method was taken out of
    the list, another board has other papers) is forgotten, so the first option is shown instead of an error."""
    options = list(options)
    if address is not None and st.query_params.get(address) in options and key not in st.session_state:
        st.session_state[key] = st.query_params[address]
    elif key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]
    return st.radio(label, options, format_func=format_func, horizontal=True, key=key, help=help)


# ---- methods -------------------------------------------------------------------------------------------

def method_picker(key: str, default=("prompteol",), multi: bool = True, only=None) -> list:
    """Choose embedding methods and set their parameters; returns configured method instances.

    Widgets are generated from each method's Params metadata, so methods added later appear here
    automatically. Stops the page (with a message) when no method is chosen or a parameter is invalid.
    """
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods import get_method, list_methods
    infos = {m.name: m for m in list_methods() if only is None or m.name in only}
    if not infos:
        raise UserError(f"None of the methods {list(only)} is available.")
    names = list(infos)
    fmt = lambda n: infos[n].title  # noqa: E731
    overview = "\n".join(f"- **{m.title}** (`{m.name}`): {m.summary}" for m in infos.values())
    if multi:
        chosen = st.multiselect("Methods", names, default=[d for d in default if d in infos], format_func=fmt,
                                key=f"{key}_methods", help=overview)
    else:
        first = next((d for d in default if d in infos), names[0])
        chosen = [st.selectbox("Method", names, index=names.index(first), format_func=fmt,
                               key=f"{key}_method", help=overview)]
    if not chosen:
        st.info("Choose at least one method.")
        st.stop()

    backbone = get_backbone()
    n_layers = backbone.facts.n_layers
    methods, problems = [], 0
    for name in chosen:
        info = infos[name]
        with st.expander(f"{info.title}: parameters"):
            st.caption(info.summary)
            try:
                values = {f["name"]: _param_widget(f"{key}_{name}", name, f, n_layers) for f in info.params
                          if not f.get("hidden")}  # hidden: filled in by the method (e.g. a weights digest)
                method = get_method(name, **{k: v for k, v in values.items() if v is not _UNCHANGED})
                method.check(backbone)  # ranges that depend on the loaded model, before any page starts work
                if why := stand_in.refusal(method, backbone):  # trained weights this model has none of
                    raise UserError(why)
                methods.append(method)
            except UserError as err:
                st.error(md(err))
                problems += 1
        show_deviations(info.deviations, title=f"{info.title}: differences from the paper")
        if methods and methods[-1].name == name and (found := stand_in.stand_in(methods[-1], backbone)):
            st.warning(md(found.warning))  # outside the folded parameters: what runs is never hidden
    if problems:
        st.error("Fix the parameters marked above to continue.")
        st.stop()
    return [ready(m) for m in methods]


_UNCHANGED = object()  # a free-form field left at its default


def _param_widget(prefix: str, method: str, field: dict, n_layers: int):
    """One widget for one Params field (a dict from MethodInfo.params); returns the value to pass on."""
    name, default, help_ = field["name"], field["default"], field.get("help", "")
    label, key = name.replace("_", " "), f"{prefix}_{name}"
    lo, hi, step = field.get("min"), field.get("max"), field.get("step")
    if "options" in field:  # choices known only at run time (e.g. bridges trained from the app)
        choices = list(field["options"]())
        return st.selectbox(label, choices, index=choices.index(default) if default in choices else 0,
                            key=key, help=help_)
    if "choices" in field:
        choices = list(field["choices"])
        return st.selectbox(label, choices, index=choices.index(default) if default in choices else 0,
                            key=key, help=help_)
    if isinstance(default, bool):
        return st.checkbox(label, value=default, key=key, help=help_)
    if field.get("kind") == "layer":
        lo = -(n_layers + 1) if lo is None else max(lo, -(n_layers + 1))
        hi = n_layers if hi is None else min(hi, n_layers)
        note = f" This model has hidden states 0..{n_layers}; negative values count from the end (-1 = {n_layers})."
        return int(st.number_input(label, min_value=lo, max_value=hi, value=min(max(default, lo), hi), step=1,
                                   key=f"{key}_L{n_layers}", help=help_ + note))  # new model, new bounds
    if isinstance(default, (int, float)) and "parse" not in field:
        kind = type(default)
        lo, hi = (kind(v) if v is not None else None for v in (lo, hi))
        step = kind(step) if step is not None else (1 if kind is int else None)
        bounded = lo is not None and hi is not None
        if bounded and (hi - lo) / (step or (hi - lo) / 100) <= 200:  # a slider only when its steps are few
            return st.slider(label, min_value=lo, max_value=hi, value=default, step=step, key=key, help=help_)
        return st.number_input(label, min_value=lo, max_value=hi, value=default, step=step, key=key, help=help_,
                               format=None if kind is int else "%g")
    if isinstance(default, str) and "parse" not in field:
        return st.text_input(label, value=default, key=key, help=help_)
    # Anything else (None, tuples, fields with their own parser): edited as text, read like --param key=value.
    shown = "" if default is None else str(default)
    raw = st.text_input(label, value=shown, key=key, help=help_ + " (same syntax as --param on the command line)")
    if raw.strip() == shown:
        return _UNCHANGED
    from analysis.methods import parse_params  # lazy: keeps torch off the pages' and the command line's start

    return parse_params(method, [f"{name}={raw.strip()}"])[name]


# ---- texts ---------------------------------------------------------------------------------------------

_SOURCES = {"set": "Built-in set", "paste": "Paste", "upload": "Upload a file"}
_PASTE_EXAMPLE = "\n".join([
    "She sat on the bank of the river and watched the water.",
    "He went to the bank to deposit his paycheck.",
    "The river bank was covered in wildflowers.",
    "The bank raised its interest rates again.",
    "A cat is sleeping on the sofa.",
    "A kitten naps on the couch.",
])


def text_input(key: str, default: str = "Demo sentences") -> Texts:
    """Texts from a built-in set, pasted lines or an uploaded .txt/.csv; with a limit and a count."""
    source = st.radio("Texts", list(_SOURCES), format_func=_SOURCES.get, horizontal=True, key=f"{key}_source")
    if source == "set":
        texts = _choose_set("Text set", datasets.text_menu(), default, key)
    elif source == "paste":
        raw = st.text_area("One text per line", value=_PASTE_EXAMPLE, height=160, key=f"{key}_paste")
        lines = [line.strip() for line in raw.split("\n") if line.strip()]
        if not lines:
            raise UserError("No texts were given: type or paste at least one line of text.")
        texts = Texts("Pasted texts", lines)
    else:
        upload = st.file_uploader("A .txt file (one text per line), a .csv/.tsv with a 'text' column (and optionally "
                                  "'label'), or similarity pairs (STS-B format, or sentence1, sentence2, score: their "
                                  "distinct sentences)", type=["txt", "csv", "tsv"], key=f"{key}_upload")
        if upload is None:
            st.info("Upload a file to continue, or choose another source of texts.")
            st.stop()
        texts = read_texts(upload_bytes(upload), filename=upload.name)
    return _limit_texts(key, texts)


def upload_bytes(upload) -> bytes:
    """An uploaded file's content, refused with one sentence before parsing when it is larger than the budget."""
    data = upload.getvalue()
    budgets.check("upload_bytes", len(data), f"the size of {upload.name} in bytes")
    return data


def _choose_set(label: str, menu: dict, default: str, key: str):
    """A built-in data set (from the registry's menu), loaded."""
    names = list(menu)
    name = st.selectbox(label, names, index=names.index(default) if default in names else 0, key=f"{key}_set")
    return menu[name]()


def _limit_texts(key: str, texts: Texts) -> Texts:
    n = len(texts)  # limit widgets are keyed by size: a different set starts from its own default
    if n == 0:
        raise UserError(f"{texts.name} holds no texts.")
    if n > DEFAULT_LIMIT:
        limit = st.number_input(f"Use the first N texts (of {n:,})", min_value=1, max_value=min(n, MAX_TEXTS),
                                value=DEFAULT_LIMIT, step=50, key=f"{key}_limit_{n}",
                                help=f"Every text is embedded by every method; at most {MAX_TEXTS:,} at a time.")
        texts = texts.head(int(limit))
        if n > MAX_TEXTS:
            st.warning(f"{md(texts.name)} has {n:,} texts; at most {MAX_TEXTS:,} can be embedded at once.")
    check_sizes(texts.texts)
    st.caption(f"{len(texts):,} text(s) from {md(texts.name)}" + (f" (of {n:,})" if len(texts) < n else ""))
    return texts


# ---- pairs ---------------------------------------------------------------------------------------------

def pairs_input(key: str, default: str = "Demo paraphrase pairs", size: int | None = None) -> Pairs:
    """Similarity pairs with gold scores: a built-in set (Lee corpus, demo pairs, STS-B when present) or an
    uploaded STS-B-format file / table with sentence1, sentence2, score; `size`: the sample's default size (default:
    every pair, up to the per-request limit)."""
    source = st.radio("Pairs", ["set", "upload"], horizontal=True, key=f"{key}_source",
                      format_func={"set": "Built-in set", "upload": "Upload a file"}.get)
    if source == "set":
        pairs = _choose_set("Pair set", datasets.pair_menu(), default, key)
    else:
        upload = st.file_uploader("STS-Benchmark format (tab-separated: score in column 5, sentences in 6 and 7) "
                                  "or a .csv/.tsv with sentence1, sentence2, score", type=["csv", "tsv", "txt"],
                                  key=f"{key}_upload")
        if upload is None:
            st.info("Upload a file to continue, or choose a built-in set.")
            st.stop()
        pairs = read_sts(upload_bytes(upload), name=upload.name)
    n = len(pairs)
    if n == 0:
        raise UserError(f"{pairs.name} holds no pairs.")
    # A seeded sample stratified by genre, never the first N: STS-B's files are sorted by genre.
    c1, c2 = st.columns([3, 1])
    size = c1.number_input(f"Pairs to use (of {n:,}): a seeded sample, stratified by genre where the set has one",
                           min_value=1, max_value=min(n, MAX_PAIRS), value=min(n, MAX_PAIRS, size or n), step=100,
                           key=f"{key}_limit_{n}")
    seed = c2.number_input("Sample seed", 0, 2**31 - 1, 0, key=f"{key}_seed")
    name = pairs.name
    pairs, report = samples.select(pairs, sample=int(size), seed=int(seed))
    if any(not s.strip() for s in pairs.left + pairs.right):
        raise UserError(f"{name} has an empty sentence; every pair needs two texts.")
    check_sizes(pairs.unique_texts(), name)
    st.caption(f"{len(pairs):,} pair(s), {len(pairs.unique_texts()):,} distinct texts, from {md(name)}"
               + ("" if report["how"] == "all" else f": {md(samples.caption(report))}")
               + (f"; at most {MAX_PAIRS:,} can be used" if n > MAX_PAIRS else ""))
    return pairs

