"""Clustering with MTEB v2's fast clustering protocol (`AbsTaskClustering`, the mini-batch k-means V-measure), on
a labelled set. On Banking77 this is MTEB's clustering protocol applied to a set MTEB does not cluster (MTEB only
classifies Banking77): the intents are the clusters to find, so numbers here have no MTEB leaderboard counterpart.

MTEB's protocol, with one `random.Random(42)` drawn from in this order: a subsample of `max_documents` texts is
embedded (`rng.sample`; MTEB's `max_document_to_embed`, 2,048 as several of MTEB's v2 tasks set it; None embeds
all); then `n_experiments` = 10 times, `cluster_size` = 16,384 of the embedded texts are drawn with replacement
(`rng.choices`, MTEB's `max_documents_per_cluster` default), and one `MiniBatchKMeans(n_clusters = number of
labels, batch_size=512, init="k-means++", n_init=1, random_state=42)` is fitted to them; the score is the V-measure
of its clusters against the labels, averaged over the experiments. Texts are embedded as documents.

The experiments are the units: their V-measures are the Score's items, the interval resamples them (10 units: a
crude interval), and two methods compared on the same set have the same experiments (the same draws of the same
texts, since the draws do not depend on the embeddings), so the paired comparison is over experiments.

    s = score_clustering(banking77.part("report"), lambda texts, role: method.encode(backbone, texts))
    s.value, s.metrics["V-measure std"]

Cost: one embedding of `max_documents` texts, then 10 k-means fits on 16,384 points (a few seconds each at d=576).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import numpy as np
from sklearn.cluster import MiniBatchKMeans
from sklearn.metrics.cluster import v_measure_score
from threadpoolctl import threadpool_limits

from analysis.core.errors import UserError
from analysis.eval.score import Score, mean_score

N_EXPERIMENTS = 10  # MTEB's AbsTaskClustering defaults
CLUSTER_SIZE = 16_384
BATCH_SIZE = 512
MAX_DOCUMENTS = 2048  # MTEB's max_document_to_embed where a v2 task sets it (WikiClusteringP2P.v2, SwednClustering)
MTEB_SEED = 42
# The k-means fits run on one OpenMP thread: sklearn's clusters do not depend on the thread count, and on a machine
# whose cores are busy (encoding, other jobs) its threads spin-wait: ten fits of 400 points took 7.2 s with the
# default threads and 0.14 s with one, measured on this project's 2-core machine under a load of 8.


def score_clustering(data, embed: Callable[[list[str], str], np.ndarray], *, n_boot: int = 1000, seed: int = 0,
                     level: float = 0.95, max_documents: int | None = MAX_DOCUMENTS, cluster_size: int = CLUSTER_SIZE,
                     n_experiments: int = N_EXPERIMENTS, name: str | None = None) -> Score:
    """Mean V-measure over MTEB's experiments on labelled texts (`analysis.data.corpora.Texts`)."""
    if data.labels is None or len(set(data.labels)) < 2:
        raise UserError(f"{data.name}: clustering is scored against labels, and needs at least 2 of them.")
    rng = random.Random(MTEB_SEED)
    rows = range(len(data)) if max_documents is None else rng.sample(range(len(data)), k=min(len(data),
                                                                                              max_documents))
    labels = np.array([data.labels[i] for i in rows])
    start = time.perf_counter()
    emb = np.asarray(embed([data.texts[i] for i in rows], "document"))  # (n, d), as the model returns them
    seconds = time.perf_counter() - start
    model = MiniBatchKMeans(n_clusters=np.unique(labels).size, batch_size=BATCH_SIZE, init="k-means++", n_init=1,
                            random_state=MTEB_SEED)
    scores = []
    with threadpool_limits(1, user_api="openmp"):  # one thread: see above
        for _ in range(n_experiments):
            drawn = rng.choices(range(len(emb)), k=cluster_size)
            scores.append(float(v_measure_score(labels[drawn], model.fit_predict(emb[drawn]))))
    return mean_score(name or data.name, "clustering", "V-measure", scores, [f"experiment {e}" for e in
                                                                             range(n_experiments)],
                      unit="experiments", n_boot=n_boot, seed=seed, level=level, seconds=seconds,
                      metrics={"V-measure std": float(np.std(scores))},
                      detail={"protocol": "MTEB's fast clustering (mini-batch k-means V-measure)",
                              "documents_embedded": len(labels), "cluster_size": cluster_size,
                              "clusters": int(np.unique(labels).size), "v_measure_per_experiment": scores})
