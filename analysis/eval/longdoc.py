"""Long-document retrieval scored as LongEmbed scores it: for each document length, every query ranks all documents
of that length by cosine similarity, and the score is nDCG@1 (one relevant document per query, so 1 when it is
ranked first, else 0), reported per length and averaged over lengths (the sets come from `analysis.data.longdoc`).

The ranking and nDCG are retrieval's (`analysis.eval.retrieval.per_query`: MTEB's tie order). Queries are embedded
with the role "query", documents with "document". The units of the interval and of a paired comparison are the
(length, query) items, equally many per length, so their mean is the average over lengths.

    s = score_longdoc(generate("passkey", tok, max_length=8192), embed)
    s.value                                  # nDCG@1 averaged over lengths
    s.detail["lengths"]["4096"]              # {"nDCG@1": ..., "ci": [...], "n": 50, "tokens": mean document tokens}

Cost: one embedding of every document and query of every length (see `analysis.data.longdoc`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from analysis.eval.retrieval import cosines, per_query
from analysis.eval.score import Score, mean_score
from analysis.eval.stats import bootstrap_mean_ci


def score_longdoc(docs, embed: Callable[[list[str], str], np.ndarray], *, n_boot: int = 1000, seed: int = 0,
                  level: float = 0.95, name: str | None = None) -> Score:
    """nDCG@1 per length and averaged over lengths, with bootstrap intervals over queries (per length) and over
    (length, query) items (the average)."""
    items, ids, lengths, seconds = [], [], {}, 0.0
    for length, beir in sorted(docs.sets.items()):
        qids, doc_ids = list(beir.queries), list(beir.corpus)
        start = time.perf_counter()
        q_emb = embed([beir.queries[q] for q in qids], "query")
        d_emb = embed([beir.corpus[d] for d in doc_ids], "document")
        seconds += time.perf_counter() - start
        hits = per_query(cosines(q_emb, d_emb), doc_ids, [beir.qrels[q] for q in qids], ("nDCG@1",))["nDCG@1"]
        lo, hi = bootstrap_mean_ci(hits, n_boot, seed, level) if n_boot else (float("nan"), float("nan"))
        lengths[str(length)] = {"nDCG@1": float(hits.mean()), "ci": [lo, hi], "n": len(hits),
                                "tokens": float(np.mean(docs.tokens[length]))}
        items.extend(hits.tolist())
        ids.extend(f"{length}:{q}" for q in qids)
    return mean_score(name or docs.name, "longdoc", "nDCG@1", items, ids, unit="(length, query) items",
                      n_boot=n_boot, seed=seed, level=level, seconds=seconds,
                      metrics={f"nDCG@1 at {k}": v["nDCG@1"] for k, v in lengths.items()},
                      detail={"kind": docs.kind, "lengths": lengths, "seed": docs.seed})
