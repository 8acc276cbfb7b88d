"""Page discovery: every `pages/<N>_<slug>.py`, in filename order, titled by its docstring's first line."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PAGES_DIR = Path(__file__).resolve().parent.parent / "pages"


def page_files() -> list[Path]:
    """The page scripts, ordered by their number prefix (numerically: 10_... comes after 9_...)."""
    def order(p: Path):
        m = re.match(r"(\d+)_", p.name)
        return (int(m.group(1)) if m else 10**9, p.name)

    return sorted((p for p in PAGES_DIR.glob("*.py") if not p.name.startswith("_")), key=order)


def page_title(path: Path) -> str:
    """First line of the module docstring, else the slug of the filename ("2_embed_compare" -> "Embed compare")."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if doc and doc.strip():
        return doc.strip().splitlines()[0].strip().rstrip(".")
    return _slug(path).replace("_", " ").capitalize()


def page_summary(path: Path) -> str:
    """The docstring's first paragraph after the title line ("" when there is none)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    rest = doc.strip().split("\n", 1)[1] if "\n" in doc.strip() else ""
    return " ".join(rest.strip().split("\n\n", 1)[0].split()) if rest.strip() else ""


def _slug(path: Path) -> str:
    return re.sub(r"^\d+_", "", path.stem)


def url_path(path: Path) -> str:
    """"2_embed_compare.py" -> "2-embed-compare". Deliberately not Streamlit's own name for a file in pages/
    ("embed_compare"): while a process has not yet seen st.navigation, Streamlit treats pages/ as a legacy
    multipage folder and would run a page whose URL matches that name on its own, without app.py's sidebar."""
    return path.stem.replace("_", "-").lower()


def pages() -> list:
    """`st.Page` objects for `st.navigation`; the first one is the default (home) page."""
    import streamlit as st

    return [st.Page(str(p), title=page_title(p), url_path=url_path(p), default=(i == 0))
            for i, p in enumerate(page_files())]
