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

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    """One claim as its paper states it."""

    quote: str  # the paper's own words, short; " … " joins two fragments of one passage
    where: str  # section, table or figure, row and column
    number: str  # the paper's own evidence: model, benchmark, number or effect size
    differs: str  # one line: what makes this project's test differ from the paper's setting
    own: str = ""  # one line when the test is this project's own question, not the paper's claim

    def as_json(self) -> dict:
        return {"quote": self.quote, "where": self.where, "paper_number": self.number, "differs": self.differs,
                "own": self.own}


@dataclass(frozen=True)
class Headline:
    """One of a paper's headline claims: the board's claims that test it here, or why none can."""

    claim: str  # the headline claim in a few words
    tested_by: tuple = ()  # board claim ids
    why_not: str = ""  # what it needs, when no claim here can test it (or tests only a part)


@dataclass(frozen=True)
class Coverage:
    headlines: tuple  # Headline

    def line(self) -> str:
        """"14 headline claims: 11 tested here; not tested: X (needs ...); ...": one line for the board."""
        tested = [h for h in self.headlines if h.tested_by]
        missing = [h for h in self.headlines if not h.tested_by]
        parts = [f"{len(self.headlines)} headline claims: {len(tested)} tested here"]
        partly = [h for h in tested if h.why_not]
        if partly:
            parts.append("in part: " + "; ".join(f"{h.claim} ({h.why_not})" for h in partly))
        if missing:
            parts.append("not tested: " + "; ".join(f"{h.claim} ({h.why_not})" for h in missing))
        return ". ".join(parts) + "."

    def as_json(self) -> dict:
        return {"line": self.line(), "headlines": [{"claim": h.claim, "tested_by": list(h.tested_by),
                                                    "why_not": h.why_not} for h in self.headlines]}


def _collect():
    from analysis.experiments.claims.papers import causal2vec, compression, gircse, htp, kv

    modules = {"kv": kv, "htp": htp, "gircse": gircse, "causal2vec": causal2vec, "compression": compression}
    sources = {cid: s for m in modules.values() for cid, s in m.SOURCES.items()}
    return sources, {key: m.COVERAGE for key, m in modules.items()}, {key: m.TEXT for key, m in modules.items()}


SOURCES, COVERAGE, TEXTS = _collect()  # TEXTS: the paper's plain-text file name under ../shared/papers/
