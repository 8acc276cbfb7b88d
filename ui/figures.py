"""Figures: a Plotly chart whose toolbar always offers "download as PNG", plus its data as CSV; and every figure a
page draws collected for one "Save this page's figures" HTML file (the library's standalone writer)."""

from __future__ import annotations

import re
from contextvars import ContextVar

import pandas as pd
import streamlit as st

from analysis.core.figure_layout import tidy
from analysis.core.standalone import Document, heading, section
from ui import timing
from ui.text import md

# The figures drawn so far in this script run, (name, figure) in page order; None outside a page body. Reset by
# `start_page` (through ui.user_errors, which every page enters first), read when the HTML button is clicked.
_PAGE_FIGURES: ContextVar[list | None] = ContextVar("embedscope_page_figures", default=None)


def start_page() -> None:
    _PAGE_FIGURES.set([])


def page_html(figures: list) -> bytes:
    """One standalone HTML file holding `figures` ((name, figure) pairs), each under its name."""
    doc = Document("embedscope: this page's figures")
    for name, fig in figures:
        doc.add(section(heading(name.replace("_", " ")), doc.figure(fig)))
    return doc.html().encode("utf-8")


def show_figure(fig, data, name: str) -> None:
    """Draw `fig` and offer `data` (a pandas DataFrame) as `<name>.csv`. `name` must be unique on the page.

    PNG export happens in the browser through Plotly's toolbar (no kaleido: it needs a browser install). The
    page's first figure also puts "Save this page's figures (HTML)" in the sidebar; the file is built on click
    from every figure the page drew."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "figure"
    tidy(fig)  # one layout for every view: title, legend, subplot titles and colour bars never overlap
    st.plotly_chart(fig, key=f"fig_{slug}", config={
        "displayModeBar": True,  # always visible, not only on hover: the PNG button is the figure's export
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": slug, "scale": 2},
    })
    timing.figure_sent()
    st.download_button("Download data (CSV)", data.to_csv(index=False).encode("utf-8"), file_name=f"{slug}.csv",
                       mime="text/csv", key=f"csv_{slug}", on_click="ignore")
    figures = _PAGE_FIGURES.get()
    if figures is None:
        return
    if not figures:
        st.sidebar.download_button("Save this page's figures (HTML)", lambda: page_html(figures),
                                   file_name="embedscope_figures.html", mime="text/html", key="page_figures_html",
                                   on_click="ignore", help="One file with every figure of this page, interactive, "
                                                           "that opens in any browser without a server.")
    figures.append((slug, fig))


def show_table(frame, *, index: bool = True) -> None:
    """A small table drawn as static HTML (`st.table`), every cell and header escaped so that it renders as typed.

    For tables of a few dozen cells beside a figure: the interactive grid (`st.dataframe`) costs the browser about
    0.2 s to mount on every visit, which a second visit within 3 s cannot spare (#38); large tables keep the grid,
    which scrolls, sorts and searches."""
    shown = frame.copy()
    shown.columns = [md(c) for c in shown.columns]
    shown.index = [md(i) for i in shown.index]
    shown = shown.map(_cell)
    st.table(shown, hide_index=not index)


def _cell(value) -> str:
    """One cell as text: blank for a missing value, a float to six significant digits (a float32 entropy of 1.31
    read back as 1.309999942779541 otherwise), anything else as typed, escaped."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return f"{value:.6g}" if isinstance(value, float) else md(value)
