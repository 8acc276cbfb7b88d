"""Context compression's Experiment C: the paragraph asked back from its pools.

A run trained with `python -m analysis train compression --reconstruct 0.5` (half its batches ask for the paragraph
back from its per-sentence pools, each content word's tokens weighing 3 in the loss, as the source does) generates
each held-out paragraph back: token F1 (bag of words, SQuAD's; the mean over paragraphs with a 95% bootstrap interval)
and exact match (95% Wilson interval), from per-sentence pools and, as the floor, from no context at all. Beside it,
the same weights' exact match on the held-out questions (does asking for the paragraph cost the answers?) and the
first reconstructions next to their paragraphs, which the Context compression page shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.errors import UserError
from analysis.core.params import param
from analysis.data import personas
from analysis.eval.stats import bootstrap_mean_ci
from analysis.experiments import Measured
from analysis.experiments.machinery import cells
from analysis.experiments.machinery.provenance import model_entry, shown_weights, weights_folder
from analysis.experiments.machinery.records import Sample, Table
from analysis.weights.artefacts import read_manifest

ID = "compression_reconstruction"
TITLE = "Context compression, Experiment C: the paragraph back from its pools"
HELP = ("A compression run trained with --reconstruct generates held-out paragraphs back from their per-sentence "
        "pools: token F1 and exact match against no context, its answers to the questions, and examples.")
SYSTEM = "compression"
MODES = {"sentence": "per-sentence pools", "none": "no context (the floor)"}


@dataclass(frozen=True)
class Config:
    weights: str = param("", "the run trained with --reconstruct: a run name under the cache's runs or a folder")
    n: int = param(100, "held-out paragraphs", min=1, limit=10_000)
    examples: int = param(8, "reconstructions recorded beside their paragraphs", min=0, limit=100)
    vocabulary: str = param("small", "the persona vocabulary the run was trained with (small or source)",
                             choices=("small", "source"))
    n_boot: int = param(1000, "bootstrap resamples of the token F1 interval", min=0, limit=10_000)
    seed: int = param(0, "seed of the bootstrap", min=0)


def measure(config: Config, compute, progress) -> Measured:
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.compression.system import CompressionSystem, reconstruction_item, reconstruction_scores, score
    if not config.weights:
        raise UserError("--weights names the run trained with `python -m analysis train compression --reconstruct "
                        "0.5` (there are no shipped reconstruction weights).")
    backbone = compute.backbone("default")
    folder = weights_folder(SYSTEM, backbone.facts, config.weights)
    manifest = read_manifest(folder)
    if not (manifest.get("hyperparameters") or {}).get("reconstruct"):
        raise UserError(f"{shown_weights(config.weights)} was trained without --reconstruct: it was never asked for a "
                        "paragraph back.")
    system = CompressionSystem.from_artefact(backbone, folder)
    items = personas.generate("heldout", config.n, vocabulary=config.vocabulary)
    rows, raw, first = [], {}, None
    for i, (mode, label) in enumerate(MODES.items()):
        progress(i, len(MODES) + 1, f"reconstruct: {label}")
        generated = system.reconstruct(items, mode)
        res = raw[mode] = reconstruction_scores(items, generated)
        lo, hi = bootstrap_mean_ci(res["token_f1_per_item"], config.n_boot, config.seed) if config.n_boot else \
            (float("nan"), float("nan"))
        rows.append((label, round(res["token_f1"], 4), cells.interval((lo, hi)), cells.rate(res), res["n"]))
        first = first or generated
    progress(len(MODES), len(MODES) + 1, "the questions")
    answered = score(compute.compress_predict(system, items, "sentence", False), [it.key for it in items])
    examples = tuple((reconstruction_item(it)["answer"], text, round(f1, 3)) for it, text, f1 in
                     zip(items, first, raw["sentence"]["token_f1_per_item"]))[: config.examples]
    tables = [
        Table("reconstruction", f"The paragraph back from its pools: token F1 (mean, 95% bootstrap interval) and exact "
                                f"match (%) [95% Wilson interval] on {config.n} held-out paragraphs",
              ("context", "token F1", "95% CI", "exact match", "n"), tuple(rows),
              "Token F1: bag-of-words F1 after lower-casing and removing punctuation (SQuAD's). Greedy generation, at "
              "most the paragraph's length plus 8 tokens."),
        Table("questions", "The same weights on the held-out questions, per-sentence pools: exact match (%) [95% "
                           "Wilson interval]", ("key", "exact match", "n"),
              tuple((k, cells.rate(r), r["n"]) for k, r in {"all": answered, **answered["per_key"]}.items())),
        Table("examples", f"The first {len(examples)} held-out paragraphs and their reconstructions from per-sentence "
                          "pools", ("paragraph", "reconstruction", "token F1"), examples),
    ]
    s = raw["sentence"]
    findings = [f"From one pool per sentence the run writes held-out paragraphs back with token F1 {s['token_f1']:.3f} "
                f"and exact match {cells.rate(s, '%')}, against token F1 {raw['none']['token_f1']:.3f} from no "
                f"context; it answers the questions at {cells.rate(answered, '%')}."]
    return Measured(data=f"analysis.data.personas held-out split ({config.vocabulary} vocabulary): people no training "
                         "or selection saw", sample=Sample(n=config.n, how="the held-out generator", seed=0),
                    models=[model_entry(backbone, {shown_weights(config.weights): folder})], tables=tables,
                    findings=findings, extra={"trained_by": {k: manifest.get(k) for k in
                                                             ("command", "steps_done", "best_step", "wall_seconds")}})
