"""Benchmark tasks: a data set and what is measured on it (STS Spearman, probe accuracy, retrieval nDCG@10), as the
Benchmark page and the `bench` command run them. Data sets come from the registry (`analysis.data.datasets`) or files.

    task = load_task("demo")                               # or "sts:FILE", "probe:FILE", "beir:FOLDER", a path
    score = run_task(task, lambda texts: method.encode(backbone, texts))   # Score(task, metric, value, lo, hi, n)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from analysis.data import datasets
from analysis.data.corpora import Texts
from analysis.core.errors import UserError
from analysis.data.files import load_beir, read_sts, read_texts
from analysis.eval.metrics import classification_probe, pair_rows, retrieval, sts

KIND_OF = {"pairs": "sts", "labelled": "probe"}  # registry kind -> task kind


@dataclass(frozen=True)
class Task:
    """One column of the benchmark: a data set and what is measured on it."""

    name: str
    kind: str  # "sts" (Pairs), "probe" (labelled Texts) or "retrieval" (Beir)
    data: object

    @property
    def metric(self) -> str:
        return {"sts": "Spearman", "probe": "accuracy", "retrieval": "nDCG@10"}[self.kind]

    def n_texts(self) -> int:
        if self.kind == "sts":
            return len(self.data.unique_texts())
        if self.kind == "probe":
            return len(self.data)
        return len(self.data.queries) + len(self.data.corpus)


@dataclass(frozen=True)
class Score:
    task: str
    metric: str
    value: float
    lo: float
    hi: float
    n: int  # pairs, texts or queries the score averages over


def run_task(task: Task, embed: Callable[[list[str]], np.ndarray], *, n_boot: int = 1000, seed: int = 0,
             folds: int = 5) -> Score:
    """Score one task; `embed(texts) -> (len(texts), d)` embeds (it is called once, twice for retrieval)."""
    from analysis.core import budgets

    budgets.check("bootstrap", n_boot, "the number of bootstrap replicates")
    if task.kind == "sts":
        texts, left, right = pair_rows(task.data)
        emb = embed(texts)
        r = sts(emb[left], emb[right], task.data.scores, n_boot=n_boot, seed=seed)
        return Score(task.name, task.metric, r.spearman, *r.ci, r.n)
    if task.kind == "probe":
        if task.data.labels is None:
            raise UserError(f"{task.name} has no labels: a probe needs a 'label' column.")
        p = classification_probe(embed(task.data.texts), task.data.labels, folds=folds, seed=seed, n_boot=n_boot)
        return Score(task.name, task.metric, p.accuracy, *p.ci, p.n)
    if task.kind == "retrieval":
        b = task.data
        r = retrieval(b, embed(list(b.queries.values())), embed(list(b.corpus.values())), n_boot=n_boot, seed=seed)
        return Score(task.name, task.metric, r.ndcg10, *r.ci, r.n)
    raise ValueError(f"unknown task kind {task.kind!r}")


def load_task(spec: str) -> Task:
    """A task from a command-line name: a registry id (pairs or labelled texts), `sts:FILE` (STS-B format or a
    sentence1, sentence2, score table), `probe:FILE` (text and label columns), `beir:FOLDER`, or a bare path (a
    folder is BEIR, a file is read as pairs if it has a score, else as labelled texts). All of it: `select_task`
    takes a sample (or the first N)."""
    spec = spec.strip()
    if spec in datasets.ids():
        d = datasets.get(spec)
        if d.kind not in KIND_OF:
            raise UserError(f"{spec} has no scores or labels to benchmark: use one of {', '.join(_task_ids())}.")
        return Task(d.short, KIND_OF[d.kind], d.load())
    kind, sep, path = spec.partition(":")
    if not sep or kind not in ("sts", "probe", "beir"):
        kind, path = "", spec
    p = Path(path).expanduser()
    if kind == "beir" or (not kind and p.is_dir()):
        return Task(f"BEIR {p.name}", "retrieval", load_beir(p))
    if not kind and not p.exists():
        raise UserError(f"Unknown data set {spec!r}: use one of {', '.join(_task_ids())}, or sts:FILE, "
                        "probe:FILE, beir:FOLDER.")
    if kind == "sts":
        return Task(p.name, "sts", read_sts(p))
    if kind == "probe":
        texts = read_texts(p)
        if texts.labels is None:
            raise UserError(f"{p.name} has no 'label' column: a probe needs one.")
        return Task(p.name, "probe", texts)
    try:
        return Task(p.name, "sts", read_sts(p))
    except UserError:
        texts = read_texts(p)
        if texts.labels is None:
            raise UserError(f"{p.name} is neither similarity pairs (sentence1, sentence2, score) nor labelled "
                            "texts (text, label).") from None
        return Task(p.name, "probe", texts)


def _task_ids() -> list[str]:
    return [d.id for d in datasets.REGISTRY if d.kind in KIND_OF]


def select_task(task: Task, *, sample: int | None = None, limit: int | None = None, seed: int = 0) -> tuple[Task, dict]:
    """(task, report): the task on what `samples.select` picks of its data (pairs stratified by genre, labelled texts
    by label; a retrieval task's judged queries at random, every document kept), renamed so the Benchmark page and
    the `bench` command name (and so cache) the same cell alike: "STS-B dev (500 stratified by genre, seed 0)"."""
    from analysis.data.samples import select

    if task.kind == "retrieval":
        b = task.data
        ids, report = select(Texts(b.name, list(b.queries)), sample=sample, limit=limit, seed=seed)
        data = replace(b, queries={q: b.queries[q] for q in ids.texts}, qrels={q: b.qrels[q] for q in ids.texts})
    else:
        data, report = select(task.data, sample=sample, limit=limit, seed=seed)
    if report["how"] == "all":
        return task, report
    seeded = "" if report["seed"] is None else f", seed {report['seed']}"
    label = report["how"] if report["how"].startswith("first") else f"{report['n']} {report['how']}{seeded}"
    return Task(f"{task.name} ({label})", task.kind, data), report


# ---- one benchmark cell as a cache entry (the Benchmark page and the `bench` command share entries) ---------------
def score_record(score: Score) -> tuple[dict[str, np.ndarray], dict]:
    """A Score as (arrays, meta) for a cache entry."""
    return {"score": np.array([score.value, score.lo, score.hi])}, {"metric": score.metric, "n": score.n,
                                                                       "task": score.task}


def score_from_record(arrays: dict, meta: dict) -> Score:
    value, lo, hi = (float(v) for v in arrays["score"])
    return Score(meta["task"], meta["metric"], value, lo, hi, int(meta["n"]))
