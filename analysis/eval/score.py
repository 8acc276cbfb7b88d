"""The one result of scoring a method on a task, whatever the family, and the paired comparison of two of them.

A `Score` carries the main metric with its bootstrap interval, every other metric, and the per-unit values the
interval resampled (`items`, named by `ids`): per-query nDCG@10 for retrieval, per-item correctness averaged over
the experiments for classification, per-experiment V-measure for clustering, per-(length, query) nDCG@1 for long
documents, per-pair cosines (with the gold scores) for STS. Two methods scored on the same task have the same units,
so `compare` resamples the same units for both (MTEB's and SentEval's habit: a difference is reported with a paired
interval, never as two overlapping intervals).

    a = score_task(task, embed_a)            # analysis.eval.tasks
    b = score_task(task, embed_b)
    d = compare(a, b, n_boot=1000, seed=0)   # stats.Paired(difference, ci, p, n_boot): a minus b
    table = compare_scores({"mean": a, "last": b}, versus="mean")   # several methods at once, as `compare` prints
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from analysis.core.errors import UserError
from analysis.eval.stats import (Paired, bootstrap_mean_ci, paired_difference, paired_mean_difference,
                                 resample_indices, spearman_replicates)

ROLES = ("query", "document")  # what `embed(texts, role)` is told; symmetric tasks embed every text as a document


@dataclass(frozen=True, eq=False)  # eq=False: numpy fields have no truth value
class Score:
    """One (method, task) cell: the main metric and its interval, the other metrics and the per-unit values."""

    task: str
    metric: str  # the main metric's name: "Spearman", "accuracy", "nDCG@10", "V-measure", "nDCG@1"
    value: float
    lo: float  # bootstrap interval of `value` over the units (NaN without an interval)
    hi: float
    n: int  # units: pairs, texts, queries or experiments
    kind: str = ""  # the task family
    unit: str = ""  # what `n` counts
    metrics: dict[str, float] = field(default_factory=dict)  # every metric, the main one included
    items: np.ndarray | None = None  # (n,) per-unit values (float64): their mean is `value`, except for STS
    ids: tuple[str, ...] = ()  # the units' names, so only scores of the same units are compared
    gold: np.ndarray | None = None  # STS: the gold scores the per-pair cosines are ranked against
    detail: dict = field(default_factory=dict)  # JSON-able family specifics (per length, per experiment, protocol)
    seconds: float = 0.0  # wall time spent in `embed`

    @property
    def ci(self) -> tuple[float, float]:
        return (self.lo, self.hi)


def mean_score(task: str, kind: str, metric: str, items, ids, *, unit: str, n_boot: int, seed: int,
               level: float = 0.95, **fields) -> Score:
    """A Score whose main metric is the mean of per-unit values, with its percentile bootstrap interval."""
    items = np.asarray(items, dtype=np.float64)
    if items.size == 0:
        raise UserError(f"{task}: nothing to score (no {unit}).")
    lo, hi = bootstrap_mean_ci(items, n_boot, seed, level) if n_boot else (float("nan"), float("nan"))
    value = float(items.mean())
    metrics = {metric: value, **fields.pop("metrics", {})}
    return Score(task, metric, value, lo, hi, int(items.size), kind=kind, unit=unit, metrics=metrics, items=items,
                 ids=tuple(str(i) for i in ids), **fields)


def compare(a: Score, b: Score, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> Paired:
    """a's main metric minus b's, with a paired bootstrap over their shared units (the same resamples for both):
    a mean of per-unit values for every family but STS, whose Spearman is recomputed on each resample."""
    if a.kind != b.kind or a.metric != b.metric:
        raise UserError(f"Only scores of one task family and metric can be compared, not {a.metric} ({a.kind}) and "
                        f"{b.metric} ({b.kind}).")
    if a.items is None or b.items is None:
        raise UserError("These scores were stored without their per-item values: score them again to compare them.")
    if a.task != b.task or a.ids != b.ids:
        raise UserError(f"{a.task} and {b.task} were not scored on the same {a.unit or 'items'}: a paired "
                        "comparison needs the same ones.")
    if a.kind == "sts":
        idx = resample_indices(a.items.size, n_boot, seed)  # (B, n): the same resampled pairs for both
        reps = spearman_replicates(np.stack([a.items, b.items]), a.gold, idx)  # (2, B)
        return paired_difference(reps[0], reps[1], a.value - b.value, level)
    return paired_mean_difference(a.items, b.items, n_boot, seed, level)


def best_of(scores: dict) -> str:
    """The label of the highest main metric (an undefined one never wins)."""
    return max(scores, key=lambda k: -math.inf if not math.isfinite(scores[k].value) else scores[k].value)


def compare_scores(scores: dict, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                   versus: str | None = None) -> dict:
    """Several methods scored on one task, each with its interval, and their paired differences (`compare`).

    Args:
        scores: {label: Score}, every one on the same task and units.
        versus: a label to compare every other method with (e.g. `best_of(scores)`); None: every pair, a before b.

    Returns:
        {"task", "kind", "metric", "unit", "n", "methods": [{"method", "value", "ci"}], "differences": [{"a", "b",
        "difference" (a minus b), "ci", "p"}], "n_boot", "seed", "bootstrap" (what was resampled, how p reads)}: the
        shape of `analysis.eval.sts.compare_cosines`, for any family.
    """
    labels = list(scores)
    if not labels:
        raise UserError("Nothing to compare: no method was scored.")
    if versus is not None and versus not in scores:
        raise UserError(f"{versus!r} is not among the compared methods {labels}.")
    first = scores[labels[0]]
    pairs = [(versus, k) for k in labels if k != versus] if versus is not None else \
        [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:]]
    nan = (math.nan, math.nan)
    differences = []
    for a, b in pairs:
        d = compare(scores[a], scores[b], n_boot=n_boot, seed=seed, level=level) if n_boot else None
        differences.append({"a": a, "b": b, "difference": scores[a].value - scores[b].value,
                            "ci": d.ci if d else nan, "p": d.p if d else math.nan})
    unit = first.unit or "items"
    return {"task": first.task, "kind": first.kind, "metric": first.metric, "unit": unit, "n": first.n,
            "methods": [{"method": k, "value": s.value, "ci": s.ci} for k, s in scores.items()],
            "differences": differences, "n_boot": n_boot, "seed": seed,
            "bootstrap": f"paired percentile bootstrap over {unit} ({n_boot} resamples, seed {seed}): the same "
                         f"resampled {unit} for every method; p = two-sided bootstrap p-value of no difference"}
