"""Retrieval scored as MTEB v2 scores it: rank the corpus for each query by cosine similarity, then nDCG@10,
recall@100 and MRR@10 per query.

MTEB's protocol (`AbsTaskRetrieval._evaluate_subset`, `RetrievalEvaluator`, `calculate_retrieval_scores`): queries
with no judgement are dropped (one whose judgements are all 0 stays, and scores 0); each query's documents are
ranked by the model's similarity (cosine); nDCG and recall are pytrec_eval's `ndcg_cut` and `recall` (trec_eval:
gain = the judged grade, discount 1/log2(rank + 1), the ideal DCG from the query's judged grades; recall = relevant
documents (grade > 0) in the top k over all relevant ones), MRR is MTEB's own (1/rank of the first relevant document
in the top k). Ties in score are broken by document id, descending, as trec_eval sorts and MTEB's MRR copies
(mteb#5092). MTEB averages over queries and rounds the averages to 5 decimals; the per-query values here are
unrounded (they equal pytrec_eval's), so a mean agrees with MTEB's to 5e-6, and the per-query values are what a
paired bootstrap between methods resamples.

Queries are embedded with the role "query", documents with "document", so a method that embeds the two sides
differently (an instruction on queries, KV-Embedding's query and context prompts) is scored as its paper uses it.

    s = score_retrieval(beir, lambda texts, role: method.encode(backbone, texts))
    s.value, s.ci, s.metrics                # nDCG@10, its interval over queries, {"recall@100": ..., "MRR@10": ...}
    per_query(sims, doc_ids, qrels)         # {"nDCG@10": (n_q,), ...} from a (n_q, n_docs) similarity matrix

Cost: one embedding of every query and every document; the ranking is a (queries x documents) product and one sort
per query (SciFact's 509 report claims against 5,183 abstracts: about a second once embedded).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import numpy as np

from analysis.core.errors import UserError
from analysis.core.eta import Eta
from analysis.core.vectors import l2_normalize
from analysis.eval.score import Score, mean_score

METRICS = ("nDCG@10", "recall@100", "MRR@10")  # MTEB's main score first; the rest as MTEB reports them
# documents per similarity product: 16,384 x 576 float64 = 75 MB at a time; every corpus within the budgets
# (corpus_documents 10,000) is one product, as before
COSINE_DOCUMENTS = 16_384
_METRIC = re.compile(r"^(nDCG|recall|MRR)@(\d+)$")


def _parse(metrics) -> list[tuple[str, str, int]]:
    out = []
    for m in metrics:
        found = _METRIC.match(m)
        if not found:
            raise ValueError(f"unknown retrieval metric {m!r}: use nDCG@k, recall@k or MRR@k")
        out.append((m, found.group(1), int(found.group(2))))
    return out


def rank(sims: np.ndarray, doc_ids: list[str], depth: int) -> np.ndarray:
    """(n_queries, depth) document indices, best first: score descending, ties by document id descending."""
    sims = np.asarray(sims, dtype=np.float64)  # (n_q, n_docs)
    id_rank = np.argsort(np.argsort(np.array(doc_ids, dtype=object), kind="stable"), kind="stable")  # (n_docs,)
    depth = min(depth, sims.shape[1])
    out = np.empty((len(sims), depth), dtype=np.int64)
    for i, row in enumerate(sims):
        out[i] = np.lexsort((-id_rank, -row))[:depth]  # last key first: score, then id, both descending
    return out


def per_query(sims, doc_ids: list[str], qrels: list[dict[str, int]], metrics=METRICS) -> dict[str, np.ndarray]:
    """Each metric of each query from its row of similarities: {metric: (n_queries,) float64}.

    Args:
        sims: (n_queries, n_docs) similarities, columns in `doc_ids` order.
        qrels: one {doc id: grade} per query (grade > 0: relevant; a query with none scores 0, as in trec_eval).
    """
    parsed = _parse(metrics)
    ranked = rank(sims, doc_ids, max(k for *_, k in parsed))  # (n_q, depth)
    out = {m: np.zeros(len(qrels)) for m, *_ in parsed}
    for i, judged in enumerate(qrels):
        grades = np.array([judged.get(doc_ids[j], 0) for j in ranked[i]], dtype=np.float64)  # (depth,)
        gains = np.where(grades > 0, grades, 0.0)
        relevant = sorted((g for g in judged.values() if g > 0), reverse=True)
        for name, kind, k in parsed:
            if not relevant:
                continue  # nothing to find: 0 for every metric
            if kind == "nDCG":
                discount = 1 / np.log2(np.arange(2, k + 2))  # ranks 1..k
                ideal = float(np.dot(relevant[:k], discount[:len(relevant[:k])]))
                out[name][i] = float(np.dot(gains[:k], discount[:len(gains[:k])])) / ideal
            elif kind == "recall":
                out[name][i] = float(np.sum(gains[:k] > 0)) / len(relevant)
            else:  # MRR
                hits = np.flatnonzero(gains[:k] > 0)
                out[name][i] = 1.0 / (hits[0] + 1) if hits.size else 0.0
    return out


def cosines(q_emb, d_emb) -> np.ndarray:
    """(n_queries, n_docs) cosine similarities (rows normalised here, so raw readouts work too). Documents are taken
    `COSINE_DOCUMENTS` at a time, so a large corpus's float32 vectors are never copied whole to float64 (a corpus
    up to that size is one product, as it always was)."""
    q = l2_normalize(np.asarray(q_emb, dtype=np.float64), axis=1)  # (n_q, d)
    out = np.empty((len(q), len(d_emb)), dtype=np.float64)  # (n_q, n_docs)
    for s in range(0, len(d_emb), COSINE_DOCUMENTS):
        d = l2_normalize(np.asarray(d_emb[s:s + COSINE_DOCUMENTS], dtype=np.float64), axis=1)  # (chunk, d)
        out[:, s:s + len(d)] = q @ d.T
    return out


def embed_corpus(corpus, doc_ids: list[str], embed: Callable[[list[str], str], np.ndarray],
                 progress: Callable[[int, int, str], None] | None = None) -> np.ndarray:
    """(n_docs, d) document vectors, rows in `doc_ids` order. A dict corpus is one `embed` call, as it always was
    (its embedder reports its own progress); a corpus read from disk (`StreamedCorpus`: `batches`) is embedded
    `corpus_stream.BATCH` documents at a time into one float32 array, so its texts are never all in memory (the
    vectors are: n x d float32), and `progress(done, total, message)` is told after every batch: documents done,
    time spent and the time left at the rate so far (a corpus past the budgets takes minutes to hours)."""
    if not hasattr(corpus, "batches"):
        return embed([corpus[d] for d in doc_ids], "document")
    out = None
    done = 0
    eta = Eta(len(doc_ids), f"documents streamed from {corpus.path.name}")
    if progress is not None:
        progress(0, len(doc_ids), eta.line(0))
    for texts in corpus.batches():  # file order, the order of `doc_ids = list(corpus)`
        emb = np.asarray(embed(texts, "document"), dtype=np.float32)  # (batch, d)
        if out is None:
            out = np.empty((len(doc_ids), emb.shape[1]), dtype=np.float32)  # (n_docs, d)
        out[done:done + len(emb)] = emb
        done += len(emb)
        if progress is not None:
            progress(done, len(doc_ids), eta.line(done))
    if done != len(doc_ids):
        raise UserError(f"{corpus.path} changed while it was read: {done:,} documents, {len(doc_ids):,} indexed.")
    return out


def judged_queries(beir) -> list[str]:
    """The queries with at least one judgement, in order: the ones MTEB scores."""
    return [q for q in beir.queries if beir.qrels.get(q)]


def score_retrieval(beir, embed: Callable[[list[str], str], np.ndarray], *, n_boot: int = 1000, seed: int = 0,
                    level: float = 0.95, metrics=METRICS, name: str | None = None,
                    progress: Callable[[int, int, str], None] | None = None) -> Score:
    """Score a retrieval set (`analysis.data.files.Beir`): the first metric is the main one, with a bootstrap
    interval over queries; the per-query values of the main metric are the Score's items. `progress`: a streamed
    corpus's documents as they are embedded (`embed_corpus`)."""
    qids = judged_queries(beir)
    if not qids:
        raise UserError(f"{beir.name} has no judged query, so there is nothing to retrieve.")
    doc_ids = list(beir.corpus)
    start = time.perf_counter()
    q_emb = embed([beir.queries[q] for q in qids], "query")
    d_emb = embed_corpus(beir.corpus, doc_ids, embed, progress)
    seconds = time.perf_counter() - start
    values = per_query(cosines(q_emb, d_emb), doc_ids, [beir.qrels[q] for q in qids], metrics)
    main = metrics[0]
    return mean_score(name or beir.name, "retrieval", main, values[main], qids, unit="queries", n_boot=n_boot,
                      seed=seed, level=level, seconds=seconds,
                      metrics={m: float(v.mean()) for m, v in values.items()},
                      detail={"documents": len(doc_ids), "per_query": {m: v.tolist() for m, v in values.items()}})

