"""The shapes of what a paper says (`Source`) and of how much of it the board covers (`Coverage`, `Headline`)."""

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
            parts.append("In part: " + "; ".join(f"{h.claim} ({h.why_not})" for h in partly))
        if missing:
            parts.append("Not tested: " + "; ".join(f"{h.claim} ({h.why_not})" for h in missing))
        return ". ".join(parts) + "."

    def as_json(self) -> dict:
        return {"line": self.line(), "headlines": [{"claim": h.claim, "tested_by": list(h.tested_by),
                                                    "why_not": h.why_not} for h in self.headlines]}
