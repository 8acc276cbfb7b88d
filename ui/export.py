"""Standalone HTML: a narrative and its Plotly figures in one file that opens anywhere, with no server and no
network (plotly.js embedded once in the head, every figure interactive). Pure functions, no Streamlit: the lesson
download, the "save this page's figures" button and the tests call the same code."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;line-height:1.5}
section{margin:2.5em 0;border-top:1px solid #ddd;padding-top:1em} details{margin:.8em 0;color:#333}
summary{cursor:pointer;font-weight:600} code{background:#f3f3f3;padding:0 .2em}"""


@dataclass(frozen=True)
class Section:
    """One part of the document: a heading, Markdown text (the subset lessons use), figures, an optional question
    whose answer opens on click (<details>, as the app's expander)."""
    heading: str
    text: str = ""
    figures: list = field(default_factory=list)  # plotly Figures or their dicts
    question: str = ""
    answer: str = ""


def inline(text: str) -> str:
    """Markdown's inline subset the lessons use (`code`, **bold**, *italic*), on escaped text."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"(?<![*\w])\*([^*]+)\*(?![*\w])", r"<em>\1</em>", out)


def paragraphs(text: str) -> str:
    return "".join(f"<p>{inline(' '.join(p.split()))}</p>" for p in re.split(r"\n\s*\n", text.strip()) if p.strip())


def figure_div(fig, n: int) -> str:
    """One interactive figure as a <div> (plotly.js comes once from the head). Sizes are the figure's own; a
    figure without a width fills the page. The app's theme (colours, room for tick labels) is Streamlit's and does
    not travel with the figure, so a copy gets Plotly's white template and margins that grow to fit the labels."""
    fig = go.Figure(fig)  # a copy: the page's figure stays as drawn
    fig.update_layout(template="plotly_white")
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return pio.to_html(fig, include_plotlyjs=False, full_html=False, div_id=f"figure-{n}",
                       config={"displaylogo": False, "responsive": True})


def standalone_html(title: str, sections: list[Section], intro: str = "") -> str:
    """The whole document: title, intro, every section with its figures, plotly.js embedded once."""
    body, n = [], 0
    for s in sections:
        parts = [f"<h2>{html.escape(s.heading)}</h2>", paragraphs(s.text)]
        for fig in s.figures:
            parts.append(figure_div(fig, n))
            n += 1
        if s.question:
            parts.append(f"<details><summary>{inline(s.question)}</summary>{paragraphs(s.answer)}</details>")
        body.append(f"<section>{''.join(parts)}</section>")
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style><script type=\"text/javascript\">{get_plotlyjs()}</script></head><body>"
            f"<h1>{html.escape(title)}</h1>{paragraphs(intro)}{''.join(body)}</body></html>")
