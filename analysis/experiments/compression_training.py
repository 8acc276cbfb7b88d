"""How much of the context-compression result is the training recipe: the value warm start against the source's
random initialisation, and paragraph pools with a model trained for them, each next to the value-warm-start run.

The runs come from `python -m analysis train compression` with the shipped recipe and schedule, changing one thing:
`--warm-start none` (N(0, 0.02^2) adapter, zero bias) or `--pools-mode paragraph` (one pool per context, trained
for). The record holds validation exact match by step from each run's manifest (the same validation rows, schedule
and batch, so the curves compare equal budgets step for step), held-out exact match with Wilson intervals, and the
unseen-values probe (`personas.generate_ood("values")`): is the reader closed-vocabulary?
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.params import param
from analysis.data import personas
from analysis.experiments import Measured
from analysis.experiments.machinery import cells
from analysis.experiments.machinery.provenance import model_entry, shown_weights, weights_folder
from analysis.experiments.machinery.records import Sample, Series, Table
from analysis.experiments.machinery.training_runs import runs_table
from analysis.weights.artefacts import read_manifest

ID = "compression_training"
TITLE = "Context compression: what the training recipe contributes"
HELP = ("The compression system's value warm start against random initialisation, and paragraph pools trained for "
        "against per-sentence pools: validation curves, held-out exact match and the unseen-values probe.")
SYSTEM = "compression"
VALUE, RANDOM, PARAGRAPH = "value warm start", "random init", "paragraph pools"


@dataclass(frozen=True)
class Config:
    value: str = param("shipped/ablations/single-person", "the value-warm-start run")
    random: str = param("", "the run trained with --warm-start none")
    paragraph: str = param("", "the run trained with --pools-mode paragraph")
    n: int = param(200, "held-out questions", min=1, limit=10_000)
    ood: int = param(50, "unseen-values probe items (0 = none)", min=0, limit=10_000)


def validation_curves(manifests: dict) -> dict[str, dict[int, float]]:
    """{label: {step: validation exact match}} from each run's manifest."""
    return {label: {c["step"]: c["exact"] for c in (m.get("curves") or {}).get("validation", [])}
            for label, m in manifests.items()}


def measure(config: Config, compute, progress) -> Measured:
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.compression.system import CompressionSystem, score
    backbone = compute.backbone("default")
    specs = {label: spec for label, spec in ((VALUE, config.value), (RANDOM, config.random),
                                             (PARAGRAPH, config.paragraph)) if spec}
    folders = {label: weights_folder(SYSTEM, backbone.facts, spec) for label, spec in specs.items()}
    manifests = {label: read_manifest(f) for label, f in folders.items()}
    systems = {label: CompressionSystem.from_artefact(backbone, f) for label, f in folders.items()}
    items = personas.generate("heldout", config.n)
    ood = personas.generate_ood("values", config.ood) if config.ood else []
    reads = [(label, "sentence") for label in (VALUE, RANDOM) if label in systems]
    reads += [(label, "paragraph") for label in (VALUE, PARAGRAPH) if label in systems]
    rows, raw = [], {}
    for i, (label, mode) in enumerate(reads):
        progress(i, len(reads), f"{label}, {mode}")
        res = score(compute.compress_predict(systems[label], items, mode, False), [it.key for it in items])
        probe = (score(compute.compress_predict(systems[label], ood, mode, False), [it.key for it in ood])
                 if ood and mode == "sentence" else None)
        raw[f"{label}, {mode}"] = {"heldout": res, "unseen_values": probe}
        m = manifests[label]
        rows.append((label, mode, m.get("steps_done"), m.get("best_step"),
                     round(m["wall_seconds"] / 60, 1) if m.get("wall_seconds") else None, cells.rate(res),
                     *(cells.rate(res["per_key"][k]) for k in personas.KEYS), cells.rate(probe)))
    curves = validation_curves(manifests)
    steps = tuple(sorted({s for c in curves.values() for s in c}))
    tables = [
        Table("validation", "Validation exact match (%) by optimiser step, same recipe and schedule",
              ("step", *curves), tuple((s, *(round(100 * c[s], 1) if s in c else None for c in curves.values()))
                                       for s in steps),
              "Each run scores its own validation rows (60 held-in personas) with the pools it is trained for: "
              "per-sentence pools, or one paragraph pool for the paragraph run. – where a run did not evaluate at "
              "that step.", digits={label: 1 for label in curves}),
        Table("heldout", f"Held-out questions ({config.n}): exact match (%) [95% Wilson interval]",
              ("run", "pools", "steps", "best step", "training min", "all", *personas.KEYS,
               f"unseen values ({config.ood})"), tuple(rows),
              "Each run at its best validation step, trained with the same recipe and schedule for the minutes given: "
              "compare runs of different lengths at equal steps in the validation table. Unseen values: contexts "
              "whose values and names no split uses, read with per-sentence pools.", digits={"training min": 1}),
        runs_table(manifests)]
    series = [Series("validation", "Validation exact match by optimiser step", "optimiser step", steps,
                     {label: [c.get(s) for s in steps] for label, c in curves.items()}, y="exact match")]
    return Measured(data="analysis.data.personas held-out split (names no training or selection saw), keys cycled",
                    sample=Sample(n=config.n, how="the held-out generator, every fact key equally often", seed=0),
                    models=[model_entry(backbone, {shown_weights(specs[k]): f for k, f in folders.items()})],
                    tables=tables, series=series, findings=findings(raw, curves), extra={"raw": raw})


def findings(raw: dict, curves: dict) -> list[str]:
    """Sentences built from the record's numbers."""
    out = []
    value = curves.get(VALUE, {})
    for label in (RANDOM, PARAGRAPH):
        shared = set(curves.get(label, {})) & set(value)
        if shared:
            step = max(shared)
            out.append(f"At step {step} on validation, {label} scores {100 * curves[label][step]:.1f}% against the "
                       f"value warm start's {100 * value[step]:.1f}% (per-sentence pools), same recipe and schedule.")
    if (raw.get(f"{RANDOM}, sentence") or {}).get("unseen_values"):
        r, v = raw[f"{RANDOM}, sentence"], raw[f"{VALUE}, sentence"]
        out.append(f"Unseen values: random init {cells.rate(r['unseen_values'], '%')}, value warm start "
                   f"{cells.rate(v['unseen_values'], '%')} (held-out: {cells.rate(r['heldout'], '%')} and "
                   f"{cells.rate(v['heldout'], '%')}).")
    if f"{PARAGRAPH}, paragraph" in raw and f"{VALUE}, paragraph" in raw:
        trained, shipped = raw[f"{PARAGRAPH}, paragraph"]["heldout"], raw[f"{VALUE}, paragraph"]["heldout"]
        per_sentence = raw[f"{VALUE}, sentence"]["heldout"]
        out.append(f"One paragraph pool, held out: the paragraph-trained run {cells.rate(trained, '%')}, the "
                   f"value-warm-start run {cells.rate(shipped, '%')}; its per-sentence pools "
                   f"{cells.rate(per_sentence, '%')}.")
    return out
