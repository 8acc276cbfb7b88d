"""Evaluation of frozen embeddings: STS (Spearman with a bootstrap interval), a classification probe and
BEIR-style retrieval (nDCG@10), plus the benchmark tasks that the Benchmark page and `bench` command run.

    from analysis.evaluate import sts, classification_probe, ndcg_at_10, load_beir
    r = sts(emb_left, emb_right, pairs.scores)            # StsResult(spearman, ci, n)
    p = classification_probe(emb, labels)                 # ProbeResult(accuracy, std, ci, ...)
    ndcg_at_10({"q1": {"d1": 0.9, "d2": 0.1}}, {"q1": {"d2": 1}})   # 1 / log2(3) = 0.631

Every function takes embeddings as numpy arrays; `run_task` takes an `embed(texts) -> (n, d)` callable so
the caller decides how texts are embedded (cached, with a progress bar, ...).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from analysis import data as datasets
from analysis.errors import UserError
from analysis.geometry import bootstrap_mean_ci, normalize, percentile_ci
from analysis.sts import pair_cosines, pair_index, spearman  # the project's one Spearman (scipy's spearmanr)


# ---- STS -------------------------------------------------------------------------------------------------------


def cosine_pairs(x, y) -> np.ndarray:
    """Cosine similarity of row i of x with row i of y: (n,)."""
    rows = np.arange(len(x))
    return pair_cosines(np.concatenate([x, y]), rows, rows + len(x))


@dataclass(frozen=True)
class StsResult:
    spearman: float
    ci: tuple[float, float]
    n: int


def sts(emb_left, emb_right, gold, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> StsResult:
    """Spearman correlation between cos(left_i, right_i) and the gold scores, with a percentile bootstrap
    interval over pairs (`n_boot=0`: no interval)."""
    gold = np.asarray(gold, dtype=np.float64)
    sims = cosine_pairs(emb_left, emb_right)
    if len(sims) != len(gold):
        raise UserError(f"{len(sims)} similarity pairs but {len(gold)} gold scores.")
    if len(gold) < 3:
        raise UserError(f"A rank correlation needs at least 3 pairs, got {len(gold)}.")
    rho = spearman(sims, gold)
    ci = (float("nan"), float("nan"))
    if n_boot:
        idx = np.random.default_rng(seed).integers(0, len(gold), size=(n_boot, len(gold)))  # (n_boot, n)
        ci = percentile_ci([spearman(sims[i], gold[i]) for i in idx], level)  # ~0.3 ms per replicate
    return StsResult(float(rho), ci, len(gold))


def pair_rows(pairs) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every text of a `Pairs` set once, and the rows of each pair's left and right text (analysis.sts)."""
    return pair_index(pairs)


# ---- classification probe ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProbeResult:
    accuracy: float  # mean over folds
    std: float  # standard deviation over folds
    ci: tuple[float, float]  # bootstrap interval of the out-of-fold accuracy (texts resampled)
    folds: int
    n: int
    n_classes: int
    majority: float  # accuracy of always answering the most frequent label


def classification_probe(emb, labels, *, folds: int = 5, seed: int = 0, n_boot: int = 1000,
                         level: float = 0.95) -> ProbeResult:
    """Logistic regression on frozen embeddings, stratified `folds`-fold cross-validation.

    Features are standardised first: embeddings of a decoder are anisotropic (cosines near 1), so the
    label may live in directions of small variance that an L2 penalty on raw features would flatten.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = np.asarray(emb, dtype=np.float64)
    y = np.asarray([str(v) for v in labels])
    if len(x) != len(y):
        raise UserError(f"{len(x)} embeddings but {len(y)} labels.")
    classes, counts = np.unique(y, return_counts=True)
    if len(classes) < 2:
        raise UserError("A classification probe needs at least 2 different labels.")
    if counts.min() < folds:
        rare = classes[counts.argmin()]
        raise UserError(f"Label {rare!r} has only {counts.min()} text(s); {folds}-fold cross-validation needs at "
                        f"least {folds} of each label.")
    correct = np.zeros(len(y), dtype=bool)
    accs = []
    for train, test in StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(x, y):
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        clf.fit(x[train], y[train])
        correct[test] = clf.predict(x[test]) == y[test]
        accs.append(correct[test].mean())
    nan = (float("nan"), float("nan"))
    return ProbeResult(
        accuracy=float(np.mean(accs)),
        std=float(np.std(accs)),
        ci=bootstrap_mean_ci(correct, n_boot, seed, level) if n_boot else nan,
        folds=folds,
        n=len(y),
        n_classes=len(classes),
        majority=float(counts.max() / counts.sum()),
    )


# ---- retrieval ------------------------------------------------------------------------------------------------------
def ndcg_per_query(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]], k: int = 10) -> dict[str, float]:
    """nDCG@k of every judged query (one with at least one relevance > 0), as BEIR/trec_eval compute it:
    gain = relevance, discount 1/log2(rank + 1), ideal ranking from the judgements; ties in score are broken
    by document id. A judged query missing from `run` scores 0."""
    out = {}
    for qid, judged in qrels.items():
        ideal = sorted((r for r in judged.values() if r > 0), reverse=True)[:k]
        if not ideal:
            continue
        scores = run.get(qid, {})
        ranked = sorted(scores, key=lambda d: (-scores[d], d))[:k]
        dcg = sum(judged.get(d, 0) / math.log2(rank + 2) for rank, d in enumerate(ranked) if judged.get(d, 0) > 0)
        idcg = sum(r / math.log2(rank + 2) for rank, r in enumerate(ideal))
        out[qid] = dcg / idcg
    return out


def ndcg_at_10(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> float:
    """Mean nDCG@10 over judged queries (see `ndcg_per_query`)."""
    per = ndcg_per_query(run, qrels, 10)
    if not per:
        raise UserError("No query has a relevant document in the relevance judgements (qrels).")
    return float(np.mean(list(per.values())))


@dataclass(frozen=True)
class Beir:
    """A retrieval set in BEIR layout: documents, queries (only those with judgements) and qrels."""

    name: str
    corpus: dict[str, str]  # doc id -> "title text"
    queries: dict[str, str]  # query id -> text
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: relevance}

    def __len__(self) -> int:
        return len(self.queries)


def load_beir(folder, split: str = "test", limit: int | None = None) -> Beir:
    """Read corpus.jsonl, queries.jsonl and qrels/<split>.tsv from `folder` (BEIR layout).

    Documents are "title text" (BEIR's convention for bi-encoders). Judgements naming unknown queries or
    documents are an error, since they usually mean two folders were mixed. `limit` keeps the first N
    judged queries (all documents stay: they are the haystack).
    """
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise UserError(f"BEIR folder not found: {root}.")
    files = {"corpus": root / "corpus.jsonl", "queries": root / "queries.jsonl", "qrels": root / "qrels" / f"{split}.tsv"}
    missing = [str(p.relative_to(root)) for p in files.values() if not p.is_file()]
    if missing:
        raise UserError(f"{root} is not in BEIR layout: missing {', '.join(missing)} (expected corpus.jsonl, "
                        f"queries.jsonl and qrels/{split}.tsv).")
    corpus = {i: f"{r.get('title') or ''} {r.get('text') or ''}".strip() for i, r in _jsonl(files["corpus"])}
    queries = {i: str(r.get("text") or "").strip() for i, r in _jsonl(files["queries"])}
    qrels: dict[str, dict[str, int]] = {}
    lines = files["qrels"].read_text(encoding="utf-8-sig").splitlines()
    for lineno, line in enumerate(lines, start=1):
        fields = line.strip().split("\t")
        if not line.strip() or (lineno == 1 and fields[0].lower() in ("query-id", "query_id", "qid")):
            continue
        if len(fields) < 3:
            raise UserError(f"{files['qrels'].name}, line {lineno}: expected query-id, corpus-id and score "
                            "separated by tabs.")
        qid, did, rel = fields[0], fields[1], fields[2]
        try:
            rel_value = int(float(rel))
        except ValueError:
            raise UserError(f"{files['qrels'].name}, line {lineno}: the score {rel!r} is not a number.") from None
        if qid not in queries:
            raise UserError(f"{files['qrels'].name}, line {lineno}: query {qid!r} is not in queries.jsonl.")
        if did not in corpus:
            raise UserError(f"{files['qrels'].name}, line {lineno}: document {did!r} is not in corpus.jsonl.")
        qrels.setdefault(qid, {})[did] = rel_value
    judged = [q for q in qrels if any(r > 0 for r in qrels[q].values())][:limit]
    if not judged:
        raise UserError(f"{files['qrels']} judges no document relevant (score > 0) for any query.")
    empty = [q for q in judged if not queries[q]] + [d for d in corpus if not corpus[d]]
    if empty:
        raise UserError(f"{root}: {empty[0]!r} has no text.")
    return Beir(root.name, corpus, {q: queries[q] for q in judged}, {q: qrels[q] for q in judged})


def _jsonl(path: Path):
    seen = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise UserError(f"{path.name}, line {lineno}: not valid JSON ({err.msg}).") from None
        if not isinstance(record, dict) or "_id" not in record:
            raise UserError(f"{path.name}, line {lineno}: expected an object with an \"_id\" field.")
        rid = str(record["_id"])
        if rid in seen:
            raise UserError(f"{path.name}, line {lineno}: the id {rid!r} appears twice.")
        seen.add(rid)
        yield rid, record
    if not seen:
        raise UserError(f"{path.name} has no records.")


@dataclass(frozen=True)
class RetrievalResult:
    ndcg10: float
    ci: tuple[float, float]  # bootstrap over queries
    n: int  # judged queries


def retrieval(beir: Beir, q_emb, c_emb, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
              k: int = 10) -> RetrievalResult:
    """nDCG@10 of cosine retrieval: rows of q_emb follow beir.queries, rows of c_emb follow beir.corpus."""
    qids, dids = list(beir.queries), list(beir.corpus)
    sims = normalize(q_emb) @ normalize(c_emb).T  # (n_queries, n_docs)
    top = np.argsort(-sims, axis=1, kind="stable")[:, :k]  # (n_queries, k)
    run = {q: {dids[j]: float(sims[i, j]) for j in top[i]} for i, q in enumerate(qids)}
    per = np.array(list(ndcg_per_query(run, beir.qrels, k).values()))
    nan = (float("nan"), float("nan"))
    return RetrievalResult(float(per.mean()), bootstrap_mean_ci(per, n_boot, seed, level) if n_boot else nan, len(per))


# ---- benchmark tasks ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Task:
    """One column of the benchmark: a data set and what is measured on it."""

    name: str
    kind: str  # "sts" (Pairs), "probe" (labelled Texts) or "retrieval" (Beir)
    data: object

    @property
    def metric(self) -> str:
        return {"sts": "Spearman", "probe": "accuracy", "retrieval": "nDCG@10"}[self.kind]

    def digest(self) -> str:
        """Content hash of the data, for cache keys (the texts themselves would bloat every key record)."""
        d = self.data
        if self.kind == "sts":
            content = [d.left, d.right, d.scores.tolist()]
        elif self.kind == "probe":
            content = [d.texts, d.labels]
        else:
            content = [d.corpus, d.queries, d.qrels]
        blob = json.dumps([self.kind, content], sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
        return hashlib.sha256(blob).hexdigest()

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
    from analysis import budgets

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


BUILTIN_TASKS = {  # command-line names of the offline data sets
    "lee": "Lee corpus (human ratings), STS",
    "demo": "demo paraphrase pairs, STS",
    "stsb-dev": "STS-Benchmark dev, STS (when ../shared/data/stsbenchmark is present)",
    "stsb-train": "STS-Benchmark train, STS (when present)",
    "polarity": "Pang & Lee polarity sentences, classification probe",
    "topics": "demo topic sentences, classification probe",
}


def load_task(spec: str, limit: int | None = None) -> Task:
    """A task from a command-line name: one of BUILTIN_TASKS, `sts:FILE` (STS-B format or a sentence1,
    sentence2, score table), `probe:FILE` (text and label columns), `beir:FOLDER`, or a bare path (a folder is
    BEIR, a file is read as pairs if it has a score, else as labelled texts). `limit` keeps the first N
    pairs / texts / queries."""
    spec = spec.strip()
    if limit is not None and limit < 1:
        raise UserError(f"The limit must be a positive number, got {limit}.")
    if spec == "lee":
        return Task("Lee", "sts", datasets.lee_pairs().head(limit or len(datasets.lee_pairs())))
    if spec == "demo":
        return Task("Demo pairs", "sts", datasets.demo_pairs().head(limit or 10**9))
    if spec in ("stsb-dev", "stsb-train"):
        split = spec.split("-")[1]
        path = datasets.shared_stsb(split)
        if path is None:
            raise UserError(f"STS-B {split} is not available here (../shared/data/stsbenchmark/sts-{split}.csv).")
        return Task(f"STS-B {split}", "sts", datasets.read_sts(path, name=f"STS-B {split}", limit=limit))
    if spec == "polarity":
        return Task("Polarity", "probe", datasets.polarity().head(limit or 10**9))
    if spec == "topics":
        return Task("Topics", "probe", datasets.demo_texts("topics").head(limit or 10**9))
    kind, sep, path = spec.partition(":")
    if not sep or kind not in ("sts", "probe", "beir"):
        kind, path = "", spec
    p = Path(path).expanduser()
    if kind == "beir" or (not kind and p.is_dir()):
        return Task(f"BEIR {p.name}", "retrieval", load_beir(p, limit=limit))
    if not kind and not p.exists():
        raise UserError(f"Unknown data set {spec!r}: use one of {', '.join(BUILTIN_TASKS)}, or sts:FILE, "
                        "probe:FILE, beir:FOLDER.")
    if kind == "sts":
        return Task(p.name, "sts", datasets.read_sts(p, limit=limit))
    if kind == "probe":
        texts = datasets.read_texts(p, limit=limit)
        if texts.labels is None:
            raise UserError(f"{p.name} has no 'label' column: a probe needs one.")
        return Task(p.name, "probe", texts)
    try:
        return Task(p.name, "sts", datasets.read_sts(p, limit=limit))
    except UserError:
        texts = datasets.read_texts(p, limit=limit)
        if texts.labels is None:
            raise UserError(f"{p.name} is neither similarity pairs (sentence1, sentence2, score) nor labelled "
                            "texts (text, label).") from None
        return Task(p.name, "probe", texts)


def load_pairs(spec: str, limit: int | None = None):
    """`Pairs` for a command-line name (lee, demo, stsb-dev, stsb-train) or an STS file path."""
    task = load_task(spec if spec in BUILTIN_TASKS or ":" in spec else f"sts:{spec}", limit)
    if task.kind != "sts":
        raise UserError(f"{spec} is not a set of similarity pairs: use lee, demo, stsb-dev, stsb-train or an STS file.")
    return task.data


# ---- one benchmark cell through a cache (the Benchmark page and the `bench` command share entries) ----------------
BENCH_NAMESPACE = "bench"


def bench_parts(model_identity: str, method, task: Task, *, n_boot: int, seed: int, folds: int = 5) -> dict:
    """Cache-key parts of one (method, task) cell: everything its score depends on."""
    return {"model": model_identity, "method": method.name, "params": method.params, "task": task.name,
            "kind": task.kind, "data": task.digest(), "n_boot": n_boot, "seed": seed,
            "folds": folds if task.kind == "probe" else None}


def score_record(score: Score) -> tuple[dict[str, np.ndarray], dict]:
    """A Score as (arrays, meta) for a cache entry."""
    return {"score": np.array([score.value, score.lo, score.hi])}, {"metric": score.metric, "n": score.n,
                                                                       "task": score.task}


def score_from_record(arrays: dict, meta: dict) -> Score:
    value, lo, hi = (float(v) for v in arrays["score"])
    return Score(meta["task"], meta["metric"], value, lo, hi, int(meta["n"]))
