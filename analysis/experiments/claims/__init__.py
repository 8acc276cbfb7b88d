"""The five papers' headline claims, each with the measurement that tests it on any model and its verdict rule,
fixed here before anything is measured ("Does the paper hold on my model?").

A claim is one `Claim`: where in its paper it comes from, what the paper says (in the paper's words where short),
how it is tested here (task family, sample, methods, comparison), which rule of `analysis.experiments.machinery.verdicts`
judges it, which methods' and trained systems' declared deviations bear on it, and where the app shows the
evidence. Its `judge(ctx)` returns an `Outcome` or raises `CannotRun(what it needs)`; its `work(ctx)` lists the
units of computation it needs (`Unit`: shared between claims, so the board's estimate counts each once). The
claims live one module per paper (`kv_embedding`, `htp`, `gircse`, `causal2vec`, `compression`); `board.CLAIMS`
holds them in the board's order and `board.run` runs them for one model under a time budget.

A claim a published record already measured on this model is read from the record (`Context.record`); otherwise
it is measured through the experiments' compute, so every embedding and layer-map cell is cached and a stopped board
resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from analysis.experiments.machinery.verdicts import Verdict


@dataclass(frozen=True)
class Paper:
    key: str
    title: str  # the system's name, as the board's rows say it
    cite: str  # authors, year and where to find it


PAPERS = {p.key: p for p in (
    Paper("kv", "KV-Embedding", "Tang & Yang, 2026, arXiv:2601.01046 (ACL 2026)"),
    Paper("htp", "HTP", "Ding et al., 2025, arXiv:2511.14868 (ACL 2026)"),
    Paper("gircse", "GIRCSE", "Tsai et al., 2025, arXiv:2509.24291 (ICLR 2026)"),
    Paper("causal2vec", "Causal2Vec", "Lin et al., 2025, arXiv:2507.23386 (ACL 2026)"),
    Paper("compression", "Sentence-pool compression",
          "the context-compression source this project's system follows (its Experiments A, B, B2, C)"),
)}


class CannotRun(Exception):
    """A claim this model or machine cannot test: the message says what it needs (a GPU, a 7B model, data that
    cannot be installed offline, a control not trained for this model)."""


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


@dataclass(frozen=True)
class Claim:
    id: str  # "kv-reroute", stable: pages, records and cache keys name claims by it
    paper: str  # a key of PAPERS
    where: str  # the table or section of the paper it comes from
    says: str  # the claim in one sentence, in the paper's words where short
    test: str  # the measurement here: task family, sample, methods, the comparison
    rule: str  # the verdict rule (`verdicts`), fixed before measuring
    judge: Callable  # (Context) -> Outcome; raises CannotRun
    work: Callable = lambda ctx: []  # (Context) -> [Unit]: what it computes (nothing when read or refused)
    deviations: tuple = ()  # "method:<name>" / "system:<name>" whose declared deviations bear on it
    evidence: tuple = ()  # Evidence

    def describe(self) -> dict:
        """Everything about the claim but its verdict, as JSON."""
        paper = PAPERS[self.paper]
        return {"id": self.id, "paper": self.paper, "paper_title": paper.title, "cite": paper.cite,
                "where": self.where, "says": self.says, "test": self.test, "rule": self.rule,
                "deviation_sources": list(self.deviations), "evidence": [e.as_json() for e in self.evidence]}
