"""How much of each fact a frozen MiniLM pool carries: linear probes from one sentence's pool to its fact key and to
its value, trained on the training personas' fact sentences and scored on the validation split's. An upper bound
on what the compression adapter has to work with, independent of the decoder: if a linear probe reads the value but
the trained decoder does not, the failure is optimisation, not the pools.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from analysis.core.params import param
from analysis.data import personas as P
from analysis.data.personas import KEYS
from analysis.eval.stats import wilson
from analysis.experiments import Measured
from analysis.experiments.machinery import cells
from analysis.experiments.machinery.records import Model, Sample, Table
from analysis.training.compression import fact_sentence

ID = "compression_probe"
TITLE = "Context compression: what one frozen MiniLM pool carries"
HELP = ("Linear probes from one fact sentence's MiniLM pool to its fact key and its value (training personas -> "
        "validation personas): the upper bound the compression adapter works under.")


@dataclass(frozen=True)
class Config:
    personas: int = param(1000, "training personas (the trainer's default)", min=10, limit=100_000)
    val: int = param(300, "validation personas", min=10, limit=100_000)


def fact_rows(pairs):
    """(sentences, keys, values) of every fact sentence of (persona, context) pairs; a name's value is the first
    name (the surname is a separate choice, read the same way)."""
    sents, keys, values = [], [], []
    for p, ctx in pairs:
        for key in KEYS:
            sents.append(fact_sentence(p, ctx, key))
            keys.append(key)
            values.append(f"{key}:{p.value(key) if key != 'name' else p.first}")
    return sents, keys, values


def measure(config: Config, compute, progress) -> Measured:
    # lazy: keeps scipy, sklearn off the pages' and the command line's start
    from sklearn.linear_model import LogisticRegression

    # lazy: keeps torch off the pages' and the command line's start
    from analysis.compression.system import encode_sentences
    from analysis.models.minilm import encoder_identity  # lazy: keeps torch off the pages' and the command line's start

    rng = random.Random("train-personas:0")  # the trainer's personas
    train = []
    for _ in range(config.personas):
        p = P.random_persona(rng, "train")
        train.append((p, P.paragraph(p, rng, rng.randint(0, 2))))
    vrng = random.Random("probe-validation:0")
    val = []
    for _ in range(config.val):
        p = P.random_persona(vrng, "validation")
        val.append((p, P.paragraph(p, vrng, 0)))
    (xs, ks, vs), (xv, kv, vv) = fact_rows(train), fact_rows(val)
    progress(0, 3, "encoding the fact sentences")
    xt, xe = encode_sentences(xs), encode_sentences(xv)
    rows, shown = [], {}
    for i, (name, yt, ye) in enumerate((("key", ks, kv), ("value", vs, vv)), 1):
        progress(i, 3, f"probe: {name}")
        clf = LogisticRegression(max_iter=2000, C=10.0).fit(xt, yt)
        hits = int((clf.predict(xe) == np.asarray(ye)).sum())
        rate = {"exact_match": hits / len(ye), "exact_match_ci": wilson(hits, len(ye))}
        rows.append((name, len(set(yt)), cells.rate(rate), len(ye)))
        shown[name] = cells.rate(rate, "%")
    table = Table("probes", "Linear probes on one sentence's frozen MiniLM pool: accuracy (%) [95% Wilson interval] "
                            "on validation personas' fact sentences",
                  ("probe", "classes", "accuracy", "validation sentences"), tuple(rows),
                  f"Logistic regression (C = 10) on {len(xs):,} training fact sentences of {config.personas:,} "
                  "training personas.")
    return Measured(data="analysis.data.personas: training personas (the trainer's) and validation personas",
                    sample=Sample(n=len(xv), how="every fact sentence of the validation personas", seed=0),
                    models=[Model("all-MiniLM-L6-v2", encoder_identity())], tables=[table],
                    findings=[f"A linear probe reads the fact key from one pool at {shown['key']} and its value at "
                              f"{shown['value']} ({rows[1][1]} classes)."])
