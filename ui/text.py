"""User text shown as text: one helper for Streamlit's Markdown, one for Plotly's HTML-like labels.

Anything a visitor typed or uploaded (a model name, a file name, texts, labels, instructions) goes through one of
these before it reaches st.markdown/st.error/st.caption/radio labels or a Plotly title, axis, legend or hover:
a typed `![](http://...)` must not make the browser fetch an image, a pasted `<a href=...>` must not be a link.
"""

from __future__ import annotations

import html
import re

# Every ASCII punctuation character may be backslash-escaped in CommonMark. These have a meaning anywhere in a
# line (links, images, emphasis, code, raw HTML, tables, Streamlit's `$` math and `:colour[...]` directives);
# `-`, `+`, `.` and `#` only at the start of a line (lists, headings), where they are escaped too. Plain
# hyphens, dots and slashes stay readable.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>!|$~:&])")
_MD_LINE_START = re.compile(r"^(\s*)([-+#>=]|\d+[.)])", flags=re.MULTILINE)


def md(text) -> str:
    """`text` escaped for Markdown: it renders literally, and newlines stay line breaks."""
    escaped = _MD_SPECIAL.sub(r"\\\1", str(text))
    escaped = _MD_LINE_START.sub(_escape_line_start, escaped)
    return escaped.replace("\n", "  \n")


def _escape_line_start(m: re.Match) -> str:
    indent, marker = m.group(1), m.group(2)
    if marker[0].isdigit():  # "12." / "12)" starts a numbered list: escape the punctuation (digits cannot be)
        return f"{indent}{marker[:-1]}\\{marker[-1]}"
    return f"{indent}\\{marker}"


def label(text) -> str:
    """`text` escaped for a Plotly label (title, axis tick, legend, hover): Plotly renders a subset of HTML, so
    `<`, `>` and `&` become entities and show as typed."""
    return html.escape(str(text), quote=False)
