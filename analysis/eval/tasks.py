"""Benchmark tasks: a data set and the task family that scores it, as the Benchmark page, `bench`, `compare` and the
model report run them. One interface for every family:

| kind | data | main metric (others) | units of the interval and of a paired comparison | module |
|---|---|---|---|---|
| sts | Pairs | Spearman | pairs | `eval.sts` |
| probe | labelled Texts | accuracy (5-fold CV) | texts | `eval.probe` |
| retrieval | Beir | nDCG@10 (recall@100, MRR@10) | queries | `eval.retrieval` |
| classification | classification.Split | accuracy (macro-F1), MTEB's | evaluation texts | `eval.classification` |
| clustering | labelled Texts | V-measure, MTEB's protocol | experiments | `eval.clustering` |
| longdoc | longdoc.LongDocs | nDCG@1 averaged over lengths (per length) | (length, query) items | `eval.longdoc` |

`score_task(task, embed)` calls `embed(texts, role) -> (len(texts), d)` with role "query" or "document" (queries
of retrieval and long-document tasks are "query", everything else "document") and returns a `score.Score`: the main
metric and its bootstrap interval, every metric, and the per-unit values that `score.compare` pairs between two
methods. Data sets come from the registry (`analysis.data.datasets`), which names each set's families, or files.

    task = load_task("scifact-report")                   # retrieval; "clustering:banking77-report", "nano:scifact",
    s = score_task(task, lambda texts, role: method.encode(backbone, texts))   # "sts:FILE", "beir:FOLDER", ...
    d = compare(s, score_task(task, other_embed))        # paired difference over SciFact's queries
    longdoc = load_task("longdoc:passkey", tokenizer=backbone.tokenizer, max_length=backbone.facts.max_length)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.data import datasets, longdoc
from analysis.data.corpora import Texts
from analysis.data.files import load_beir, read_sts, read_texts
from analysis.data.samples import nano_retrieval, select
from analysis.eval.longdoc import score_longdoc
from analysis.eval.retrieval import score_retrieval
from analysis.eval.score import Score, compare  # noqa: F401  (compare: part of this module's interface)

KINDS = ("sts", "probe", "retrieval", "classification", "clustering", "longdoc")
METRIC = {"sts": "Spearman", "probe": "accuracy", "retrieval": "nDCG@10", "classification": "accuracy",
          "clustering": "V-measure", "longdoc": "nDCG@1"}
KIND_OF = {"pairs": "sts", "labelled": "probe"}  # registry kind -> the task of a file of that kind
FILE_KINDS = ("sts", "probe", "beir", "classification", "clustering")  # KIND:FILE on the command line
NANO = {"queries": 50, "distractors": 1000, "seed": 0}  # `nano:` retrieval: a quick look, never a record


@dataclass(frozen=True)
class Task:
    """One column of the benchmark: a data set and the family that scores it."""

    name: str
    kind: str  # one of KINDS
    data: object

    @property
    def metric(self) -> str:
        return METRIC[self.kind]

    @property
    def streamed(self) -> bool:
        """Whether its corpus is read from disk as it is embedded (a BEIR folder past the app's budgets, read with them lifted):
        embedded one batch per call, the task itself reporting progress over the whole corpus."""
        return self.kind == "retrieval" and hasattr(self.data.corpus, "batches")

    def n_texts(self) -> int:
        """How many texts scoring it embeds: a classification task the train texts MTEB's experiments draw and its
        evaluation side, a clustering task the documents MTEB's protocol embeds (what budgets and estimates count)."""
        d = self.data
        if self.kind == "sts":
            return len(d.unique_texts())
        if self.kind == "probe":
            return len(d)
        if self.kind == "clustering":
            # lazy: keeps scipy, sklearn off the pages' and the command line's start
            from analysis.eval.clustering import MAX_DOCUMENTS

            return min(len(d), MAX_DOCUMENTS)
        if self.kind == "classification":
            # lazy: keeps scipy, sklearn off the pages' and the command line's start
            from analysis.eval.classification import undersample

            return len(set().union(*undersample(d.train.labels))) + len(d.test)
        if self.kind == "longdoc":
            return d.n_texts()
        return len(d.queries) + len(d.corpus)

    def texts(self) -> list[str]:
        """Every text scoring it may embed (a family's own subsampling draws from these): for estimates of its cost."""
        d = self.data
        if self.kind == "retrieval":
            return [*d.queries.values(), *d.corpus.values()]
        if self.kind == "classification":
            return [*d.train.texts, *d.test.texts]
        if self.kind == "longdoc":
            return [t for b in d.sets.values() for t in [*b.queries.values(), *b.corpus.values()]]
        if self.kind == "sts":
            return d.unique_texts()
        return list(d.texts)

    def n_units(self) -> int:
        """How many units its interval and a paired comparison resample (pairs, texts, judged queries, evaluation
        texts, clustering experiments, (length, query) items), known before any embedding."""
        d = self.data
        if self.kind == "sts":
            return len(d)
        if self.kind == "probe":
            return len(d.texts)
        if self.kind == "classification":
            return len(d.test)
        if self.kind == "clustering":
            # lazy: keeps scipy, sklearn off the pages' and the command line's start
            from analysis.eval.clustering import N_EXPERIMENTS

            return N_EXPERIMENTS
        if self.kind == "longdoc":
            return d.n_items()
        return sum(1 for q in d.queries if d.qrels.get(q))

    def content(self) -> list:
        """JSON-able content that identifies the data (for cache keys)."""
        d = self.data
        if self.kind == "sts":
            return [d.left, d.right, np.asarray(d.scores).tolist()]
        if self.kind in ("probe", "clustering"):
            return [d.texts, d.labels]
        if self.kind in ("classification", "longdoc"):
            return d.content()
        corpus = d.corpus.content() if hasattr(d.corpus, "content") else d.corpus  # a StreamedCorpus: its digest
        return [corpus, d.queries, d.qrels]


def score_task(task: Task, embed: Callable[[list[str], str], np.ndarray], *, n_boot: int = 1000, seed: int = 0,
               level: float = 0.95, folds: int = 5, progress: Callable[[int, int, str], None] | None = None) -> Score:
    """Score one task: `embed(texts, role) -> (len(texts), d)` embeds (a few calls per task, one per batch of a
    streamed corpus). `progress(done, total, message)`: a streamed corpus's documents as they are embedded, with
    the time left (`Task.streamed`; other tasks are a few calls, whose embedder reports its own)."""
    budgets.check("bootstrap", n_boot, "the number of bootstrap replicates")
    if task.kind == "sts":
        return _sts(task, embed, n_boot, seed, level)
    if task.kind == "probe":
        return _probe(task, embed, n_boot, seed, level, folds)
    if task.kind == "retrieval":
        return score_retrieval(task.data, embed, n_boot=n_boot, seed=seed, level=level, name=task.name,
                               progress=progress)
    if task.kind == "classification":
        # lazy: keeps scipy, sklearn off the pages' and the command line's start
        from analysis.eval.classification import score_classification

        return score_classification(task.data, embed, n_boot=n_boot, seed=seed, level=level, name=task.name)
    if task.kind == "clustering":
        # lazy: keeps scipy, sklearn off the pages' and the command line's start
        from analysis.eval.clustering import score_clustering

        return score_clustering(task.data, embed, n_boot=n_boot, seed=seed, level=level, name=task.name)
    if task.kind == "longdoc":
        return score_longdoc(task.data, embed, n_boot=n_boot, seed=seed, level=level, name=task.name)
    raise ValueError(f"unknown task kind {task.kind!r}")


def score_method(task: Task, backbone, method, *, n_boot: int = 1000, seed: int = 0, batch_size: int = 16) -> Score:
    """`score_task` with `method` embedding each side as that side (`method.as_role`), every distinct text once, in
    the order the compute cache's corpus encoding sends them (so the vectors are the ones a fresh cache computes):
    one benchmark cell where no cache is at hand (a Ray worker of the benchmark grid)."""
    def embed(texts, role):
        unique = list(dict.fromkeys(texts))
        emb = method.as_role(role).encode(backbone, unique, batch_size=batch_size)  # (n_unique, d)
        row = {t: i for i, t in enumerate(unique)}
        return emb[[row[t] for t in texts]]

    return score_task(task, embed, n_boot=n_boot, seed=seed)


def run_task(task: Task, embed: Callable[[list[str]], np.ndarray], *, n_boot: int = 1000, seed: int = 0,
             folds: int = 5) -> Score:
    """`score_task` for an embedder that treats queries and documents alike: `embed(texts) -> (len(texts), d)`."""
    return score_task(task, lambda texts, role: embed(texts), n_boot=n_boot, seed=seed, folds=folds)


def _sts(task: Task, embed, n_boot: int, seed: int, level: float) -> Score:
    from analysis.eval.sts import score_pairs  # lazy: keeps scipy off the pages' and the command line's start

    pairs = task.data
    s = score_pairs(pairs, lambda texts: embed(texts, "document"), n_boot=n_boot, seed=seed, level=level)
    return Score(task.name, "Spearman", float(s.spearman), *s.ci, s.n_pairs, kind="sts", unit="pairs",
                 metrics={"Spearman": float(s.spearman)}, items=s.cosines,
                 ids=tuple(f"{a}\t{b}" for a, b in zip(pairs.left, pairs.right)),
                 gold=np.asarray(pairs.scores, dtype=np.float64), seconds=s.seconds)


def _probe(task: Task, embed, n_boot: int, seed: int, level: float, folds: int) -> Score:
    """The cross-validated probe; its value is the mean over folds (the per-text correctness is its items)."""
    # lazy: keeps scipy, sklearn off the pages' and the command line's start
    from analysis.eval.probe import classification_probe

    if task.data.labels is None:
        raise UserError(f"{task.name} has no labels: a probe needs a 'label' column.")
    start = time.perf_counter()
    emb = embed(task.data.texts, "document")
    seconds = time.perf_counter() - start
    p = classification_probe(emb, task.data.labels, folds=folds, seed=seed, n_boot=n_boot, level=level)
    return Score(task.name, "accuracy", p.accuracy, *p.ci, p.n, kind="probe", unit="texts",
                 metrics={"accuracy": p.accuracy, "accuracy std over folds": p.std, "majority": p.majority},
                 items=p.correct.astype(np.float64), ids=tuple(task.data.texts), seconds=seconds,
                 detail={"folds": folds, "classes": p.n_classes})


# ---- tasks by name -------------------------------------------------------------------------------------------------
def load_task(spec: str, *, tokenizer=None, max_length: int | None = None) -> Task:
    """A task from a command-line name:

    * a registry id: its default family (`Dataset.tasks[0]`: STS for pairs, retrieval for SciFact, MTEB's
      classification for Banking77, the probe for other labelled sets);
    * `FAMILY:ID`: a registry set under another of its families (`clustering:banking77-report`), or `nano:ID` for a
      seeded nano retrieval set (NANO: 50 queries, their positives and 1,000 random distractors);
    * `sts:FILE` (STS-B format or sentence1, sentence2, score), `probe:FILE`, `classification:FILE`,
      `clustering:FILE` (text and label columns), `beir:FOLDER`, or a bare path (a folder is BEIR, a file is read as
      pairs if it has a score, else as labelled texts for the probe);
    * `longdoc:passkey`, `longdoc:needle`, `longdoc:scifact`: long-document retrieval generated for the model's
      tokenizer (`tokenizer`, `max_length` required; `analysis.data.longdoc`).

    All of it: `select_task` takes a sample (or the first N)."""
    spec = spec.strip()
    family, sep, rest = spec.partition(":")
    if spec in datasets.ids():
        return _registry_task(datasets.get(spec), None)
    if sep and family == "longdoc":
        return _longdoc_task(rest, tokenizer, max_length)
    if sep and family == "nano" and rest in datasets.ids():
        return nano_task(_registry_task(datasets.get(rest), "retrieval"))
    if sep and family in KINDS and rest in datasets.ids():
        return _registry_task(datasets.get(rest), family)
    if not sep or family not in FILE_KINDS:
        family, rest = "", spec
    p = Path(rest).expanduser()
    if family == "beir" or (not family and p.is_dir()):
        return Task(f"BEIR {p.name}", "retrieval", load_beir(p, tokenizer=tokenizer))
    if not family and not p.exists():
        raise UserError(f"Unknown data set {spec!r}: use one of {', '.join(_task_ids())}, or sts:FILE, "
                        "probe:FILE, beir:FOLDER.")
    if family == "sts":
        return Task(p.name, "sts", read_sts(p))
    if family in ("probe", "classification", "clustering"):
        texts = read_texts(p)
        if texts.labels is None:
            raise UserError(f"{p.name} has no 'label' column: {family} needs one.")
        return _labelled_task(p.name, family, texts)
    try:
        return Task(p.name, "sts", read_sts(p))
    except UserError:
        texts = read_texts(p)
        if texts.labels is None:
            raise UserError(f"{p.name} is neither similarity pairs (sentence1, sentence2, score) nor labelled "
                            "texts (text, label).") from None
        return Task(p.name, "probe", texts)


def _registry_task(d, family: str | None) -> Task:
    if not d.tasks:
        raise UserError(f"{d.id} has no scores, labels or judgements to benchmark: use one of "
                        f"{', '.join(_task_ids())}.")
    family = family or d.tasks[0]
    if family not in d.tasks:
        raise UserError(f"{d.id} cannot be scored as {family}: it is scored as {' or '.join(d.tasks)}.")
    name = d.short if family == d.tasks[0] else f"{d.short}, {family}"  # one set, two families: two columns
    if family == "classification" and d.train_split is not None:
        # lazy: keeps scipy, sklearn off the pages' and the command line's start
        from analysis.eval.classification import given

        return Task(name, family, given(datasets.get(d.train_split).load(), d.load(), name))
    if family in ("classification", "clustering"):
        return _labelled_task(name, family, d.load())
    return Task(name, family, d.load())


def _labelled_task(name: str, family: str, texts: Texts) -> Task:
    if family == "classification":
        # lazy: keeps scipy, sklearn off the pages' and the command line's start
        from analysis.eval.classification import held_out

        return Task(name, family, held_out(texts))
    return Task(name, family, texts)


def nano_task(task: Task, n_queries: int = NANO["queries"], n_distractors: int = NANO["distractors"],
              seed: int = NANO["seed"]) -> Task:
    """A retrieval task cut to a nano set (`samples.nano_retrieval`): for interactive use, never for records."""
    if task.kind != "retrieval":
        raise UserError(f"{task.name} is not a retrieval task, so it has no nano version.")
    data = nano_retrieval(task.data, n_queries, n_distractors, seed)
    return Task(f"{task.name} nano ({len(data.queries)} queries, {len(data.corpus):,} documents, seed {seed})",
                "retrieval", data)


def needs_model(spec: str) -> bool:
    """Whether the task `spec` names is made for a model's tokenizer (a long-document task), so it is loaded once the
    model is (`model_task`); every other spec loads without one, so absent data is said before a model loads."""
    return spec.strip().partition(":")[0] == "longdoc" and ":" in spec


def model_task(spec: str, backbone) -> Task:
    """`load_task(spec)` for `backbone`'s tokenizer and length limit."""
    return load_task(spec, tokenizer=backbone.tokenizer, max_length=backbone.facts.max_length)


def _longdoc_task(which: str, tokenizer, max_length: int | None) -> Task:
    if tokenizer is None or max_length is None:
        raise UserError("A long-document task is generated for a model's tokenizer: load the model first.")
    data = longdoc.generate(which, tokenizer, max_length=max_length)
    return Task(data.name, "longdoc", data)


def _task_ids() -> list[str]:
    return [d.id for d in datasets.REGISTRY if d.tasks]


def select_task(task: Task, *, sample: int | None = None, limit: int | None = None, seed: int = 0) -> tuple[Task, dict]:
    """(task, report): the task on what `samples.select` picks of its data (pairs stratified by genre, labelled texts
    by label, a retrieval set's judged queries at random with every document kept, a classification task's
    evaluation side by label), renamed so the Benchmark page and the `bench` command name (and so cache) the same
    cell alike: "STS-B dev (500 stratified by genre, seed 0)". A long-document task is generated at its size:
    it is taken whole."""
    if task.kind == "classification":
        test, report = select(task.data.test, sample=sample, limit=limit, seed=seed)
        data = replace(task.data, test=test)
    elif task.kind == "longdoc":
        data, report = task.data, {"how": "all", "n": task.data.n_items(), "of": task.data.n_items(), "seed": None,
                                   "genres": None, "warning": None, "rows": list(range(task.data.n_items()))}
    else:
        data, report = select(task.data, sample=sample, limit=limit, seed=seed)
    if report["how"] == "all":
        return task, report
    seeded = "" if report["seed"] is None else f", seed {report['seed']}"
    label = report["how"] if report["how"].startswith("first") else f"{report['n']} {report['how']}{seeded}"
    return Task(f"{task.name} ({label})", task.kind, data), report


# ---- one benchmark cell as a cache entry (the Benchmark page and the `bench` command share entries) ---------------
def score_record(score: Score) -> tuple[dict[str, np.ndarray], dict]:
    """A Score as (arrays, meta) for a cache entry, its per-unit values included (so a stored cell can be compared)."""
    arrays = {"score": np.array([score.value, score.lo, score.hi])}
    if score.items is not None:
        arrays["items"] = np.asarray(score.items, dtype=np.float64)
    if score.gold is not None:
        arrays["gold"] = np.asarray(score.gold, dtype=np.float64)
    return arrays, {"metric": score.metric, "n": score.n, "task": score.task, "kind": score.kind, "unit": score.unit,
                    "metrics": score.metrics, "ids": list(score.ids), "detail": score.detail,
                    "seconds": score.seconds}


def score_from_record(arrays: dict, meta: dict) -> Score:
    value, lo, hi = (float(v) for v in arrays["score"])
    return Score(meta["task"], meta["metric"], value, lo, hi, int(meta["n"]), kind=meta.get("kind", ""),
                 unit=meta.get("unit", ""), metrics=meta.get("metrics", {}), items=arrays.get("items"),
                 ids=tuple(meta.get("ids", ())), gold=arrays.get("gold"), detail=meta.get("detail", {}),
                 seconds=float(meta.get("seconds", 0.0)))
