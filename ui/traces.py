"""Cached traces the pages and the lessons share: one text's attention maps, one text's Jacobian norms, one text
set's intrinsic-dimension trajectory, soft-token generation and scaling, the compression system's answers and
attention. Each goes through `ui.cached` under its `cache.keys` builder, so a lesson step and the page it comes
from read the same stored result (and `python -m analysis warm` fills both)."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import streamlit as st

from analysis.compression.system import CompressionSystem, manifest_config
from analysis.inspect import intrinsic_dim as idm
from analysis.inspect import sensitivity as S
from analysis.inspect.attention import contextual_mass, word_attention
from analysis.inspect.generation import generate_soft_tokens, scaling_curve
from cache.keys import (ATTENTION, INTRINSIC_DIM, POOL_ATTENTION, SENSITIVITY, SOFT_GENERATION, SOFT_SCALING,
                        attention_parts, pool_attention_parts, sensitivity_parts, soft_generation_parts,
                        soft_scaling_parts, trajectory_parts)
from ui.compute import cached
from ui.model import get_backbone


def traced(method, text: str) -> dict:
    """The attention pieces of one text, through the cache: tokens, KV-Embedding's prefix mass, the final token's
    rows, Causal2Vec's contextual-token mass; TP/HTP summary columns and the contextual column moved out, so
    "final" has exactly the prompt's tokens after any prefix."""
    backbone = get_backbone()

    def compute(progress):
        _, tr = method.encode(backbone, [text], trace=True, attention=True, progress=progress)
        att = tr["attention"][0]  # (L, H, T, S)
        arrays = {"tokens": np.array(tr.tokens[0], dtype=str), "final": att[:, :, -1, :]}  # final: (L, H, S)
        if "kv.prefix_mass" in tr:
            arrays["mass"] = tr["kv.prefix_mass"][0]  # (L, H, T)
        if "placeholders" in tr:
            arrays["placeholders"] = tr["placeholders"][0]  # (T,) TP/HTP summary positions
        if "c2v.contextual_index" in tr and int(tr["c2v.contextual_index"][0]) >= 0:
            c = int(tr["c2v.contextual_index"][0])
            arrays["contextual"] = contextual_mass(att, tr["segments"][0], c)  # (L, H) text -> C
            arrays["c_index"] = np.array(c)
        return arrays, {}

    arrays, _ = cached(ATTENTION, attention_parts(backbone, method, text), compute,
                       f"{method.title}: attention maps", quiet=True)
    if "placeholders" in arrays and arrays["placeholders"].any():
        # TP/HTP summary positions are not in the prompt's tokenization: count their columns with the
        # re-routed prefix (they hold re-routed states), so the word view sees exactly the prompt's tokens.
        ph = arrays["placeholders"] > 0
        extra = arrays["final"].shape[-1] - len(ph)
        cols = np.r_[np.arange(extra), extra + np.flatnonzero(ph), extra + np.flatnonzero(~ph)]
        arrays = {**arrays, "final": arrays["final"][..., cols], "tokens": arrays["tokens"][~ph]}
    if "c_index" in arrays:
        # Causal2Vec's contextual token is not in the prompt's tokenization: its column is counted on its own.
        c, extra = int(arrays["c_index"]), arrays["final"].shape[-1] - len(arrays["tokens"])
        keep = np.ones(arrays["final"].shape[-1], dtype=bool)
        keep[extra + c] = False
        arrays = {**arrays, "on_contextual": arrays["final"][..., extra + c], "final": arrays["final"][..., keep],
                  "tokens": np.delete(arrays["tokens"], c)}
    return arrays


def word_shares(methods, text: str, layers) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Which words each method's final token reads, averaged over `layers` (decoder layers) and heads: a frame of
    words with each one's share of the attention on the text, and one row per method of where the rest went."""
    backbone = get_backbone()
    layers = list(layers)
    frames, rest = [], []
    for m in methods:
        arrays = traced(m, text)
        template = m.prompt_template(backbone.tokenizer)  # as tokenized (TP/HTP may add a start token)
        f = word_attention(backbone.tokenizer, template, text, arrays["final"], len(arrays["tokens"]), layers=layers)
        on_text = f["mass"].sum()
        label = f"{m.title} ({m.name})"
        frames.append(f.assign(method=label, share=f["mass"] / on_text if on_text > 0 else 0.0))
        on_ctx = float(arrays["on_contextual"][layers].mean(axis=(0, 1))) if "on_contextual" in arrays else 0.0
        rest.append({"method": label, "on the text": on_text, "on the prompt": f.attrs["template_mass"],
                     "on the prefix": f.attrs["prefix_mass"], "on the contextual token": on_ctx})
    return pd.concat(frames, ignore_index=True), pd.DataFrame(rest)


def jacobians(method, text: str, layer: int, probes: int, exact: bool, label: str):
    """Jacobian norms of both readouts and the attention-product bound for one text, through the cache:
    (arrays, meta) with the tokens, the decay and the bound's agreement in meta."""
    backbone = get_backbone()

    def compute(progress):
        s = S.jacobian_norms(backbone, method, text, layer=layer, probes=probes, exact=exact, progress=progress)
        b = S.attention_bound(backbone, method, text, layer=layer)
        arrays = {**s.arrays(), "bound_last": b.last, "bound_mean": b.mean}
        meta = {"tokens": s.tokens, "layer": s.layer, "agreement": S.compare(s, b), "decay": S.decay(s),
                "sensitivity_seconds": s.seconds}
        return arrays, meta

    parts = sensitivity_parts(backbone, method, text, layer, probes, exact)
    return cached(SENSITIVITY, parts, compute, f"{label}: Jacobians and attention bound", quiet=True)


def trajectory(backbone, method, texts: list[str], readout: str, n_boot: int):
    """The intrinsic dimension of every hidden state of `backbone` over `texts` (a DataFrame), through the cache."""

    def compute(progress):
        df = idm.trajectory(backbone, method, texts, readout, bootstrap=n_boot, seed=0, progress=progress)
        return idm.to_arrays(df), {}

    parts = trajectory_parts(backbone, method, texts, readout, n_boot)
    arrays, _ = cached(INTRINSIC_DIM, parts, compute, f"{method.title}: intrinsic dimension of {len(texts):,} texts")
    return idm.from_arrays(arrays)


# generate_soft_tokens' settings and their defaults: filled into every key, so a call that leaves one out and a
# call that gives it its default read the same entry.
SOFT_DEFAULTS = {name: p.default for name, p in inspect.signature(generate_soft_tokens).parameters.items()
                 if p.default is not inspect.Parameter.empty and name != "instruction"}


def soft_generation(backbone, text: str, instruction: str, **settings) -> dict:
    """One text's soft-token generation report (`generate_soft_tokens`), through the cache: its arrays as the
    entry's arrays, the rest (tokens, template, floats) as JSON, so a stored report is read back without loading
    the adapter or generating again."""
    from analysis.weights.adapters import adapter_spec

    settings = {**SOFT_DEFAULTS, **settings}
    adapter = settings.pop("adapter")

    def compute(progress):
        report = generate_soft_tokens(backbone, text, instruction, adapter=adapter, **settings)
        arrays = {k: v for k, v in report.items() if isinstance(v, np.ndarray)}
        return arrays, {"report": {k: v for k, v in report.items() if k not in arrays}}

    parts = soft_generation_parts(backbone, text, instruction, settings, adapter_spec(adapter))
    arrays, meta = cached(SOFT_GENERATION, parts, compute, f"Soft tokens: {settings['k']} steps", quiet=True)
    return {**meta["report"], **arrays}


def soft_scaling(backbone, pairs, ks: list[int], params: dict, label: str) -> dict:
    """STS Spearman of soft-token embeddings at every K in `ks` (one generation of max K tokens), through the
    cache: arrays ks, spearman, ci (m, 2)."""
    from analysis.weights.adapters import adapter_spec

    ks = sorted({0, *ks})
    parts = soft_scaling_parts(backbone, pairs, ks, params, adapter_spec(params["adapter"]))
    arrays, _ = cached(SOFT_SCALING, parts,
                       lambda progress: (scaling_curve(backbone, pairs, ks, progress=progress, **params), {}),
                       label=f"Soft-token scaling: {label}, K up to {max(ks)}")
    return arrays


@st.cache_resource(show_spinner="Loading the adapter, the LoRA and the sentence encoder…", max_entries=2)
def compression_system(_backbone, identity: str, folder: str, digest: str):
    """The context-compression system in `folder` on the model; `digest` keys the weights, so retrained weights
    in the same folder are reloaded."""
    return CompressionSystem.from_artefact(_backbone, folder)


class Compression:
    """The compression system in an artefact folder as its cache entries see it: the model, the weights' digest,
    the manifest and its config, read from the folder in milliseconds. The system itself (sentence encoder,
    adapter, LoRA: seconds to load) is loaded on the first computation, so stored answers (`cache.
    cached_compress_predict`, which takes this in place of a system) and attention (`pool_attention`) are read
    without it."""

    def __init__(self, backbone, folder: str):
        from analysis.weights.artefacts import artefact_digest, read_manifest

        self.backbone, self.folder, self.weights_digest = backbone, folder, artefact_digest(folder)
        self.manifest = read_manifest(folder)
        self.config = manifest_config(self.manifest, backbone, folder)  # what CompressionSystem.from_artefact builds

    def system(self) -> CompressionSystem:
        return compression_system(self.backbone, self.backbone.identity, self.folder, self.weights_digest)

    def predict(self, items, mode: str, **kwargs) -> list[dict]:
        return self.system().predict(items, mode, **kwargs)


def pool_attention(compression: Compression, item: dict, mode: str = "sentence", ids: bool = False):
    """`CompressionSystem.pool_attention` of one item, through the cache: ((L, n_positions) array, pool indices)."""

    def compute(progress):
        att, pools = compression.system().pool_attention(item, mode, ids=ids)
        return {"attention": att, "pools": np.asarray(pools, dtype=np.int64)}, {}

    arrays, _ = cached(POOL_ATTENTION, pool_attention_parts(compression, item, mode, ids), compute,
                       "Attention to the pools", quiet=True)
    return arrays["attention"], [int(i) for i in arrays["pools"]]
