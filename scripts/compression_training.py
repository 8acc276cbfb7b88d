"""How much of the context-compression result is the training recipe (issue 26): the value warm start against the
source's random initialisation, and paragraph pools with a model trained for them, each next to the shipped run.

    python3 scripts/compression_training.py --random RUN_RANDOM --paragraph RUN_PARAGRAPH --n 200 --ood 50

The runs come from `python -m analysis train compression` with the shipped recipe and schedule (850 planned steps,
cut by `--max-minutes`), changing one thing: `--warm-start none` (N(0, 0.02^2) adapter, zero bias) or
`--pools-mode paragraph` (one pool per context, trained for). Writes docs/results/compression_training.json:

- validation exact match by step, read from each run's manifest: the same validation rows, schedule and batch as
  the shipped run, so the curves compare equal budgets step for step;
- held-out exact match with Wilson intervals (`personas.generate`, every key): per-sentence pools for the two
  initialisations, one paragraph pool for the shipped run and the paragraph run;
- the unseen-values probe (`personas.generate_ood("values")`): is the reader closed-vocabulary?
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECORD = "compression_training"


def curve_table(runs: dict) -> dict:
    """Validation exact match (%) at every evaluated step of each run: {label: manifest}."""
    curves = {label: {c["step"]: c["exact"] for c in m.get("curves", {}).get("validation", [])}
              for label, m in runs.items()}
    steps = sorted({s for c in curves.values() for s in c})
    return {"title": "Validation exact match (%) by optimiser step, same recipe and schedule",
            "columns": ["step", *runs],
            "rows": [[s, *(round(100 * c[s], 1) if s in c else None for c in curves.values())] for s in steps],
            "notes": "Each run scores its own validation rows (60 held-in personas) with the pools it is trained "
                     "for: per-sentence pools, or one paragraph pool for the paragraph run. – where a run did not "
                     "evaluate at that step."}


def pct(r: dict, unit: str = "") -> str:
    """"81.0 [75.1, 85.9]" (with unit "%": "81.0% [75.1, 85.9]"): exact match with its Wilson interval."""
    lo, hi = r["exact_match_ci"]
    return f"{100 * r['exact_match']:.1f}{unit} [{100 * lo:.1f}, {100 * hi:.1f}]"


def read(store, system, items, mode: str) -> dict:
    """`score` of `system` on `items` with pools `mode`, through the compute cache."""
    from analysis.compression.system import score
    from cache import cached_compress_predict

    preds, _ = cached_compress_predict(store, system, items, mode)
    return score(preds, [it.key for it in items])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--value", default="shipped", help="the value-warm-start run ('shipped': the shipped artefact)")
    ap.add_argument("--random", default="", help="the run trained with --warm-start none")
    ap.add_argument("--paragraph", default="", help="the run trained with --pools-mode paragraph")
    ap.add_argument("--n", type=int, default=200, help="held-out questions (default 200)")
    ap.add_argument("--ood", type=int, default=50, help="unseen-values probe items (0: none)")
    ap.add_argument("--out", default=str(REPO / "docs" / "results"), help="folder of the results records")
    args = ap.parse_args()

    import torch

    from analysis.compression.system import CompressionSystem, default_artefact
    from analysis.data import personas
    from analysis.eval.results import runs_table, shown_folder, write_record
    from analysis.models.backbone import load_backbone
    from analysis.weights.artefacts import read_manifest
    from cache import default_store

    torch.set_num_threads(2)
    wall = time.perf_counter()
    bb, store = load_backbone(), default_store()
    folders = {label: default_artefact(bb) if spec == "shipped" else Path(spec).expanduser()
               for label, spec in (("value warm start", args.value), ("random init", args.random),
                                   ("paragraph pools", args.paragraph)) if spec}
    manifests = {label: read_manifest(f) for label, f in folders.items()}
    systems = {label: CompressionSystem.from_artefact(bb, f) for label, f in folders.items()}
    items = personas.generate("heldout", args.n)
    ood = personas.generate_ood("values", args.ood) if args.ood else []
    rows, raw = [], {}
    reads = [(label, "sentence") for label in ("value warm start", "random init") if label in systems]
    reads += [(label, "paragraph") for label in ("value warm start", "paragraph pools") if label in systems]
    for label, mode in reads:
        t = time.perf_counter()
        res = read(store, systems[label], items, mode)
        probe = read(store, systems[label], ood, mode) if ood and mode == "sentence" else None
        raw[f"{label}, {mode}"] = {"heldout": res, "unseen_values": probe, "seconds": round(time.perf_counter() - t, 1)}
        m = manifests[label]
        rows.append([label, mode, m.get("steps_done"), m.get("best_step"), round(m.get("wall_seconds", 0) / 60, 1),
                     pct(res), *(pct(res["per_key"][k]) for k in personas.KEYS), pct(probe) if probe else None])
        print(f"{label}, {mode}: {pct(res)}", file=sys.stderr, flush=True)
    held = {"title": f"Held-out questions ({args.n}): exact match (%) [95% Wilson interval]",
            "columns": ["run", "pools", "steps", "best step", "training min", "all", *personas.KEYS,
                        f"unseen values ({args.ood})"],
            "rows": rows,
            "notes": "Each run at its best validation step, trained with the same recipe and schedule for the "
                     "minutes given: compare runs of different lengths at equal steps in the curve table. Unseen "
                     "values: contexts whose values and names no split uses, read with per-sentence pools."}
    record = {"id": RECORD, "title": "Context compression: what the training recipe contributes",
              "command": "python3 scripts/compression_training.py"
                         + "".join(f" --{flag} {shown_folder(spec)}"
                                   for flag, spec in (("value", args.value), ("random", args.random),
                                                      ("paragraph", args.paragraph)) if spec)
                         + f" --n {args.n} --ood {args.ood}",
              "data": "analysis.data.personas held-out split (names no training or selection saw), keys cycled",
              "sample": {"n": args.n, "how": "the held-out generator, every fact key equally often", "seed": 0},
              "trained_by": {label: {k: m.get(k) for k in ("command", "steps_done", "best_step", "wall_seconds",
                                                            "examples_per_second")}
                             for label, m in manifests.items()},
              "wall_seconds": round(time.perf_counter() - wall, 1),
              "tables": [curve_table(manifests), held, runs_table(manifests)], "findings": findings(raw, manifests),
              "raw": raw}
    print(f"written: {write_record(args.out, record)}", file=sys.stderr)


def findings(raw: dict, manifests: dict) -> list[str]:
    """Sentences built from the record's numbers."""
    out = []
    curve = {label: {c["step"]: c["exact"] for c in m.get("curves", {}).get("validation", [])}
             for label, m in manifests.items()}
    value = curve.get("value warm start", {})
    for label in ("random init", "paragraph pools"):
        if label not in curve or not curve[label]:
            continue
        step = max(s for s in curve[label] if s in value) if set(curve[label]) & set(value) else None
        if step is not None:
            out.append(f"At step {step} on validation, {label} scores {100 * curve[label][step]:.1f}% against the "
                       f"value warm start's {100 * value[step]:.1f}% (per-sentence pools), same recipe and schedule.")
    if "random init, sentence" in raw and raw["random init, sentence"]["unseen_values"]:
        r, v = raw["random init, sentence"], raw["value warm start, sentence"]
        out.append(f"Unseen values: random init {pct(r['unseen_values'], '%')}, value warm start "
                   f"{pct(v['unseen_values'], '%')} (held-out: {pct(r['heldout'], '%')} and {pct(v['heldout'], '%')}).")
    if "paragraph pools, paragraph" in raw:
        trained, shipped = raw["paragraph pools, paragraph"]["heldout"], raw["value warm start, paragraph"]["heldout"]
        per_sentence = raw["value warm start, sentence"]["heldout"]
        out.append(f"One paragraph pool, held out: the paragraph-trained run {pct(trained, '%')}, the "
                   f"value-warm-start run {pct(shipped, '%')}; its per-sentence pools {pct(per_sentence, '%')}.")
    return out


if __name__ == "__main__":
    main()
