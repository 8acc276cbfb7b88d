"""Metrics on frozen embeddings: STS (Spearman with a bootstrap interval), a classification probe and BEIR-style
retrieval (nDCG@10). Every function takes embeddings as numpy arrays.

    from analysis.eval.metrics import sts, classification_probe, ndcg_at_10
    r = sts(emb_left, emb_right, pairs.scores)            # StsResult(spearman, ci, n)
    p = classification_probe(emb, labels)                 # ProbeResult(accuracy, std, ci, ...)
    ndcg_at_10({"q1": {"d1": 0.9, "d2": 0.1}}, {"q1": {"d2": 1}})   # 1 / log2(3) = 0.631
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.core.errors import UserError
from analysis.core.vectors import normalize
from analysis.eval.stats import bootstrap_mean_ci
from analysis.eval.sts import pair_cosines, pair_index, score_cosines, spearman  # the one Spearman and STS scorer


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
    s = score_cosines(sims, gold, n_boot=n_boot, seed=seed, level=level)
    return StsResult(float(s.spearman), s.ci, len(gold))


def pair_rows(pairs) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every text of a `Pairs` set once, and the rows of each pair's left and right text (analysis.eval.sts)."""
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
