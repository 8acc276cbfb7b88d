"""Attention

Where does attention go? The mass every token puts on KV-Embedding's re-routed prefix (per layer and head),
and which words each method's final token actually reads.
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

import ui
from analysis.core import budgets
from analysis.inspect.attention import contextual_mass, prefix_mass_summary, word_attention
from analysis.methods import list_methods
from analysis.methods.causal2vec import shipped_fits
from cache.keys import ATTENTION, attention_parts

DEFAULT_TEXT = "The bank by the river raised its interest rates after the flood damaged the town."


def traced(method, text: str) -> dict:
    """The trace pieces this page needs, through the cache: tokens, prefix mass, the final token's rows."""
    backbone = ui.get_backbone()

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

    arrays, _ = ui.cached(ATTENTION, attention_parts(backbone, method, text), compute,
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


def prefix_figure(mass: np.ndarray, tokens, layers) -> go.Figure:
    by_head, by_pos = prefix_mass_summary(mass)  # (L, H), (L, T)
    fig = make_subplots(rows=1, cols=2, column_widths=[0.35, 0.65], horizontal_spacing=0.08,
                        subplot_titles=("mean over query positions", "profile along the sequence (mean over heads)"))
    fig.add_trace(go.Heatmap(z=by_head, x=[f"h{h}" for h in range(by_head.shape[1])], y=list(range(len(by_head))),
                             colorscale="Viridis", zmin=0, zmax=1, colorbar=dict(title="mass", x=0.3)), 1, 1)
    profile = by_pos[sorted(layers)].mean(axis=0) if layers else np.zeros(by_pos.shape[1])
    labels = [f"{i}:{ui.label(t)}" for i, t in enumerate(tokens)]
    fig.add_trace(go.Scatter(x=labels, y=profile, mode="lines+markers", name="layers in the set"), 1, 2)
    fig.update_yaxes(title_text="decoder layer", autorange="reversed", row=1, col=1)
    fig.update_yaxes(title_text="mass on the prefix", range=[0, 1], row=1, col=2)
    fig.update_layout(height=480, showlegend=False, margin=dict(l=10, r=10, t=40, b=10))
    return fig


with ui.user_errors():
    st.title("Attention")
    backbone = ui.get_backbone()
    L = backbone.facts.n_layers
    text = st.text_area("Text", DEFAULT_TEXT, key="attn_text", height=80,
                        help=f"Attention maps grow with the square of the length: at most "
                             f"{budgets.limit('attention_tokens')} tokens (prompt included).").strip()
    ui.check_sizes([text], "the text")
    if not text:
        st.info("Enter a text.")
        st.stop()

    st.subheader("Attention to the re-routed prefix")
    st.caption("For KV-Embedding: the share of each query's attention that lands on the prepended key/value of "
               "the final token, per decoder layer and head. Layers outside the re-routing set have no prefix (0).")
    kv = ui.method_picker("attn_kv", default=("kv_embedding",), multi=False, only=("kv_embedding",))[0]
    kv_arrays = traced(kv, text)
    in_set = sorted(kv.decoder_layers(backbone))
    st.caption(f"Re-routing in decoder layers {', '.join(map(str, in_set)) or 'none'} "
               f"(layers={kv.params.layers}).")
    mass = kv_arrays["mass"]
    by_head, by_pos = prefix_mass_summary(mass)
    frame = pd.DataFrame([{"decoder_layer": l, "head": h, "mean_prefix_mass": by_head[l, h]}
                          for l in range(by_head.shape[0]) for h in range(by_head.shape[1])])
    ui.show_figure(prefix_figure(mass, list(kv_arrays["tokens"]), in_set), frame, "prefix_mass")

    st.subheader("Attention to the contextual token (Causal2Vec)")
    st.caption("Causal2Vec puts one token made from MiniLM's summary of the text before the text. The share of each "
               "text token's attention that lands on it (mean over the text's tokens), per decoder layer and head: "
               "how much the decoder reads the summary instead of the words it has seen so far.")
    c2v = ui.method_picker("attn_c2v", default=("causal2vec",), multi=False, only=("causal2vec",))[0]
    if c2v.params.readout == "direct":
        st.info("The direct readout has no contextual token; choose another readout.")
    elif c2v.params.bridge == "shipped" and not shipped_fits(ui.get_backbone()):
        st.info("The shipped bridge was trained for the default model only: choose bridge = untrained above, or "
                "train one for this model on the Training page.")
    else:
        ctx = traced(c2v, text)["contextual"]  # (L, H)
        fig = make_subplots(rows=1, cols=2, column_widths=[0.35, 0.65], horizontal_spacing=0.08,
                            subplot_titles=("per head", "mean over heads"))
        fig.add_trace(go.Heatmap(z=ctx, x=[f"h{h}" for h in range(ctx.shape[1])], y=list(range(len(ctx))),
                                 colorscale="Viridis", zmin=0, zmax=1, colorbar=dict(title="mass", x=0.3)), 1, 1)
        fig.add_trace(go.Bar(x=list(range(len(ctx))), y=ctx.mean(axis=1)), 1, 2)
        fig.update_yaxes(title_text="decoder layer", autorange="reversed", row=1, col=1)
        fig.update_xaxes(title_text="decoder layer", row=1, col=2)
        fig.update_yaxes(title_text="attention on the contextual token", range=[0, 1], row=1, col=2)
        fig.update_layout(height=420, showlegend=False, margin=dict(l=10, r=10, t=40, b=10))
        ui.show_figure(fig, pd.DataFrame([{"decoder_layer": l, "head": h, "text_to_contextual": ctx[l, h]}
                                          for l in range(ctx.shape[0]) for h in range(ctx.shape[1])]),
                       "contextual_mass")

    st.subheader("Which words does the final token read?")
    st.caption("The final token's attention (mean over the chosen decoder layers and all heads) summed over the "
               "sub-word tokens of each word and over every copy of the text (Echo has two). Bars show each "
               "word's share of the attention that lands on the text, so methods are comparable; the table "
               "gives what went to the prompt and to the prefix.")
    decoder_methods = [m.name for m in list_methods() if m.name != "sentence_encoder"]  # it has no decoder trace
    methods = ui.method_picker("attn_words", default=("prompteol", "echo", "kv_embedding"), only=decoder_methods)
    lo, hi = st.slider("Decoder layers averaged", 0, L - 1, (0, L - 1), key="attn_layers")
    frames, rest = [], []
    for m in methods:
        arrays = traced(m, text)
        template = m.prompt_template(backbone.tokenizer)  # as tokenized (TP/HTP may add a start token)
        f = word_attention(backbone.tokenizer, template, text, arrays["final"], len(arrays["tokens"]),
                           layers=range(lo, hi + 1))
        on_text = f["mass"].sum()
        label = f"{m.title} ({m.name})"
        frames.append(f.assign(method=label, share=f["mass"] / on_text if on_text > 0 else 0.0))
        on_ctx = float(arrays["on_contextual"][lo : hi + 1].mean(axis=(0, 1))) if "on_contextual" in arrays else 0.0
        rest.append({"method": label, "on the text": on_text, "on the prompt": f.attrs["template_mass"],
                     "on the prefix": f.attrs["prefix_mass"], "on the contextual token": on_ctx})
    words = pd.concat(frames, ignore_index=True)
    fig = go.Figure()
    for label, g in words.groupby("method", sort=False):
        fig.add_trace(go.Bar(x=[f"{i}:{ui.label(w)}" for i, w in zip(g["word_index"], g["word"])], y=g["share"],
                             name=label))
    fig.update_layout(barmode="group", height=420, yaxis_title="share of the text's attention",
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=-0.3))
    ui.show_figure(fig, words, "final_token_word_attention")
    st.dataframe(pd.DataFrame(rest), hide_index=True)
