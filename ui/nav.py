"""Page discovery: every `pages/<N>_<slug>.py`, in filename order, titled by its docstring's first line."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PAGES_DIR = Path(__file__).resolve().parent.parent / "pages"


def page_files() -> list[Path]:
    """The page scripts, sorted by filename (the number prefix sets the order)."""
    return sorted(p for p in PAGES_DIR.glob("*.py") if not p.name.startswith("_"))


def page_title(path: Path) -> str:
    """First line of the module docstring, else the slug of the filename ("2_embed_compare" -> "Embed compare")."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if doc and doc.strip():
        return doc.strip().splitlines()[0].strip().rstrip(".")
    return _slug(path).replace("_", " ").capitalize()


def _slug(path: Path) -> str:
    return re.sub(r"^\d+_", "", path.stem)


def pages() -> list:
    """`st.Page` objects for `st.navigation`; the first one is the default (home) page."""
    import streamlit as st

    return [st.Page(str(p), title=page_title(p), url_path=_slug(p), default=(i == 0))
            for i, p in enumerate(page_files())]
