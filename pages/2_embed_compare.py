"""Embed & compare

Embed texts with several methods; compare their cosine-similarity matrices and nearest neighbours.
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ui
from analysis.core import budgets


def heatmap(sim: np.ndarray, texts: list[str], title: str) -> go.Figure:
    short = [ui.label(t if len(t) <= 40 else t[:39] + "…") for t in texts]  # pasted text is shown, never markup
    labels = [f"{i + 1}. {s}" for i, s in enumerate(short)]
    shown = [ui.label(t[:120]) for t in texts]
    hover = [[f"<b>{sim[i, j]:.3f}</b><br>{i + 1}: {shown[i]}<br>{j + 1}: {shown[j]}"
              for j in range(len(texts))] for i in range(len(texts))]
    # Colours span this matrix's own off-diagonal range: decoder embeddings are anisotropic (every cosine is
    # high), so a fixed -1..1 scale would paint everything the same colour.
    off = sim[~np.eye(len(texts), dtype=bool)]
    low = float(off.min()) if off.size else -1.0
    fig = go.Figure(go.Heatmap(z=sim, x=labels, y=labels, text=hover, hoverinfo="text", colorscale="Viridis",
                               zmin=low, zmax=1.0, colorbar=dict(title="cos")))
    fig.update_layout(title=title, height=520, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis=dict(showticklabels=len(texts) <= 30), yaxis=dict(showticklabels=len(texts) <= 30,
                                                                              autorange="reversed"))
    return fig


with ui.user_errors():
    st.title("Embed & compare")
    st.caption("Cosine similarity between every pair of texts, one matrix per method, and each text's nearest "
               "neighbours. Methods that agree on what is similar give similar-looking matrices. Each matrix's colours span "
               "its own range of cosines (shown on its colour bar).")
    col_in, col_m = st.columns(2)
    with col_in:
        texts = ui.text_input("embed", default="Demo: ambiguous words")
    with col_m:
        methods = ui.method_picker("embed", default=("last", "prompteol"))
        k_max = max(1, min(10, len(texts) - 1))
        k = st.number_input("Neighbours per text", min_value=1, max_value=k_max, value=min(3, k_max),
                            key=f"embed_k_{k_max}")

    results, timing = {}, []
    for m in methods:
        label = f"{m.title} ({m.name})"
        results[label], info = ui.encode_with_info(m, texts, quiet=True)
        timing.append({"method": label, "params": str(m.params), "texts": info["n"],
                       "seconds (this run)": round(info["seconds"], 3),
                       "seconds (computing)": round(info["computed_seconds"], 3),
                       "cache": "hit" if info["hit"] else "miss"})
    st.dataframe(pd.DataFrame(timing), hide_index=True)

    st.subheader("Cosine similarity")
    shown_n = min(len(texts), budgets.limit("matrix_texts"))  # a drawn matrix's hover text grows with n²
    if shown_n < len(texts):
        st.caption(f"The heatmaps show the first {shown_n:,} of {len(texts):,} texts (the neighbours below use all).")
    items = list(results.items())
    for row in range(0, len(items), 2):
        for col, (label, emb) in zip(st.columns(2), items[row:row + 2]):
            with col:
                head = texts.texts[:shown_n]
                sim = emb[:shown_n] @ emb[:shown_n].T  # (n, n); embeddings are L2-normalised
                frame = pd.DataFrame(sim, columns=head)
                frame.insert(0, "text", head)
                ui.show_figure(heatmap(sim, head, label), frame, f"similarity_{label.split('(')[-1][:-1]}")

    st.subheader("Nearest neighbours")
    if len(texts) < 2:
        st.info("Give at least two texts to see neighbours.")
    else:
        rows = []
        for label, emb in results.items():
            sim = emb @ emb.T  # (n, n) float32: 100 MB at the 5,000-text budget
            np.fill_diagonal(sim, -np.inf)  # a text is not its own neighbour
            order = np.argpartition(-sim, k, axis=1)[:, :k] if len(sim) > k + 1 else np.argsort(-sim, axis=1)[:, :k]
            order = np.take_along_axis(order, np.argsort(-np.take_along_axis(sim, order, 1), axis=1), 1)  # (n, k)
            for i, text in enumerate(texts.texts):
                for rank, j in enumerate(order[i], start=1):
                    rows.append({"text": text, "method": label, "rank": rank, "neighbour": texts.texts[j],
                                 "cosine": round(float(sim[i, j]), 4)})
        table = pd.DataFrame(rows)
        wide = table.pivot_table(index=["text", "rank"], columns="method", values="neighbour", aggfunc="first",
                                 sort=False).reset_index()
        st.dataframe(wide, hide_index=True)
        st.download_button("Download neighbours (CSV)", table.to_csv(index=False).encode("utf-8"),
                           file_name="neighbours.csv", mime="text/csv", key="csv_neighbours", on_click="ignore")
