"""Hostile method parameters and requests in the library (issue 10): every bad parameter, range against the
loaded model or request past a per-request budget is one `UserError` sentence, raised before any work (no
forward pass, no expanded range, no allocation); budgets lift only where asked. Mechanics on a tiny random
model; the last tests repeat the worst cases on the real model (marker `real`)."""

# ruff: noqa: F811 -- pytest fixtures imported from hostile.py are named again as test arguments
from __future__ import annotations

import threading
import time
import tracemalloc
from importlib import import_module

import numpy as np
import pytest

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.methods import get_method, parse_params
from hostile import long_text, one_sentence, tiny, tiny_dir  # noqa: F401 -- fixtures


# ==== the library: parameters (no model needed) ==================================================================
NAN, INF = float("nan"), float("inf")
PARAM_CASES = [
    ("kv_embedding", {"bias": NAN}, "finite"),
    ("kv_embedding", {"bias": INF}, "finite"),
    ("kv_embedding", {"bias": -INF}, "finite"),
    ("kv_embedding", {"bias": "abc"}, "number"),
    ("kv_embedding", {"bias": 1000.0}, "must be <= 50"),
    ("kv_embedding", {"layers": "0-99999999"}, "past any model"),
    ("kv_embedding", {"layers": "0-3000000"}, "past any model"),
    ("kv_embedding", {"layers": "12-9"}, "backwards"),
    ("kv_embedding", {"layers": "3,abc"}, "not a layer number"),
    ("kv_embedding", {"layers": "-3"}, "not a layer number"),
    ("kv_embedding", {"layers": "1--2"}, "not a layer number"),
    ("kv_embedding", {"n": 0}, "must be >= 1 and <= 16, got 0"),
    ("kv_embedding", {"n": 10**9}, "got 1000000000"),
    ("kv_embedding", {"template": "no placeholder"}, "{text}"),
    ("kv_embedding", {"prompt": "<b>x</b>"}, "one of"),
    ("soft_tokens", {"temperature": NAN}, "finite"),
    ("soft_tokens", {"temperature": INF}, "finite"),
    ("soft_tokens", {"temperature": 0.0}, "must be >= 0.0001"),
    ("soft_tokens", {"temperature": -1.0}, "got -1.0"),
    ("soft_tokens", {"k": 10**6}, "must be >= 0 and <= 64"),
    ("soft_tokens", {"k": -1}, "got -1"),
    ("soft_tokens", {"top_k": -5}, "must be >= 0, got -5"),
    ("soft_tokens", {"instruction": "Say {text}"}, "must not contain"),
    ("prompteol", {"template": "A prompt without the text"}, "same prompt"),
    ("prompteol", {"template": "{text} " * 200}, "got it 200 times"),
    ("prompteol", {"template": "{text} " * 128}, "got it 128 times"),  # 128 copies would overflow int8 segment ids
    ("prompteol", {"layer": 1.5}, "whole number"),
    ("prompteol", {"layer": True}, "whole number"),
    ("prompteol", {"layer": "3"}, "whole number"),
    ("echo", {"template": "Only once: {text}"}, "exactly twice"),
    ("echo", {"template": "{text} {text} {text}"}, "exactly twice"),
    ("token_prepending", {"template": "no text"}, "exactly once"),
    ("token_prepending", {"start": 5, "exit": "2"}, "must not be after"),
    ("token_prepending", {"exit": float("nan")}, "not a share of the depth"),
    ("token_prepending", {"placeholder": "yes"}, "true or false"),
    ("htp", {"template": "{text} and {text}"}, "exactly once"),
    ("htp", {"k": 0}, "must be >= 1"),
    ("htp", {"seed": -1}, "must be >= 0"),
    ("htp", {"partition": "words"}, "one of"),
    ("mean", {"nonsense": 1}, "unknown parameter"),
]


@pytest.mark.parametrize("method, params, words", PARAM_CASES,
                         ids=[f"{m}-{'-'.join(f'{k}={str(v)[:12]}' for k, v in p.items())}" for m, p, _ in PARAM_CASES])
def test_bad_parameter_is_one_sentence(method, params, words):
    from analysis.methods import method_class

    method_class(method)  # imports (torch, transformers) are not what is timed
    start = time.perf_counter()
    with pytest.raises(UserError) as err:
        get_method(method, **params)
    assert time.perf_counter() - start < 2.0  # refused at once: 0-99999999 used to hang
    one_sentence(str(err.value))
    assert words in str(err.value)


CLI_PARAM_CASES = [  # the same checks reached from `--param key=value` text
    ("kv_embedding", "bias=nan"), ("kv_embedding", "bias=inf"), ("kv_embedding", "bias=-inf"),
    ("soft_tokens", "temperature=nan"), ("soft_tokens", "temperature=NaN"), ("kv_embedding", "layers=12-9"),
    ("kv_embedding", "layers=0-99999999"), ("prompteol", "template=no placeholder"), ("htp", "k=2.5"),
    ("token_prepending", "placeholder=maybe"),
]


@pytest.mark.parametrize("method, pair", CLI_PARAM_CASES, ids=[f"{m}-{p}" for m, p in CLI_PARAM_CASES])
def test_parsed_parameter_is_refused(method, pair):
    with pytest.raises(UserError) as err:
        get_method(method, **parse_params(method, [pair]))
    one_sentence(str(err.value))


def test_canonical_layer_set_is_a_new_params_object():
    m = get_method("kv_embedding", layers="12, 9-11")
    assert m.params.layers == "9,10,11,12"
    default = get_method("kv_embedding").params
    assert default.layers == "auto"  # validate() returned a new object; the class default is untouched


def test_widget_kind_comes_from_param_metadata():
    from analysis.methods import list_methods

    kinds = {(m.name, p["name"]): p.get("kind") for m in list_methods() for p in m.params}
    assert kinds[("prompteol", "layer")] == "layer" and kinds[("htp", "layer")] == "layer"
    assert kinds[("kv_embedding", "layers")] is None  # a layer *set*, edited as text: not a hidden-state index
    assert kinds[("prompteol", "template")] == "template"


def test_template_copies_are_bounded_in_tokenization_too(tiny):
    from analysis.core.tokens import MAX_COPIES, encode_template

    assert MAX_COPIES < 127  # segment ids are int8
    with pytest.raises(UserError) as err:
        encode_template(tiny.tokenizer, "{text}" * 130, "hi", 1024)
    one_sentence(str(err.value))


# ==== the library: ranges against the loaded model, budgets before work ==========================================


MODEL_CASES = {
    "layer-past-the-end": lambda bb: get_method("prompteol", layer=99).encode(bb, ["a text"]),
    "layer-too-negative": lambda bb: get_method("last", layer=-99).encode(bb, ["a text"]),
    "kv-layer-missing": lambda bb: get_method("kv_embedding", layers="9").encode(bb, ["a text"]),
    "kv-range-past-depth": lambda bb: get_method("kv_embedding", layers="0-1000").encode(bb, ["a text"]),
    "encode-layers-out-of-range": lambda bb: get_method("mean").encode_layers(bb, ["a text"], [0, 50]),
    "no-texts": lambda bb: get_method("mean").encode(bb, []),
    "blank-text": lambda bb: get_method("mean").encode(bb, ["   "]),
    "not-a-string": lambda bb: get_method("mean").encode(bb, [b"bytes"]),
    "trace-too-many-texts": lambda bb: get_method("mean").encode(bb, ["t"] * 65, trace=True),
    "attention-too-long": lambda bb: get_method("prompteol").encode(bb, [long_text(1200)], trace=True,
                                                                      attention=True),
    "sensitivity-exact-too-long": lambda bb: import_module("analysis.inspect.sensitivity").jacobian_norms(
        bb, get_method("mean"), long_text(20), layer=-1, probes=2, exact=True),  # ~40 tokens > 24
    "sensitivity-too-many-probes": lambda bb: import_module("analysis.inspect.sensitivity").jacobian_norms(
        bb, get_method("mean"), "short text", layer=-1, probes=10**6),
    "sensitivity-too-long": lambda bb: import_module("analysis.inspect.sensitivity").jacobian_norms(
        bb, get_method("mean"), long_text(1200), layer=-1, probes=2),
    "soft-tokens-k": lambda bb: import_module("analysis.inspect.generation").generate_soft_tokens(
        bb, "a text", k=1000),
    "soft-tokens-nan-temperature": lambda bb: import_module("analysis.inspect.generation").generate_soft_tokens(
        bb, "a text", temperature=NAN),
}


@pytest.mark.parametrize("case", list(MODEL_CASES))
def test_model_dependent_input_is_one_sentence(tiny, case):
    start = time.perf_counter()
    with pytest.raises(UserError) as err:
        MODEL_CASES[case](tiny)
    one_sentence(str(err.value))
    assert time.perf_counter() - start < 30  # refused before the expensive part


def test_missing_kv_layer_is_refused_before_any_forward_pass(tiny):
    calls = []
    handle = tiny.model.register_forward_pre_hook(lambda *a: calls.append(1))
    try:
        with pytest.raises(UserError) as err:
            get_method("kv_embedding", layers="2-900").encode(tiny, ["a text"] * 3)
    finally:
        handle.remove()
    assert not calls and len(str(err.value)) < 200  # a short sentence, not a list of 900 layers


def test_attention_budget_is_checked_before_the_pass(tiny):
    calls = []
    handle = tiny.model.register_forward_pre_hook(lambda *a: calls.append(1))
    try:
        with budgets.override(attention_tokens=8), pytest.raises(UserError) as err:
            get_method("mean").encode(tiny, ["a text that is longer than eight tokens for sure"], trace=True,
                                      attention=True)
    finally:
        handle.remove()
    assert not calls and "attention" in str(err.value)


BUDGET_CASES = {
    "grid-cells": lambda: import_module("analysis.sweep.windows").grid(30, range(30), range(1, 11), [0.0, 1.0], [False]),
    "bootstrap-geometry": lambda: import_module("analysis.inspect.geometry").measure(
        np.random.default_rng(0).normal(size=(10, 4)), [0], [1], n_boot=10**6),
    "map-points": lambda: import_module("analysis.inspect.geometry").embedding_map(
        np.random.default_rng(0).normal(size=(6000, 4)), "pca"),
    "all-pairs-points": lambda: import_module("analysis.inspect.geometry").measure(
        np.random.default_rng(0).normal(size=(6000, 4)), [0], [1], n_boot=0),
    "bootstrap-benchmark": lambda: import_module("analysis.eval.tasks").run_task(
        import_module("analysis.eval.tasks").Task("x", "sts", import_module("analysis.data.corpora").demo_pairs()),
        lambda texts: np.ones((len(texts), 4)), n_boot=10**7),
}


@pytest.mark.parametrize("case", list(BUDGET_CASES))
def test_budget_is_one_sentence(case):
    with pytest.raises(UserError) as err:
        BUDGET_CASES[case]()
    one_sentence(str(err.value))
    assert "--no-budgets" in str(err.value)


def test_budgets_lift_only_when_asked_and_only_here():
    from analysis.sweep.windows import grid

    with budgets.lifted():
        assert len(grid(30, range(30), range(1, 11), [0.0], [False])) > budgets.APP.grid_cells
        seen = []
        t = threading.Thread(target=lambda: seen.append(budgets.current()))  # another app session's thread
        t.start()
        t.join()
        assert seen[0] is budgets.APP
    assert budgets.current() is budgets.APP


def test_no_nan_embeddings_from_extreme_finite_bias(tiny):
    emb = get_method("kv_embedding", layers="0,1", bias=-1e30).encode(tiny, ["a text", "another one"])
    assert np.isfinite(emb).all()


def test_grid_counts_cells_before_building_them():
    from analysis.core.errors import UserError
    from analysis.sweep.windows import grid

    assert len(grid(4, range(4), range(1, 1025), [1.0])) == 4 + 3 + 2 + 1  # wider than the model: clipped, deduplicated
    tracemalloc.start()
    try:
        with pytest.raises(UserError, match="sweep cells"):
            grid(30, range(30), range(1, 31), [float(b) for b in range(1000)], [False, True])  # 930,000 cells
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5 * 2**20, peak  # counted, not built


# ==== the real default model (one shared load) ====================================================================
@pytest.mark.real
def test_real_model_long_attention_text_is_refused_before_work(real):
    text = long_text(900)  # ~900 tokens: the text that peaked at 3.7 GB in the library call
    start = time.perf_counter()
    with pytest.raises(UserError) as err:
        get_method("prompteol").encode(real, [text], trace=True, attention=True)
    one_sentence(str(err.value))
    assert "512" in str(err.value) and time.perf_counter() - start < 30


@pytest.mark.real
@pytest.mark.parametrize("layers", ["30", "0-3000000", "29-40"])
def test_real_model_kv_layers_past_the_depth(real, layers):
    with pytest.raises(UserError) as err:
        get_method("kv_embedding", layers=layers).encode(real, ["a text"])
    one_sentence(str(err.value))
    assert len(str(err.value)) < 200


@pytest.mark.real
def test_real_model_no_nan_with_extreme_parameters(real):
    texts = ["A cat sat on the mat.", "Stocks fell sharply."]
    for m in (get_method("kv_embedding", layers="25-28", bias=50.0), get_method("kv_embedding", layers="25-28",
                                                                                 bias=-1e30),
              get_method("soft_tokens", k=2, temperature=1e-4), get_method("soft_tokens", k=2, temperature=10.0)):
        assert np.isfinite(m.encode(real, texts)).all(), m
