"""What each paper itself says, claim by claim: its own sentence, where it stands, its own evidence, and what makes
this project's test differ from its setting. Data only (no measurement), one module per paper, so a claim's words and
the paper's numbers are read and checked in one place (`tests/test_claims_sources.py` finds every quote in the
paper's text when `../shared/papers/` is present).

    SOURCES["kv-bias"].quote       # "performance improves from b = 0 to b = 1.0, ..."
    COVERAGE["kv"].line()          # "14 headline claims: 11 tested here (...); 3 not: ..."

The papers are quoted, never copied: a quote is one short sentence (or two fragments joined by " … "), a number is
the paper's cell with its table, row and column, and "computed" marks a difference worked out from those cells.
"""

from __future__ import annotations

from analysis.experiments.claims.papers import causal2vec, compression, gircse, htp, kv
from analysis.experiments.claims.papers.shapes import Coverage, Headline, Source

MODULES = {"kv": kv, "htp": htp, "gircse": gircse, "causal2vec": causal2vec, "compression": compression}
SOURCES = {cid: s for m in MODULES.values() for cid, s in m.SOURCES.items()}
COVERAGE = {key: m.COVERAGE for key, m in MODULES.items()}
TEXTS = {key: m.TEXT for key, m in MODULES.items()}  # the paper's plain-text file under ../shared/papers/
__all__ = ["COVERAGE", "SOURCES", "TEXTS", "Coverage", "Headline", "Source"]
