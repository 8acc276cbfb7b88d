"""A trained system retrained with bfloat16 autocast against its float32 run: the held-out score of each, their
paired difference, and the step time of each precision measured in interleaved rounds of this run.

Whether `train --precision bfloat16` may be used for a new model's hours of training rests on this: the held-out
result must stay within the float32 run's interval while the step gets faster. Both runs' manifests give their own
training wall time too, but each ran under its own load; the interleaved step timing here is the fair comparison.

    python -m analysis measure training_precision --bfloat16 bf16     # a causal2vec run name under the cache's runs
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core.params import param
from analysis.experiments import Measured
from analysis.experiments.machinery import cells, heldout_sts
from analysis.experiments.machinery.provenance import model_entry, weights_folder
from analysis.experiments.machinery.records import Table
from analysis.weights.artefacts import read_manifest

ID = "training_precision"
TITLE = "Training in bfloat16 (autocast) against float32: Causal2Vec on SmolLM2"
HELP = ("Causal2Vec trained with --precision bfloat16 against the float32 run: Spearman of each on held-out STS-B "
        "report pairs with the paired difference, and the training step time of both precisions in interleaved "
        "rounds of this run.")


@dataclass(frozen=True)
class Config:
    model: str = param("default", "the decoder both runs were trained for")
    float32: str = param("shipped", "the float32 run: shipped, or a run name / folder")
    bfloat16: str = param("bf16", "the bfloat16 run: a run name under <cache>/runs/causal2vec/<model>/ or a folder")
    sample: int = param(600, "pairs of the STS-B dev report part, stratified by genre (0 = all 1,200)", min=0)
    rounds: int = param(4, "interleaved rounds of training steps timed in each precision", min=1, limit=50)
    seed: int = param(0, "seed of the sample and of the bootstrap", min=0)
    n_boot: int = param(1000, "bootstrap resamples", min=0, limit=10_000)


def measure(config: Config, compute, progress) -> Measured:
    # lazy: torch stays off `measure --help`, which imports every experiment
    from analysis.methods import get_method
    from analysis.training.queue import step_times

    backbone = compute.backbone(config.model)
    runs = {p: weights_folder("causal2vec", backbone.facts, spec) for p, spec in
            (("float32", config.float32), ("bfloat16", config.bfloat16))}
    pairs, sample = heldout_sts.report_pairs(config.sample, config.seed)
    methods = {f"trained in {p}": get_method("causal2vec", bridge=str(folder)) for p, folder in runs.items()}
    cos, _ = heldout_sts.cosines(compute, backbone, methods, pairs, progress)
    scores, score_raw = heldout_sts.score_table("scores", "Held-out STS-B Spearman of each run", pairs, cos,
                                                n_boot=config.n_boot, seed=config.seed)
    paired, diff = heldout_sts.paired_table("paired", "bfloat16 run minus float32 run, paired over the same pairs",
                                         pairs, cos, [("trained in bfloat16", "trained in float32")],
                                         n_boot=config.n_boot, seed=config.seed)
    progress(len(methods), len(methods) + 1, "timing training steps")
    times = step_times("causal2vec", backbone, ("float32", "bfloat16"), rounds=config.rounds)
    return Measured(data=f"STS-B dev report part ({len(pairs)} pairs)", sample=sample,
                    models=[model_entry(backbone, {f"causal2vec ({p})": f for p, f in runs.items()})],
                    tables=[scores, paired, steps_table(times, runs)], findings=findings(score_raw, diff, times),
                    extra={"step_seconds": times})


def steps_table(times: dict, runs: dict) -> Table:
    """Each precision's step time in this run (median and range of the rounds) and its run's own manifest."""
    rows = []
    for p, folder in runs.items():
        m = read_manifest(folder)
        rows.append((p, round(float(np.median(times[p])), 2), [round(min(times[p]), 2), round(max(times[p]), 2)],
                     m.get("steps_done"), round(m["wall_seconds"] / 60, 1) if m.get("wall_seconds") else None,
                     f"`{m.get('command')}`"))
    return Table("steps", "Training step time (interleaved rounds in this run) and each run as it went",
                 ("precision", "seconds a step", "rounds' range", "run's steps", "run's training minutes",
                  "run's command"), tuple(rows),
                 notes="Each run's own minutes were measured under that run's machine load; the step times beside "
                       "them are interleaved rounds of the same batches in this run.")


def findings(score_raw: dict, diff: dict, times: dict) -> list[str]:
    ratio = float(np.median(times["bfloat16"]) / np.median(times["float32"]))
    a, b = score_raw["trained in bfloat16"], score_raw["trained in float32"]
    d = diff["trained in bfloat16", "trained in float32"]
    inside = b.ci[0] <= a.spearman <= b.ci[1]
    return [f"A training step under bfloat16 autocast takes {ratio:.2f}x the float32 step (median of interleaved "
            "rounds on the same batches).",
            f"Held-out Spearman: bfloat16 run {a.spearman:.3f}, float32 run {b.spearman:.3f} {cells.interval(b.ci)}; "
            f"paired difference {cells.difference(d)}: the bfloat16 run is "
            f"{'inside' if inside else 'outside'} the float32 run's interval."]
