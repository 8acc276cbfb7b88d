"""The model report's reference row: MiniLM alone (a 22M encoder that does not use the model) is measured beside the
decoder methods, compared with the best of them on the same resampled pairs, never the best itself, and the
recommendation says in words when it beats them all. Known answers on hand-made tables and synthetic cosines."""

import numpy as np

from analysis.compute import Encoded
from analysis.data.corpora import Pairs
from analysis.methods import get_method
from analysis.report.recommend import recommend
from analysis.report.sections import quality

REF = "sentence_encoder"


def table(rows, *, n_pairs=100, n_boot=1000):
    """A quality section from (label, spearman, p) rows, the reference marked; the best is the best non-reference."""
    best = max((r for r in rows if r[0] != REF), key=lambda r: r[1])
    return {"best": best[0], "n_pairs": n_pairs, "n_boot": n_boot, "seed": 0, "bootstrap": "paired", "tasks": [],
            "not_measured": {}, "reference": REF if any(r[0] == REF for r in rows) else None,
            "methods": [{"label": label, "spearman": rho, "ci": [rho - 0.05, rho + 0.05],
                         "difference_to_best": None if label == best[0] else rho - best[1],
                         "difference_ci": None if label == best[0] else [rho - best[1] - 0.02, rho - best[1] + 0.02],
                         "p": p, "reference": label == REF} for label, rho, p in rows]}


def test_a_reference_that_beats_every_method_is_said_so():
    rec = recommend(table([("causal2vec", 0.80, None), ("prompteol", 0.70, 0.01), (REF, 0.84, 0.001)]), None, None)
    assert rec["best"] == "causal2vec" and rec["not_different"] == []
    assert rec["reference"]["verdict"] == "better" and rec["reference"]["label"] == REF
    said = rec["reference"]["reason"]
    assert said.startswith("A 22M encoder beats every method on this model here") and \
        said.endswith("Use it unless you need the decoder.") and "0.840 against 0.800 for causal2vec (+0.040" in said
    assert said in rec["reasons"]
    # the reference is no method on the model: "every other method is significantly worse" speaks of those only
    assert "Every other method is significantly worse (paired bootstrap, p < 0.05)." in rec["reasons"]


def test_a_tied_worse_or_untested_reference():
    tied = recommend(table([("a", 0.80, None), (REF, 0.79, 0.40)]), None, None)["reference"]
    assert tied["verdict"] == "tied" and "use it unless you need the decoder" in tied["reason"]
    worse = recommend(table([("a", 0.80, None), (REF, 0.70, 0.001)]), None, None)["reference"]
    assert worse["verdict"] == "worse" and worse["reason"].startswith("a beats the reference")
    untested = recommend(table([("a", 0.80, None), (REF, 0.84, None)], n_boot=0), None, None)["reference"]
    assert untested["verdict"] is None and "no paired test was run" in untested["reason"]
    assert recommend(table([("a", 0.80, None), ("b", 0.7, 0.01)]), None, None)["reference"] is None


def test_the_reference_is_never_the_best_per_unit_of_cost():
    cost = {"baseline": "plain forward", "texts": 16, "repeats": 3,
            "rows": [{"label": "plain forward", "seconds": 1.0, "ratio": 1.0, "peak_mb": 0.0},
                     {"label": "a", "seconds": 2.0, "ratio": 2.0, "peak_mb": 0.0},
                     {"label": REF, "seconds": 0.2, "ratio": 0.2, "peak_mb": 0.0}]}
    rec = recommend(table([("a", 0.80, None), (REF, 0.79, 0.40)]), cost, None)
    assert rec["best_per_cost"] == "a" and "no method measured costs less" in rec["reasons"][-2]


def test_the_quality_table_keeps_the_reference_out_of_the_best():
    rng = np.random.default_rng(0)
    n = 40
    gold = rng.uniform(0, 5, n)
    pairs = Pairs("toy", [f"left {i}" for i in range(n)], [f"right {i}" for i in range(n)], gold)
    texts = pairs.unique_texts()
    index = {t: i for i, t in enumerate(texts)}

    def vectors(quality_of_pair):  # two 2-d unit vectors per pair whose cosine follows gold with some noise
        emb = np.zeros((len(texts), 2), dtype=np.float32)
        for i in range(n):
            angle = (5 - gold[i]) / 5 * np.pi / 2 + quality_of_pair * rng.normal()
            emb[index[pairs.left[i]]] = [1, 0]
            emb[index[pairs.right[i]]] = [np.cos(angle), np.sin(angle)]
        return emb

    made = {"mean": vectors(0.6), "last": vectors(1.2), REF: vectors(0.0)}  # the reference is perfect
    methods = {"mean": get_method("mean"), "last": get_method("last"), REF: get_method(REF)}
    q = quality(pairs, methods, lambda m, t: Encoded(made[m.name], 0.0, False), n_boot=200, seed=0,
                trained=set())
    rows = {r["label"]: r for r in q["methods"]}
    assert q["best"] == "mean" and q["reference"] == REF  # the highest Spearman is the reference's, not the best
    assert rows[REF]["reference"] and not rows["mean"]["reference"]
    assert rows[REF]["difference_to_best"] > 0 and rows[REF]["p"] is not None
    rec = recommend(q, None, None)
    assert rec["best"] == "mean" and rec["reference"]["verdict"] == "better"


def test_the_report_measures_minilm_alone(tiny_llama):
    from analysis.report.build import report_methods

    methods, trained = report_methods(tiny_llama)
    assert methods[REF].name == REF and REF not in trained
