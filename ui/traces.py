"""Cached traces the pages and the lessons share: one text's attention maps, one text's Jacobian norms, one text
set's intrinsic-dimension trajectory, soft-token generation and scaling, the compression system's answers and
attention. Each is computed and stored by its one function in `cache.compute` (shown with a progress bar by
`ui.shown`), so a lesson step and the page it comes from read the same stored result (and `python -m analysis warm`
fills both)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from analysis.compression.system import CompressionSystem, manifest_config
from analysis.inspect.attention import word_attention
from analysis.weights.artefacts import artefact_digest, read_manifest
from cache import compute
from ui.compute import shown
from ui.model import get_backbone, store


def traced(method, text: str) -> dict:
    """The attention pieces of one text, through the cache: tokens, KV-Embedding's prefix mass, the final token's
    rows, Causal2Vec's contextual-token mass; TP/HTP summary columns and the contextual column moved out, so
    "final" has exactly the prompt's tokens after any prefix."""
    backbone = get_backbone()
    arrays, _ = shown(f"{method.title}: attention maps",
                      lambda progress: compute.attention_maps(store(), backbone, method, text, progress), quiet=True)
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


def jacobians_stored(method, text: str, layer: int, probes: int, exact: bool) -> bool:
    """Whether `jacobians` would read its result rather than compute it (`cache.compute.jacobians_stored`)."""
    return compute.jacobians_stored(store(), get_backbone(), method, text, layer, probes, exact)


def jacobians(method, text: str, layer: int, probes: int, exact: bool, label: str):
    """Jacobian norms of both readouts and the attention-product bound for one text, through the cache:
    (arrays, meta) with the tokens, the decay and the bound's agreement in meta."""
    backbone = get_backbone()
    return shown(f"{label}: Jacobians and attention bound",
                 lambda progress: compute.jacobians(store(), backbone, method, text, layer, probes, exact, progress),
                 quiet=True)


def trajectory(backbone, method, texts: list[str], readout: str, n_boot: int):
    """The intrinsic dimension of every hidden state of `backbone` over `texts` (a DataFrame), through the cache."""
    df, _ = shown(f"{method.title}: intrinsic dimension of {len(texts):,} texts",
                  lambda progress: compute.trajectory(store(), backbone, method, texts, readout, n_boot,
                                                      progress=progress))
    return df


def soft_generation(backbone, text: str, instruction: str, **settings) -> dict:
    """One text's soft-token generation report (`generate_soft_tokens`), through the cache: a stored report is read
    back without loading the adapter or generating again."""
    report, _ = shown(f"Soft tokens: {compute.soft_settings(**settings)['k']} steps",
                      lambda progress: compute.soft_generation(store(), backbone, text, instruction, progress,
                                                               **settings), quiet=True)
    return report


def soft_scaling(backbone, pairs, ks: list[int], params: dict, label: str) -> dict:
    """STS Spearman of soft-token embeddings at every K in `ks` (one generation of max K tokens), through the
    cache: arrays ks, spearman, ci (m, 2)."""
    arrays, _ = shown(f"Soft-token scaling: {label}, K up to {max(ks)}",
                      lambda progress: compute.soft_scaling(store(), backbone, pairs, sorted({0, *ks}), params,
                                                            progress=progress))
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
        self.backbone, self.folder, self.weights_digest = backbone, folder, artefact_digest(folder)
        self.manifest = read_manifest(folder)
        self.config = manifest_config(self.manifest, backbone, folder)  # what CompressionSystem.from_artefact builds

    def system(self) -> CompressionSystem:
        return compression_system(self.backbone, self.backbone.identity, self.folder, self.weights_digest)

    def predict(self, items, mode: str, **kwargs) -> list[dict]:
        return self.system().predict(items, mode, **kwargs)


def pool_attention(compression: Compression, item: dict, mode: str = "sentence", ids: bool = False):
    """`CompressionSystem.pool_attention` of one item, through the cache: ((L, n_positions) array, pool indices)."""
    value, _ = shown("Attention to the pools",
                     lambda progress: compute.pool_attention(store(), compression, item, mode, ids, progress),
                     quiet=True)
    return value
