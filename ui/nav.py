"""Page discovery: every `pages/<N>_<slug>.py`, in filename order, titled by its docstring's first line.

Direct links on a fresh server (streamlit#9992). Streamlit 1.67 decides once per process, when the first session
starts, whether the app is a legacy (v1) multipage app: `PagesManager.uses_pages_directory` becomes True when a
`pages/` folder sits next to the entry script, and only `st.navigation` sets it back to False. While it is True,
`ScriptRunner._run_script` does not run app.py but `_mpa_v1`, which builds pages from `pages/*.py` with
Streamlit's own URL names ("6_sensitivity.py" -> "sensitivity") and resolves the requested URL against them;
an unknown name sends `page_not_found` (the "Page not found" box) and runs app.py as the main page. So:

* every page's URL is exactly Streamlit's own name for its file (`url_path`), so the legacy lookup finds the
  page the link asks for, with the same script hash as the page app.py registers;
* a page run that way (alone, without app.py's sidebar) hands over at once (`hand_over_to_app`): it clears the
  legacy flag, as `st.navigation` would have, and reruns, which now runs app.py on the same page.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from analysis.core.versions import parse


def _pages_dir() -> Path:
    """pages/ of a checkout, else the copy an installed wheel carries (ui/app/pages, made by setup.py)."""
    checkout = Path(__file__).resolve().parent.parent / "pages"
    return checkout if checkout.is_dir() else Path(__file__).resolve().parent / "app" / "pages"


PAGES_DIR = _pages_dir()


def page_files() -> list[Path]:
    """The page scripts, in the order of their number prefix (10_x comes after 9_y), then by name."""
    def order(p: Path):
        m = re.match(r"(\d+)_", p.name)
        return (int(m[1]) if m else 10**9, p.name)

    return sorted((p for p in PAGES_DIR.glob("*.py") if not p.name.startswith("_")), key=order)


def page_title(path: Path) -> str:
    """First line of the module docstring, else the slug of the filename ("2_embed_compare" -> "Embed compare")."""
    doc = _docstring(path)
    if doc and doc.strip():
        return doc.strip().splitlines()[0].strip().rstrip(".")
    return _slug(path).replace("_", " ").capitalize()


def page_summary(path: Path) -> str:
    """The docstring's first paragraph after the title line ("" when there is none)."""
    doc = _docstring(path) or ""
    rest = doc.strip().split("\n", 1)[1] if "\n" in doc.strip() else ""
    return " ".join(rest.strip().split("\n\n", 1)[0].split()) if rest.strip() else ""


def _docstring(path: Path) -> str | None:
    return ast.get_docstring(parse(path.read_text(encoding="utf-8")))


def _slug(path: Path) -> str:
    return re.sub(r"^\d+_", "", path.stem)


def url_path(path: Path) -> str:
    """"2_embed_compare.py" -> "embed_compare": Streamlit's own name for a file in pages/ (number prefix and its
    separators dropped, runs of "_" or spaces made one "_"), so a legacy first run finds it (module docstring)."""
    return re.sub(r"[_ ]+", "_", re.sub(r"^[0-9]*[_ -]*", "", path.stem)).strip() or path.stem


def hand_over_to_app() -> None:
    """Called first by every page (through `ui.user_errors`): if this run is Streamlit's legacy multipage run of
    the page alone (a fresh process whose first request was this page's link), switch the process to
    `st.navigation` mode, as its first call would, and rerun: app.py then draws the sidebar and this same page."""
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def pages() -> list:
    """`st.Page` objects for `st.navigation`; the first one is the default (home) page."""
    return [st.Page(str(p), title=page_title(p), url_path=url_path(p), default=(i == 0))
            for i, p in enumerate(page_files())]
