"""The one view of a method's or trained system's declared differences from its paper: a small expander.

    ui.deviations.show("method:kv_embedding")          # or "system:gircse", or a tuple of Deviations
    ui.deviations.show(info.deviations, title="PromptEOL: differences from the paper")

The text comes from the modules' `DEVIATIONS` (`analysis.core.deviations`), the same the command line's
`python -m analysis methods` and `train <system> --help` print and the claims board shows beside each claim.
"""

from __future__ import annotations

import streamlit as st

from analysis.experiments.machinery.fidelity import of
from ui.text import md

TITLE = "Differences from the paper"


def show(deviations, *, title: str = TITLE, expanded: bool = False) -> None:
    """An expander listing `deviations` (a source such as "method:kv_embedding", or Deviations); nothing when the
    source declares none."""
    if isinstance(deviations, str):
        deviations = of(deviations)
    if not deviations:
        return
    with st.expander(title, expanded=expanded):
        for d in deviations:
            restore = f" Restores it: `{d.restore}`." if d.restore else " No setting restores it."
            st.markdown(f"- **{md(d.topic)}**: the {d.source} {md(d.paper)}; this repository {md(d.here)} "
                        f"({md(d.why)}).{restore}")
