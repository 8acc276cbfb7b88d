"""Sensitivity

How much each input token can move the embedding: Jacobian norms for last-token vs mean readout, for the plain
forward, HTP and KV-Embedding, next to the attention-product bound of the HTP paper.
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

import ui
from analysis.core import budgets
from analysis.inspect import sensitivity as S
from ui.traces import jacobians, jacobians_stored

OFFERED = ("mean", "htp", "kv_embedding", "token_prepending")
READOUT_NAMES = {"last": "last-token readout", "mean": "mean readout"}
COLORS = {"last": "#d62728", "mean": "#1f77b4"}


def label(method) -> str:
    return "Vanilla (no intervention)" if method.name in ("mean", "last") else method.title


def clean(token: str) -> str:
    return token.replace("Ġ", "␣").replace("Ċ", "↵").replace("▁", "␣")


def measure(method, text: str, layer: int, probes: int, exact: bool):
    """Sensitivities and bound for one method, through the cache."""
    return jacobians(method, text, layer, probes, exact, label(method))


def figure(arrays, tokens, title: str, exact: bool) -> go.Figure:
    x = [f"{i}:{ui.label(clean(t))}" for i, t in enumerate(tokens)]
    ph = arrays["placeholder"].astype(bool)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("measured ‖∂y/∂vᵢ‖ (Frobenius, random probes ± 1 s.e.)",
                                        "bound shape from attention maps: A[n, i] and (1/n)·Σⱼ A[j, i]"))
    for name in ("last", "mean"):
        fig.add_trace(go.Scatter(x=x, y=arrays[name], mode="lines+markers", name=READOUT_NAMES[name],
                                 line=dict(color=COLORS[name]), legendgroup=name,
                                 error_y=dict(type="data", array=arrays[name + "_se"], visible=True)), 1, 1)
        if exact and "exact_" + name in arrays:
            fig.add_trace(go.Scatter(x=x, y=arrays["exact_" + name], mode="markers", name=f"exact, {name}",
                                     marker=dict(symbol="x", color=COLORS[name]), legendgroup=name), 1, 1)
        bound = np.where(ph, np.nan, arrays["bound_" + name])
        fig.add_trace(go.Scatter(x=x, y=bound, mode="lines+markers", name=f"bound, {name}",
                                 line=dict(color=COLORS[name], dash="dot"), legendgroup=name,
                                 showlegend=False), 2, 1)
    fig.update_yaxes(type="log", title_text="sensitivity", row=1, col=1)
    fig.update_yaxes(type="log", title_text="A entry", row=2, col=1)
    fig.update_xaxes(tickangle=-60, tickfont=dict(size=9), row=2, col=1)
    fig.update_layout(title=title, height=640, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", y=1.08))
    return fig


def sentence(name: str, meta: dict) -> str:
    dec, agr = meta["decay"], meta["agreement"]
    rho_l, rho_m = agr["last"]["spearman"], agr["mean"]["spearman"]
    return (f"**{name}.** Last-token sensitivity changes by {dec['last']['decades']:+.2f} decades from the first "
            f"to the last quarter of the text (spread of log₁₀ norms {dec['last']['spread']:.2f}); the mean "
            f"readout by {dec['mean']['decades']:+.2f} (spread {dec['mean']['spread']:.2f}). The bound's shape "
            f"follows the measured last-token Jacobians {S.describe_agreement(rho_l)} (Spearman ρ = {rho_l:.2f} "
            f"over positions) and the mean-readout Jacobians {S.describe_agreement(rho_m)} (ρ = {rho_m:.2f}).")


with ui.user_errors():
    st.title("Sensitivity")
    st.caption(
        "For one text: how strongly the embedding y responds to each input token's embedding vᵢ, measured as the "
        "Frobenius norm of the Jacobian block ∂y/∂vᵢ. Each random probe u is one backward pass giving ‖Jᵢᵀu‖² "
        "for every position at once (its average over probes is ‖Jᵢ‖²). Over-squashing theory (HTP paper) predicts "
        "that the last-token readout hears the end of the text far better than its beginning, while the mean "
        "readout stays close to flat. Lower panel: the bound's structural shape from the model's own attention "
        "maps, A = Π layers (head-averaged attention + identity, rows normalised).")
    backbone = ui.get_backbone()
    L = backbone.facts.n_layers
    text = st.text_area("Text", S.SAMPLE_TEXT, key="sens_text", height=110).strip()
    ui.check_sizes([text], "the text")
    if not text:
        st.info("Enter a text.")
        st.stop()
    c1, c2, c3 = st.columns(3)
    with c1:
        layer = st.slider("Readout layer (hidden state)", 0, L, L, key="sens_layer",
                          help=f"{L} = final layer after the final norm; the same layer for every method.")
    with c2:
        probes = int(st.number_input("Random probes per readout", 2, budgets.limit("probes"), 16, key="sens_probes",
                                     help="More probes, smaller error bars; each costs one backward pass."))
    with c3:
        exact = st.checkbox(f"Also exact norms (d backward passes; at most {budgets.limit('exact_jacobian_tokens')} "
                            "tokens)", key="sens_exact")
    methods = ui.method_picker("sens", default=("mean", "htp", "kv_embedding"), only=OFFERED)
    if not all(jacobians_stored(m, text, layer, probes, exact) for m in methods):  # a stored one passed already
        n_tokens = max(len(m.prepare(backbone, [text])[0]) for m in methods)
        budgets.check("sensitivity_tokens", n_tokens, "the number of tokens in this text (prompt included)")
        if exact:
            S.check_exact(n_tokens, backbone.facts.hidden_size)

    # One figure, for the method chosen here, measured first: each figure is two tall log panels, and every one drawn
    # delays the page's first (issue 38); the sentences and the summary below compare every chosen method.
    by_name = {m.name: m for m in methods}
    shown = by_name[ui.choice("Figure for", by_name, "sens_shown", format_func=lambda name: label(by_name[name]),
                              help="Every chosen method is measured (its sentence and its row in the summary "
                                   "below); the figure shows one at a time, on the same layer and probes.")]
    drawn = measure(shown, text, layer, probes, exact)
    arrays, meta = drawn
    tokens = list(meta["tokens"])
    frame = pd.DataFrame({"position": range(len(tokens)), "token": tokens,
                          "placeholder": arrays["placeholder"].astype(bool),
                          **{k: arrays[k] for k in ("last", "last_se", "mean", "mean_se", "bound_last", "bound_mean")},
                          **({k: arrays[k] for k in ("exact_last", "exact_mean") if k in arrays})})
    ui.show_figure(figure(arrays, tokens, f"{label(shown)}, hidden state {meta['layer']}", exact), frame,
                   f"sensitivity_{shown.name}")
    if exact and "exact_last" in arrays:
        err = np.nanmax(np.abs(arrays["last"] / arrays["exact_last"] - 1))
        st.caption(f"Probe estimate vs exact norms: largest relative error {err:.1%} with {probes} probes.")

    rows = []
    for m in methods:
        arrays, meta = drawn if m is shown else measure(m, text, layer, probes, exact)
        st.markdown(sentence(label(m), meta))
        rel = arrays["last_se"] / arrays["last"]
        rows.append({"method": label(m), "tokens": len(meta["tokens"]), "probes": probes,
                     "median rel. s.e. (last)": round(float(np.nanmedian(rel)), 3),
                     "decades last": round(meta["decay"]["last"]["decades"], 2),
                     "decades mean": round(meta["decay"]["mean"]["decades"], 2),
                     "ρ bound vs last": round(meta["agreement"]["last"]["spearman"], 2),
                     "ρ bound vs mean": round(meta["agreement"]["mean"]["spearman"], 2),
                     "seconds": round(meta.get("sensitivity_seconds", 0.0), 1)})

    st.subheader("Summary")
    st.caption("Decades: log₁₀ of the median norm over the last quarter of the text tokens divided by the median "
               "over the first quarter (0 = flat; the final token itself is left out because its own residual path "
               "dominates the last readout). ρ: Spearman correlation over positions between log bound and log "
               "measured norm.")
    st.dataframe(pd.DataFrame(rows), hide_index=True)
