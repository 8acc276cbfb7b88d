"""The five papers' headline claims, each with the measurement that tests it on any model and its verdict rule,
fixed here before anything is measured ("Does the paper hold on my model?").

A claim is one `Claim`: the paper's own sentence, where it stands and the paper's own number (`papers.SOURCES`, data
read from the five papers' texts), how it is tested here (task family, sample, methods, comparison, in the paper's
direction), which rule of `analysis.experiments.machinery.verdicts` judges it, which methods' and trained systems'
declared deviations bear on it, and where the app shows the evidence. Its `judge(ctx)` returns an `Outcome` or raises
`CannotRun(what it needs)` (a 7B model, data not installed) or `NeedsRun(the command and its time)` (a training run or
record this machine can make but has not yet); its `work(ctx)` lists the
units of computation it needs (`Unit`: shared between claims, so the board's estimate counts each once). The
claims live one module per paper (`kv_embedding`, `htp`, `gircse`, `causal2vec`, `compression`); `board.CLAIMS`
holds them in the board's order and `board.run` runs them for one model under a time budget.

A claim reads every published record that measures it on this model (`Context.record`); the verdict comes from the
run closest to the paper's setting, the others stand beside it (`Outcome.beside`), and a conflict between them is
said. Otherwise it is measured through the experiments' compute, so every embedding and layer-map cell is cached and a
stopped board resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from analysis.experiments.claims.papers import COVERAGE, SOURCES, Source
from analysis.experiments.machinery.verdicts import Verdict


@dataclass(frozen=True)
class Paper:
    key: str
    title: str  # the system's name, as the board's rows say it
    cite: str  # authors, year and where to find it

    def coverage(self) -> dict:
        """How many of the paper's headline claims the board tests here, and which not and why (`papers.COVERAGE`)."""
        return COVERAGE[self.key].as_json()


PAPERS = {p.key: p for p in (
    Paper("kv", "KV-Embedding", "Tang & Yang, 2026, arXiv:2601.01046 (ACL 2026)"),
    Paper("htp", "HTP", "Ding et al., 2025, arXiv:2511.14868 (ACL 2026)"),
    Paper("gircse", "GIRCSE", "Tsai et al., 2025, arXiv:2509.24291 (ICLR 2026)"),
    Paper("causal2vec", "Causal2Vec", "Lin et al., 2025, arXiv:2507.23386 (ACL 2026)"),
    Paper("compression", "Sentence-pool compression",
          "Ballah, Sentence-Level Pooled Embeddings as a Drop-In Replacement for Tokens in LLM Context (its "
          "Experiments A, B, B2, C)"),
)}


class CannotRun(Exception):
    """A claim this model or machine cannot test: the message says what it needs (a GPU, a 7B model, data that
    cannot be installed offline)."""


class NeedsRun(CannotRun):
    """A claim this machine can test once a run is made that is missing (a control or variant trained for this
    model, a record measured): the message gives the command and its measured or estimated time. The board says "not
    measured" with it, never "cannot run here"."""


@dataclass(frozen=True)
class Evidence:
    """Where the app shows a claim's evidence: a view's address (Streamlit's name for its page file) and the query
    parameters that view reads (the Lessons' ?lesson=&step=)."""

    label: str
    view: str  # "layer_explorer", "soft_tokens", "lessons", ...
    query: dict = field(default_factory=dict)

    def address(self) -> str:
        query = "&".join(f"{k}={v}" for k, v in self.query.items())
        return f"/{self.view}" + (f"?{query}" if query else "")

    def as_json(self) -> dict:
        return {"label": self.label, "view": self.view, "query": dict(self.query), "address": self.address()}


@dataclass(frozen=True)
class Unit:
    """One shared piece of work and its estimated seconds on this machine (`key` identifies it across claims)."""

    key: tuple
    seconds: float


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    source: str  # "measured here", or the record it was read from
    values: dict = field(default_factory=dict)  # the compared quantities as shown ({"HTP": 0.41, "mean": 0.33})
    beside: tuple = ()  # other runs' evidence shown beside the verdict (str), a conflict said in words


@dataclass(frozen=True)
class Claim:
    id: str  # "kv-reroute", stable: pages, records and cache keys name claims by it
    paper: str  # a key of PAPERS
    says: str  # the claim in one sentence, in the paper's direction (its own words: `source.quote`)
    test: str  # the measurement here: task family, sample, methods, the comparison
    rule: str  # the verdict rule (`verdicts`), fixed before measuring
    judge: Callable  # (Context) -> Outcome; raises CannotRun
    work: Callable = lambda ctx: []  # (Context) -> [Unit]: what it computes (nothing when read or refused)
    deviations: tuple = ()  # "method:<name>" / "system:<name>" whose declared deviations bear on it
    evidence: tuple = ()  # Evidence

    @property
    def source(self) -> Source:
        """The paper's own sentence, location and number (`papers.SOURCES`)."""
        return SOURCES[self.id]

    @property
    def where(self) -> str:
        return self.source.where

    def describe(self) -> dict:
        """Everything about the claim but its verdict, as JSON."""
        paper = PAPERS[self.paper]
        return {"id": self.id, "paper": self.paper, "paper_title": paper.title, "cite": paper.cite,
                **self.source.as_json(), "says": self.says, "test": self.test, "rule": self.rule,
                "deviation_sources": list(self.deviations), "evidence": [e.as_json() for e in self.evidence]}


def refuse(needs: str, *, run: bool = False) -> Callable:
    """A judge (and work) for a claim this board cannot measure: CannotRun with what it needs, or NeedsRun when `run`
    (a command this machine can run, with its time)."""
    def judge(ctx):
        raise (NeedsRun if run else CannotRun)(needs)
    return judge
