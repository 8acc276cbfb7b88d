"""Every claim as its paper states it: each quote is found in the paper's own text (../shared/papers/, when present),
each claim carries its location, the paper's number and what makes this project's test differ, and no claim whose
paper states it is labelled as this project's reading or a third-party summary."""

import re
from pathlib import Path

import pytest

from analysis.experiments.claims import PAPERS
from analysis.experiments.claims.board import CLAIMS
from analysis.experiments.claims.papers import COVERAGE, SOURCES, TEXTS

PAPERS_DIR = Path(__file__).resolve().parents[2] / "shared" / "papers"
LATEX = {r"\sim": "∼", r"\times": "×", r"\approx": "≈", r"\langle": "⟨", r"\rangle": "⟩"}


def normalised(text: str) -> str:
    """The PDF conversion's markup out (LaTeX dollars and commands, Markdown emphasis), spaces collapsed."""
    for latex, symbol in LATEX.items():
        text = text.replace(latex, symbol)
    text = re.sub(r"[$*]", "", text).replace("\\%", "%")
    text = re.sub(r"([∼≈])\s+", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


def test_every_claim_has_its_papers_words_location_number_and_difference():
    assert set(SOURCES) == {c.id for c in CLAIMS}
    for c in CLAIMS:
        s = c.source
        assert s.quote and s.where and s.number and s.differs, c.id
        assert re.search(r"§|Table|Fig\.|Appendix|abstract", s.where), (c.id, s.where)
        assert re.search(r"\d", s.number) or "no number" in s.number or "image" in s.number, (c.id, s.number)


@pytest.mark.parametrize("claim_id", sorted(SOURCES))
def test_each_quote_is_in_the_papers_text(claim_id):
    claim = next(c for c in CLAIMS if c.id == claim_id)
    path = PAPERS_DIR / TEXTS[claim.paper]
    if not path.is_file():
        pytest.skip(f"the paper's text is not here: {path}")
    text = normalised(path.read_text(encoding="utf-8"))
    for fragment in SOURCES[claim_id].quote.split(" … "):
        assert normalised(fragment) in text, (claim_id, fragment)


def test_no_claim_is_labelled_a_reading_or_a_third_party_summary():
    banned = ("this project's reading", "third-party", "not found in the text checked", "not checked against",
              "was not checked", "not verified")
    for c in CLAIMS:
        words = " ".join([c.says, c.test, c.rule, c.source.where, c.source.quote]).lower()
        assert not any(b in words for b in banned), (c.id, [b for b in banned if b in words])


def test_at_least_45_claims_and_6_per_paper_and_a_coverage_line_each():
    assert len(CLAIMS) >= 45
    for paper in PAPERS:
        assert sum(c.paper == paper for c in CLAIMS) >= 6, paper
        line = COVERAGE[paper].line()
        assert "headline claims" in line and "tested here" in line, paper
        for h in COVERAGE[paper].headlines:
            assert h.tested_by or h.why_not, (paper, h.claim)
            assert set(h.tested_by) <= {c.id for c in CLAIMS}, (paper, h.claim)
