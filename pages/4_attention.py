"""Attention

Where does attention go? The mass every token puts on KV-Embedding's re-routed prefix (per layer and head), the
text's attention to Causal2Vec's contextual token, and which words each method's final token actually reads: one view
at a time (`?view=prefix|contextual|words` opens one).
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

import ui
from analysis.core import budgets
from analysis.inspect.attention import prefix_mass_summary
from analysis.methods import get_method, list_methods
from analysis.methods.causal2vec import shipped_fits
from ui.traces import traced, word_shares

VIEWS = {"prefix": "Re-routed prefix (KV-Embedding)", "contextual": "Contextual token (Causal2Vec)",
         "words": "Which words the final token reads"}
DEFAULT_TEXT = "The bank by the river raised its interest rates after the flood damaged the town."


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


def prefix_section(backbone, text: str) -> None:
    """KV-Embedding: the mass every query puts on the re-routed prefix, per layer and head."""
    st.subheader("Attention to the re-routed prefix")
    st.caption("For KV-Embedding: the share of each query's attention that lands on the prepended key/value of "
               "the final token, per decoder layer and head. Layers outside the re-routing set have no prefix (0).")
    kv = ui.method_picker("attn_kv", default=("kv_embedding",), multi=False, only=("kv_embedding",))[0]
    kv_arrays = traced(kv, text)
    in_set = sorted(kv.decoder_layers(backbone))
    st.caption(f"Re-routing in decoder layers {', '.join(map(str, in_set)) or 'none'} "
               f"(layers={kv.params.layers}).")
    mass = kv_arrays["mass"]
    by_head, _ = prefix_mass_summary(mass)
    frame = pd.DataFrame([{"decoder_layer": l, "head": h, "mean_prefix_mass": by_head[l, h]}
                          for l in range(by_head.shape[0]) for h in range(by_head.shape[1])])
    ui.show_figure(prefix_figure(mass, list(kv_arrays["tokens"]), in_set), frame, "prefix_mass")


def contextual_section(text: str) -> None:
    """Causal2Vec: the text's attention to the contextual token, next to the untrained bridge's."""
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
        frozen = traced(get_method("causal2vec", bridge="untrained", readout=c2v.params.readout,
                                   instruction=c2v.params.instruction), text)["contextual"]  # (L, H)
        fig = make_subplots(rows=1, cols=2, column_widths=[0.35, 0.65], horizontal_spacing=0.08,
                            subplot_titles=("per head (chosen bridge)", "mean over heads"))
        fig.add_trace(go.Heatmap(z=ctx, x=[f"h{h}" for h in range(ctx.shape[1])], y=list(range(len(ctx))),
                                 colorscale="Viridis", zmin=0, zmax=1, colorbar=dict(title="mass", x=0.3)), 1, 1)
        fig.add_trace(go.Bar(x=list(range(len(ctx))), y=ctx.mean(axis=1), name=f"bridge = {c2v.params.bridge}"), 1, 2)
        if c2v.params.bridge != "untrained":
            fig.add_trace(go.Bar(x=list(range(len(frozen))), y=frozen.mean(axis=1),
                                 name="untrained bridge, frozen decoder"), 1, 2)
        fig.update_yaxes(title_text="decoder layer", autorange="reversed", row=1, col=1)
        fig.update_xaxes(title_text="decoder layer", row=1, col=2)
        fig.update_yaxes(title_text="attention on the contextual token", range=[0, 1], row=1, col=2)
        fig.update_layout(height=420, barmode="group", margin=dict(l=10, r=10, t=40, b=10),
                          legend=dict(orientation="h", y=-0.25))
        ui.show_figure(fig, pd.DataFrame([{"decoder_layer": l, "head": h, "text_to_contextual": ctx[l, h],
                                           "untrained_frozen": frozen[l, h]}
                                          for l in range(ctx.shape[0]) for h in range(ctx.shape[1])]),
                       "contextual_mass")
        st.caption("Next to the chosen system, the same text with the untrained bridge on the frozen decoder: where "
                   "the trained decoder (its LoRA) attends more to C, it has learnt to read the summary.")


def words_section(backbone, text: str) -> None:
    """The final token's attention over the text's words, for each chosen method."""
    st.subheader("Which words does the final token read?")
    st.caption("The final token's attention (mean over the chosen decoder layers and all heads) summed over the "
               "sub-word tokens of each word and over every copy of the text (Echo has two). Bars show each "
               "word's share of the attention that lands on the text, so methods are comparable; the table "
               "gives what went to the prompt and to the prefix.")
    decoder_methods = [m.name for m in list_methods() if m.name != "sentence_encoder"]  # it has no decoder trace
    methods = ui.method_picker("attn_words", default=("prompteol", "echo", "kv_embedding"), only=decoder_methods)
    last = backbone.facts.n_layers - 1
    lo, hi = st.slider("Decoder layers averaged", 0, last, (0, last), key="attn_layers")
    words, rest = word_shares(methods, text, range(lo, hi + 1))
    fig = go.Figure()
    for label, g in words.groupby("method", sort=False):
        fig.add_trace(go.Bar(x=[f"{i}:{ui.label(w)}" for i, w in zip(g["word_index"], g["word"])], y=g["share"],
                             name=label))
    fig.update_layout(barmode="group", height=420, yaxis_title="share of the text's attention",
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=-0.3))
    ui.show_figure(fig, words, "final_token_word_attention")
    st.dataframe(rest, hide_index=True)


with ui.user_errors():
    st.title("Attention")
    backbone = ui.get_backbone()
    text = st.text_area("Text", DEFAULT_TEXT, key="attn_text", height=80,
                        help=f"Attention maps grow with the square of the length: at most "
                             f"{budgets.limit('attention_tokens')} tokens (prompt included).").strip()
    ui.check_sizes([text], "the text")
    if not text:
        st.info("Enter a text.")
        st.stop()

    view = ui.choice("Show", VIEWS, "attn_view", format_func=VIEWS.get, address="view",  # ?view=words opens one
                     help="One view at a time: each draws its own figures, and the page opens faster on one.")
    if view == "prefix":
        prefix_section(backbone, text)
    elif view == "contextual":
        contextual_section(text)
    else:
        words_section(backbone, text)
