"""Intrinsic dimension

TwoNN intrinsic dimension of every layer's representations, with bootstrap bands, and the layer window
KV-Embedding's selection rules pick from it.
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from analysis.data import datasets
from analysis.experiments.machinery.records import recorded_report
from analysis.inspect import intrinsic_dim as idm
from cache.compute import stored_trajectory
from ui.traces import trajectory

RULES = ("**Rules** (KV-Embedding): a *clear U-shape* (exactly one interior minimum rising by at least "
         f"{idm.PROMINENCE:.0%} of the ID range on both sides, and it is the global minimum ℓ*) gives the window "
         "ℓ* … min(L−1, ℓ* + ⌊0.1·L⌋); otherwise (*several minima*) the lowest ID after the first ⌊0.2·L⌋ "
         f"hidden states, same width; a *flat* trajectory (range < {idm.FLAT:.0%} of the median) says so. "
         "Candidates are hidden states 1 … L−1; window layer k means *re-route in decoder layer k*, which reads "
         "hidden state k.")


def compute_trajectory(method, texts, readout, n_boot, run: bool):
    backbone = ui.get_backbone()
    if not run and stored_trajectory(ui.store(), backbone, method, texts, readout, n_boot) is None:
        return None  # not computed yet: wait for the button
    return trajectory(backbone, method, texts, readout, n_boot)


def recorded_curve(backbone) -> tuple[str, pd.DataFrame] | None:
    """(label, trajectory) of the built-in model's published report: the states KV-Embedding's layers=auto rule
    reads (its prompt, no re-routing, the final token) on the rule's own corpus, without bands; None for a model
    without a published report."""
    report = recorded_report(backbone.identity)
    ids = ((report or {}).get("layers") or {}).get("id_trajectory")
    if not ids:
        return None
    values = np.array([np.nan if v is None else v for v in ids], dtype=float)
    df = pd.DataFrame({"layer": np.arange(len(values)), "id": values, "lo": np.nan, "hi": np.nan,
                       "defined": np.isfinite(values), "n_unique": np.nan,
                       "reason": np.where(np.isfinite(values), "", "undefined (duplicate points)")})
    model = backbone.facts.title or backbone.facts.name
    return f"Recorded {report['created'][:10]} · KV-Embedding prompt only · {model} · last", df


def figure(curves: dict, windows: dict) -> go.Figure:
    fig = go.Figure()
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"]
    for i, (raw_name, df) in enumerate(curves.items()):
        color, name = palette[i % len(palette)], ui.label(raw_name)  # the name holds the typed model name
        if np.isfinite(df["lo"]).any():
            fig.add_trace(go.Scatter(x=list(df["layer"]) + list(df["layer"][::-1]),
                                     y=list(df["hi"]) + list(df["lo"][::-1]), fill="toself", opacity=0.2,
                                     line=dict(width=0), fillcolor=color, name=f"{name} (90% band)",
                                     hoverinfo="skip", showlegend=False))
        fig.add_trace(go.Scatter(x=df["layer"], y=df["id"], mode="lines+markers", name=name,
                                 line=dict(color=color), customdata=df[["n_unique", "reason"]],
                                 hovertemplate="hidden state %{x}: ID %{y:.2f}<br>%{customdata[0]} distinct "
                                               "points %{customdata[1]}<extra></extra>"))
        undefined = df[~df["defined"].astype(bool)]
        if len(undefined):
            fig.add_trace(go.Scatter(x=undefined["layer"], y=[0] * len(undefined), mode="markers",
                                     marker=dict(symbol="x", color=color, size=10), name=f"{name}: undefined",
                                     text=undefined["reason"], hovertemplate="hidden state %{x}: %{text}"))
        sel = windows[raw_name]
        if sel.layers:
            fig.add_vrect(x0=sel.start - 0.5, x1=sel.end + 0.5, fillcolor=color, opacity=0.12, line_width=0,
                          annotation_text=f"{sel.rule}: {sel.start}–{sel.end}", annotation_position="top left")
    fig.update_layout(height=460, xaxis_title="hidden state (0 = embeddings; decoder layer ℓ produces ℓ+1)",
                      yaxis_title="intrinsic dimension (TwoNN)", margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", y=-0.25))
    return fig


with ui.user_errors():
    st.title("Intrinsic dimension")
    st.caption("How many dimensions do a layer's text representations really use? TwoNN (Facco et al. 2017, "
               "scikit-dimension) per hidden state, over the chosen texts; duplicate points are removed first "
               "(a fixed prompt makes every text's final-token state identical at hidden state 0). "
               + ui.LAYER_CONVENTION)
    col_t, col_m = st.columns(2)
    with col_t:
        sets = datasets.text_menu()
        texts = ui.text_input("id", default="STS-B dev sentences" if "STS-B dev sentences" in sets
                              else "Polarity sentences")
        readout = st.radio("States", ["last", "mean"], horizontal=True, key="id_readout",
                           format_func={"last": "final token", "mean": "mean over the text"}.get)
        n_boot = st.slider("Bootstrap resamples (bands)", 0, 100, 20, step=5, key="id_boot",
                           help="Each resample draws the points with replacement (repeats removed); the band is "
                                "the 5–95% range of the estimates (each on ~63% of the points, so the band can "
                                "sit a little off the full-sample line). Differences inside the bands are noise.")
    with col_m:
        st.session_state.setdefault("id_kv_embedding_layers", "none")  # the states the selection rules use
        methods = ui.method_picker("id", default=("kv_embedding",))
        st.caption("A method's prompt and intervention are applied; its pooling is replaced by the states "
                   "chosen on the left. Choose `last` for no prompt at all. For the states KV-Embedding's rules "
                   "use (prompt only, no re-routing), set its layers to `none`.")
    backbone = ui.get_backbone()
    if len(texts) < idm.MIN_POINTS:
        st.warning(f"TwoNN needs at least {idm.MIN_POINTS} distinct texts; every layer will be undefined.")

    curves, windows = dict(st.session_state.get("id_kept", {})), {}
    run = st.button("Compute", key="id_compute", type="primary",
                    help="Results are cached: a trajectory computed once shows up without pressing again.")
    missing = []
    for m in methods:
        label = f"{m.title} · {backbone.facts.name} · {readout}"
        df = compute_trajectory(m, texts.texts, readout, n_boot, run)
        if df is None:
            missing.append(m.title)
        else:
            curves[label] = df
    if missing:
        st.info(f"Not computed yet: {', '.join(missing)} on {len(texts):,} texts — press **Compute** "
                "(roughly a minute per thousand short texts on two CPU cores).")
    if not curves:
        recorded = recorded_curve(backbone)
        if recorded is None:
            st.stop()
        label, curves[label] = recorded
        st.caption(ui.md(f"Shown until you compute: **{label}**, from this model's published report (not your "
                         "texts or settings)."))
    for name, df in curves.items():
        windows[name] = idm.select_window(df["id"].to_numpy(), int(df["layer"].max()))
    if st.button("Keep these curves for comparison", key="id_keep",
                 help="Kept curves stay on the plot when you change the model, method or texts."):
        st.session_state["id_kept"] = dict(curves)
    if st.session_state.get("id_kept") and st.button("Forget kept curves", key="id_forget"):
        st.session_state["id_kept"] = {}
        st.rerun()

    frame = pd.concat([df.assign(curve=name) for name, df in curves.items()], ignore_index=True)
    ui.show_figure(figure(curves, windows), frame, "intrinsic_dimension")
    st.markdown(RULES)
    st.dataframe(pd.DataFrame([{"curve": n, "rule": s.rule, "window (hidden states = decoder layers)":
                                "—" if not s.layers else f"{s.start}–{s.end}", "reason": s.reason}
                               for n, s in windows.items()]), hide_index=True)
