"""Standalone HTML: one file that opens anywhere, offline, with interactive Plotly figures. The one writer the model
report, the claims board, lesson downloads and page exports share.

plotly.js (about 4.8 MB) goes in once, gzip-compressed and base64-encoded (about 1.9 MB), and is unpacked in the
browser with the standard `DecompressionStream`; every figure is then drawn from its JSON. Several documents in one
folder can share that blob instead (`shared_plotly=True`): it goes once into `plotly.gz.js` beside them, loaded
with a plain `<script src>` (which, unlike `fetch`, works from `file://`), and each document keeps only its own
figures and tables. Every string a visitor supplied is escaped (`e`, `inline`), so typed markup stays inert.

    doc = Document("My page")
    doc.add(heading("Quality"), paragraphs(text), doc.figure(fig), table(["method", "rho"], rows))
    save(doc.html(), "out.html")
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import os
import re
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from analysis.core.figure_layout import tidy

SHARED_PLOTLY = "plotly.gz.js"
STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;
line-height:1.5}
section{margin:2.5em 0;border-top:1px solid #ddd;padding-top:1em}details{margin:.8em 0;color:#333}
summary{cursor:pointer;font-weight:600}code{background:#f3f3f3;padding:0 .2em}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.missing{background:#fff4e5;border:1px solid
#f0a040;padding:.6em 1em;margin:.5em 0}.note{color:#555;font-size:.92em}.best{font-weight:bold}
.chip{display:inline-block;border-radius:.8em;padding:0 .6em;font-size:.9em;white-space:nowrap}"""
LOADER = """<script>
(async () => {
  const unzip = async (blob) => {
    const bytes = Uint8Array.from(atob(blob.trim()), c => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return await new Response(stream).text();
  };
  (0, eval)(await unzip(window.PLOTLY_GZ || document.getElementById('plotly-gz').textContent));
  const figures = JSON.parse(await unzip(document.getElementById('figures-gz').textContent));
  for (const [target, spec] of figures) {
    Plotly.newPlot(target, spec.data, spec.layout, {responsive: true, displaylogo: false});
  }
})();
</script>"""


@functools.lru_cache(maxsize=1)
def plotly_blob() -> str:
    """plotly.js, gzip-compressed, base64 (computed once per process)."""
    return packed(get_plotlyjs())


def packed(text: str) -> str:
    """`text` gzip-compressed and base64-encoded: what the loader unpacks (figures' JSON shrinks about tenfold)."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), 9, mtime=0)).decode("ascii")


def shared_plotly_text() -> str:
    """The content of plotly.gz.js: the same compressed blob, as a script that sets `window.PLOTLY_GZ`."""
    return f'window.PLOTLY_GZ = "{plotly_blob()}";\n'


def e(value) -> str:
    """Any value as escaped text."""
    return html.escape(str(value))


def inline(text: str) -> str:
    """Markdown's inline subset (`code`, **bold**, *italic*), on escaped text."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"(?<![*\w])\*([^*]+)\*(?![*\w])", r"<em>\1</em>", out)


def paragraphs(text: str) -> str:
    """Blank-line separated paragraphs with the inline subset."""
    return "".join(f"<p>{inline(' '.join(p.split()))}</p>" for p in re.split(r"\n\s*\n", text.strip()) if p.strip())


def heading(text: str, level: int = 2) -> str:
    return f"<h{level}>{e(text)}</h{level}>"


def table(head, rows, *, classes: dict | None = None) -> str:
    """A table of escaped cells; `classes` {row index: CSS class} marks rows (the best, a missing one)."""
    th = "".join(f"<th>{e(h)}</th>" for h in head)
    body = "".join(f"<tr{_cls((classes or {}).get(i))}>" + "".join(f"<td>{e(v)}</td>" for v in row) + "</tr>"
                   for i, row in enumerate(rows))
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def details(question: str, answer: str) -> str:
    """A question whose answer opens on click (the app's expander)."""
    return f"<details><summary>{inline(question)}</summary>{paragraphs(answer)}</details>"


def missing(state: str, reason: str) -> str:
    """The box a missing or incomplete part shows: what is missing and why."""
    return f'<div class="missing"><b>{e(state)}:</b> {e(reason)}</div>'


def section(*parts: str, anchor: str = "") -> str:
    attr = f' id="{e(anchor)}"' if anchor else ""
    return f"<section{attr}>{''.join(parts)}</section>"


def _cls(name: str | None) -> str:
    return f' class="{name}"' if name else ""


class Document:
    """A title and parts (HTML strings from the helpers above); figures are collected as the parts are made."""

    def __init__(self, title: str, intro: str = ""):
        self.title, self.intro = title, intro
        self.parts: list[str] = []
        self._figures: list[tuple[str, str]] = []

    def add(self, *parts: str) -> "Document":
        self.parts.extend(parts)
        return self

    def figure(self, fig, name: str = "") -> str:
        """A place for one interactive figure (a plotly Figure or its dict), its element named `name` (a stable
        anchor a reader can link to) or numbered. Streamlit's theme does not travel with a figure, so the copy gets
        Plotly's white template and margins that grow to fit the labels."""
        fig = tidy(go.Figure(fig))  # a copy, laid out as the pages lay theirs out; the caller's stays as drawn
        fig.update_layout(template="plotly_white")
        name = name or f"figure-{len(self._figures)}"
        self._figures.append((name, fig.to_plotly_json()))
        return f'<div id="{name}" class="figure"></div>'

    def html(self, *, shared_plotly: bool = False) -> str:
        scripts = ""
        if self._figures:
            figures = pio.json.to_json_plotly([[name, spec] for name, spec in self._figures])
            plotly = (f'<script src="{SHARED_PLOTLY}"></script>' if shared_plotly else
                      f'<script id="plotly-gz" type="application/octet-stream">{plotly_blob()}</script>')
            scripts = (f"<noscript>The figures need JavaScript; every number is in the tables.</noscript>{plotly}"
                       f'<script id="figures-gz" type="application/octet-stream">{packed(figures)}</script>{LOADER}')
        return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{e(self.title)}</title>'
                f"<style>{STYLE}</style></head><body><h1>{e(self.title)}</h1>{paragraphs(self.intro)}"
                f"{''.join(self.parts)}{scripts}</body></html>")


def save(text: str, out, *, shared_plotly: bool = False, extra: dict | None = None) -> Path:
    """Write `text` to `out` (and `extra` {path: text} beside it), each through a temporary file renamed into
    place: an interrupted write never leaves a half-written file. With `shared_plotly`, plotly.gz.js is written
    beside it too (rewritten only when plotly's version changed it)."""
    out = Path(out)
    files = {out: text, **(extra or {})}
    shared = out.with_name(SHARED_PLOTLY)
    if shared_plotly and not (shared.is_file() and shared.read_text(encoding="utf-8") == shared_plotly_text()):
        files[shared] = shared_plotly_text()
    for path, content in files.items():
        path = Path(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(content, encoding="utf-8")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return out
