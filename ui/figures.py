"""Figures: a Plotly chart whose toolbar always offers "download as PNG", plus its data as CSV."""

from __future__ import annotations

import re

import streamlit as st


def show_figure(fig, data, name: str) -> None:
    """Draw `fig` and offer `data` (a pandas DataFrame) as `<name>.csv`. `name` must be unique on the page.

    PNG export happens in the browser through Plotly's toolbar (no kaleido: it needs a browser install)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "figure"
    st.plotly_chart(fig, key=f"fig_{slug}", config={
        "displayModeBar": True,  # always visible, not only on hover: the PNG button is the figure's export
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": slug, "scale": 2},
    })
    st.download_button("Download data (CSV)", data.to_csv(index=False).encode("utf-8"), file_name=f"{slug}.csv",
                       mime="text/csv", key=f"csv_{slug}", on_click="ignore")
