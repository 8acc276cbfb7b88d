"""Geometry

Alignment and uniformity of each method, anisotropy along the depth of the model, and 2-D maps of the
embedding space (UMAP or PCA) coloured by a label.
"""

import textwrap

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

import ui
from analysis.inspect import geometry
from cache import compute

VIEWS = {"plane": "Alignment & uniformity", "layers": "Anisotropy by layer", "maps": "Maps (UMAP / PCA)"}


def label_of(m) -> str:
    return f"{m.title} ({m.name})"


def plane_view(methods):
    st.caption("Wang & Isola (2020): **alignment** = mean ‖f(x) − f(y)‖² over paraphrase pairs (lower = "
               "paraphrases closer), **uniformity** = log mean exp(−2‖f(x) − f(y)‖²) over all pairs of texts (lower "
               "= spread more evenly over the sphere). Good embedders sit bottom-left. Error bars: 95% bootstrap "
               "intervals (texts resampled for uniformity, positive pairs for alignment).")
    pairs = ui.pairs_input("geometry")
    threshold, rule = geometry.positive_threshold(pairs.scores)
    marked = None
    by_hand = st.checkbox("Mark the positive pairs by hand", key="geometry_by_hand",
                          help=f"Otherwise a pair is positive when {rule}.")
    if by_hand:
        table = pd.DataFrame({"positive": pairs.scores >= threshold, "score": pairs.scores,
                              "sentence 1": pairs.left, "sentence 2": pairs.right})
        edited = st.data_editor(table, key="geometry_marks", hide_index=True, disabled=["score", "sentence 1",
                                                                                         "sentence 2"])
        marked = edited["positive"].to_numpy(dtype=bool)
    n_boot = st.slider("Bootstrap replicates", 0, 1000, 200, step=50, key="geometry_boot")
    pos = geometry.positive_pairs(pairs, marked=marked)
    st.caption(f"{len(pos.left_index):,} positive pair(s) ({pos.rule}) among {len(pairs):,}; uniformity and "
               f"anisotropy over all {len(pos.texts):,} distinct texts.")
    backbone = ui.get_backbone()
    rows = []
    for m in methods:
        values, _ = ui.shown(f"{label_of(m)}: alignment and uniformity",
                             lambda progress, m=m: compute.geometry(ui.store(), backbone, m, pos, n_boot,
                                                                    progress=progress), quiet=True)
        a, a_lo, a_hi, u, u_lo, u_hi, an, an_lo, an_hi = values.tolist()
        rows.append({"method": label_of(m), "alignment": a, "alignment_low": a_lo, "alignment_high": a_hi,
                     "uniformity": u, "uniformity_low": u_lo, "uniformity_high": u_hi, "anisotropy": an,
                     "anisotropy_low": an_lo, "anisotropy_high": an_hi, "positive_pairs": len(pos.left_index),
                     "texts": len(pos.texts)})
    frame = pd.DataFrame(rows)
    fig = go.Figure()
    for r in rows:
        fig.add_trace(go.Scatter(
            x=[r["uniformity"]], y=[r["alignment"]], mode="markers+text", name=r["method"], text=[r["method"]],
            textposition="top center", marker=dict(size=12),
            error_x=dict(type="data", symmetric=False, array=[r["uniformity_high"] - r["uniformity"]],
                         arrayminus=[r["uniformity"] - r["uniformity_low"]]),
            error_y=dict(type="data", symmetric=False, array=[r["alignment_high"] - r["alignment"]],
                         arrayminus=[r["alignment"] - r["alignment_low"]]),
            hovertemplate=f"<b>{r['method']}</b><br>uniformity %{{x:.3f}}<br>alignment %{{y:.3f}}"
                          f"<br>anisotropy {r['anisotropy']:.3f}<extra></extra>"))
    fig.update_layout(title=f"Alignment vs uniformity on {ui.label(pairs.name)}", xaxis_title="uniformity (lower = more uniform)",
                      yaxis_title="alignment (lower = paraphrases closer)", height=520, showlegend=False)
    ui.show_figure(fig, frame, "alignment_uniformity")
    st.dataframe(frame.round(4), hide_index=True)


def layers_view(methods):
    st.caption("**Anisotropy** = mean cosine similarity between the embeddings of two different texts: about 0 for "
               "an isotropic space, near 1 when every embedding points into the same narrow cone. Each curve reads "
               "the method's own prompt and pooling out at every hidden state (one forward pass).")
    texts = ui.text_input("geometry_layers")
    if len(texts) < 2:
        st.info("Give at least two texts.")
        st.stop()
    backbone = ui.get_backbone()
    rows = []
    for m in methods:
        curve, _ = ui.shown(f"{label_of(m)}: anisotropy at every layer",
                            lambda progress, m=m: compute.anisotropy(ui.store(), backbone, m, texts.texts, progress),
                            quiet=True)
        rows += [{"method": label_of(m), "hidden state": k, "anisotropy": float(v)} for k, v in enumerate(curve)]
    frame = pd.DataFrame(rows)
    fig = px.line(frame, x="hidden state", y="anisotropy", color="method", markers=True,
                  title=f"Anisotropy along depth ({len(texts):,} texts from {ui.label(texts.name)})")
    fig.update_layout(height=480, yaxis_range=[min(0.0, frame["anisotropy"].min() - 0.05), 1.02])
    ui.show_figure(fig, frame, "anisotropy_by_layer")
    st.caption(ui.LAYER_CONVENTION + " Under a prompt with last-token pooling, hidden state 0 is the same token "
               "embedding for every text, so its anisotropy is exactly 1.")


def maps_view(methods):
    st.caption("Each method's embeddings of a corpus projected to 2-D, one panel per method, coloured by the texts' "
               "label (polarity, topic, STS genre, or the `label` column of your file). Hover shows the text. The "
               "seed fixes the map: the same inputs always give the same picture.")
    texts = ui.text_input("geometry_maps", default="Polarity sentences")
    if len(texts) < 3:
        st.info("A map needs at least three texts.")
        st.stop()
    c1, c2 = st.columns(2)
    kind = c1.radio("Projection", ["pca", "umap"], format_func=str.upper, horizontal=True, key="geometry_map_kind",
                    help="PCA: the two directions of largest variance (linear). UMAP: neighbourhoods (cosine metric).")
    seed = int(c2.number_input("Seed", min_value=0, max_value=2**31 - 1, value=0, key="geometry_map_seed"))
    labels = texts.labels if texts.labels is not None else ["(no label)"] * len(texts)
    frames = []
    for m in methods:
        ui.encode(m, texts, quiet=True)  # its warnings (truncation) shown; the map reads these embeddings
        xy, _ = ui.shown(f"{label_of(m)}: {kind.upper()} map",
                         lambda progress, m=m: compute.embedding_map(ui.store(), ui.get_backbone(), m, texts.texts,
                                                                     kind, seed, progress=progress), quiet=True)
        frames.append(pd.DataFrame({"method": label_of(m), "x": xy[:, 0], "y": xy[:, 1], "label": labels,
                                    "text": texts.texts}))
    frame = pd.concat(frames, ignore_index=True)
    # Texts and labels come from the user: escaped for Plotly (the CSV keeps them as they are).
    shown = frame.assign(hover=["<br>".join(ui.label(line) for line in textwrap.wrap(t[:300], 60)) for t in frame["text"]],
                         label=[ui.label(v) for v in frame["label"]])
    wrap = min(len(methods), 2)
    fig = px.scatter(shown, x="x", y="y", color="label", facet_col="method", facet_col_wrap=wrap,
                     hover_name="hover", hover_data={"x": False, "y": False, "method": False, "label": True},
                     title=f"{kind.upper()} of {len(texts):,} texts from {ui.label(texts.name)} (seed {seed})")
    fig.update_xaxes(matches=None, showticklabels=False, title="")
    fig.update_yaxes(matches=None, showticklabels=False, title="")
    fig.update_layout(height=420 * ((len(methods) + wrap - 1) // wrap))
    ui.show_figure(fig, frame, f"map_{kind}")


with ui.user_errors():
    st.title("Geometry")
    methods = ui.method_picker("geometry", default=("last", "mean", "prompteol"))
    view = st.radio("View", list(VIEWS), format_func=VIEWS.get, horizontal=True, key="geometry_view")
    {"plane": plane_view, "layers": layers_view, "maps": maps_view}[view](methods)
