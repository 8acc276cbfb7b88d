"""The context-compression numbers of docs/RESULTS.md in one run: the held-out table (exact match and first-token
accuracy per fact key for every mode) and the scaling curve (exact match as distractor sentences are added),
and optionally (`--ood N`) the out-of-distribution probes.

    flock /work/.heavy.lock python3 scripts/compression_report.py --n 200 --scaling-n 50 > report.json

Results go through the compute cache (the same entries `python -m analysis compress-qa` and the app's Context
compression page use), so a second run, or the page afterwards, reads them back. Prints one JSON line per result
and a Markdown table at the end on stderr, and writes docs/results/compression.json (the record behind the
context-compression section of docs/RESULTS.md): the held-out table with Wilson intervals, the distractor curve,
the OOD probes when asked, and `--cross-person N` five-person held-out items read by the same weights (trained on
one person per context: the baseline of issue 26's Experiments B and B2).

`--experiment people` measures cross-person selection instead (the source's Experiments B, B2 and its scaling
study) and writes docs/results/compression_people.json:

    python3 scripts/compression_report.py --experiment people --single shipped --five RUN5 --five-names RUN5N \
        --scaling 5=RUN5N,10=RUN10N,25=RUN25N,50=RUN50N,100=RUN100N --n 200

- Experiments B / B2: single-person items read by the single-person model, five-person items read by the model
  trained on them without names, and with each pool's person as name tokens (no name questions: their answer
  would be copied); exact match per fact key with 95% Wilson intervals, and the attention of the answer's first
  position split between the asked person's pools and everyone else's (`person_attention`, mean over layers and
  over the first `--attention-n` items; chance is 1/N).
- Scaling: N people per context with names, each N read by its own run (the cascade), on held-out items; the test
  set shrinks beyond N = 50 (`test_size`: n * 50 / N, at least 25) as the source's does, since a row grows with N.
  The attention split is measured up to `--attention-max-people` people: eager attention keeps every layer's full
  map, which grows with the square of the row.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECORD = "compression_people"


def test_size(people: int, n: int) -> int:
    """Held-out items at N people: `n` up to 50 people, then n * 50 / N (at least 25)."""
    return n if people <= 50 else max(25, n * 50 // people)


def predict(system, items, ids: bool, store=None) -> list[dict]:
    """Per-sentence-pool answers to `items`, through the compute cache when a store is given."""
    if store is None:
        return system.predict(items, "sentence", ids=ids)
    from cache import cached_compress_predict

    return cached_compress_predict(store, system, items, "sentence", ids=ids)[0]


def measure(system, items, ids: bool, *, attention_n: int = 0, store=None) -> dict:
    """`score` of per-sentence pools on `items` (overall and per key, with Wilson intervals), plus the attention
    split by person over the first `attention_n` items: the asked person's share of the pool mass per layer
    (mean over items) and its mean over layers."""
    import numpy as np

    from analysis.compression.system import person_attention, score

    res = score(predict(system, items, ids, store), [it.key for it in items])
    if attention_n:
        shares = np.stack([person_attention(it, *system.pool_attention(it, "sentence", ids=ids))["share"]
                           for it in items[:attention_n]])  # (items, L)
        per_layer = np.nanmean(shares, 0)  # (L,)
        res["attention"] = {"asked_share": float(np.nanmean(per_layer)), "per_layer": per_layer.round(4).tolist(),
                            "items": len(shares)}
    return res


def _pct(r: dict | None) -> str | None:
    """"81.0 [75.1, 85.9]": exact match and its Wilson interval in percent."""
    if r is None:
        return None
    lo, hi = r["exact_match_ci"]
    return f"{100 * r['exact_match']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def _share(res: dict) -> float | None:
    return round(res["attention"]["asked_share"], 3) if "attention" in res else None


def experiment_b(conditions: list[dict], n: int, *, attention_n: int, store=None, layout: str = "grouped"):
    """The Experiment B / B2 table. `conditions`: [{"label", "system", "people", "names"}], each read on its own
    held-out items (`generate_people`; names shown as tokens iff "names"). Returns (table, raw results)."""
    from analysis.data import personas

    rows, raw = [], {}
    for c in conditions:
        items = personas.generate_people("heldout", n, people=c["people"], layout=layout, names=c["names"])
        res = measure(c["system"], items, c["names"], attention_n=attention_n, store=store)
        raw[c["label"]] = res
        rows.append([c["label"], c["people"], "yes" if c["names"] else "no", _pct(res),
                     *(_pct(res["per_key"].get(k)) for k in personas.KEYS), _share(res), round(1 / c["people"], 3),
                     res["n"]])
    table = {"title": "Experiments B and B2: exact match (%) [95% Wilson interval] per fact key, and the answer's "
                      "attention to the asked person's pools",
             "columns": ["condition", "people", "names", "all", *(f"{k}" for k in personas.KEYS),
                         "asked share of pool attention", "chance", "n"],
             "rows": rows,
             "notes": "Each condition is read by the model trained for it. With names, each pool is preceded by the "
                      "literal name of the person its sentence is about, and name questions are left out (– in "
                      "the name column): their answer would be copied. Asked share: the mass the answer's first "
                      "position puts on the asked person's pools over its mass on all pools, mean over decoder "
                      f"layers and the first {attention_n} items; chance is 1/N."}
    return table, raw


def scaling(runs: dict, n: int, *, attention_n: int, attention_max_people: int, store=None,
            layout: str = "grouped", base=None, trained: dict | None = None):
    """The scaling table: {N: system} each read on `test_size(N, n)` held-out N-person items with names; with
    `base` (the five-person run), each N's items are also read by it, untrained on N (the cascade's starting
    point); `trained` ({N: manifest}) adds each run's steps and best step. Returns (table, raw results)."""
    from analysis.data import personas

    rows, raw = [], {}
    for people, system in sorted(runs.items()):
        items = personas.generate_people("heldout", test_size(people, n), people=people, layout=layout, names=True)
        res = measure(system, items, True, attention_n=attention_n if people <= attention_max_people else 0,
                      store=store)
        raw[people] = res
        untrained = None
        if base is not None:
            untrained = res if base is system else measure(base, items, True, store=store)
            raw[f"{people} read by the five-person run"] = untrained
        m = (trained or {}).get(people)
        rows.append([people, 5 * people, _pct(res), *(_pct(res["per_key"].get(k)) for k in personas.KEYS[1:]),
                     _share(res), round(1 / people, 4), res["n"]] + ([_pct(untrained)] if base is not None else [])
                    + ([_steps_at(m, people)] if trained else []))
    table = {"title": "Scaling: exact match (%) [95% Wilson interval] with N people per context, names shown",
             "columns": ["people", "pools", "all", *personas.KEYS[1:], "asked share of pool attention", "chance",
                         "n"] + (["all, read by the five-person run"] if base is not None else [])
                        + (["steps trained at N (best)"] if trained else []),
             "rows": rows,
             "notes": f"Each N is read by its own run, warm-started from the previous N's (the cascade), or by "
                      f"the largest trained run where the steps column says so. Held-out "
                      f"items: {n} up to 50 people, then n * 50 / N (at least 25). Attention split up to "
                      f"{attention_max_people} people (– beyond)."
                      + (" Last column: the same items read by the five-person run, never trained on more people."
                         if base is not None else "")}
    return table, raw


def _steps_at(manifest: dict | None, people: int) -> str | None:
    """"34 (best 0)": the steps a run trained at `people` per context; a run trained for another N reads this N
    untrained ("0: the 50-person run")."""
    if not manifest:
        return None
    trained_for = manifest.get("hyperparameters", {}).get("people")
    if trained_for is not None and trained_for != people:
        return f"0: the {trained_for}-person run"
    return f"{manifest.get('steps_done')} (best {manifest.get('best_step')})"


def single_person_check(single, candidate, n: int, *, store=None) -> tuple[dict, dict]:
    """Does the cross-person model keep single-person accuracy (the shipping bar: at least 95% of the single-person
    model's)? Both read `n` built-in held-out single-person questions (`personas.generate`, every key) with
    per-sentence pools, the candidate also with its name tokens; the paired bootstrap gives the difference's
    interval. Returns (table, raw results)."""
    from analysis.compression.system import score
    from analysis.data import personas
    from analysis.eval.stats import paired_mean_difference

    items = personas.generate("heldout", n)
    keys = [it.key for it in items]
    exact, raw = {}, {}
    for label, system, ids in (("single-person run", single, False), ("five-person run, names", candidate, False),
                               ("five-person run, names, + name tokens", candidate, True)):
        preds = predict(system, items, ids, store)
        raw[label] = score(preds, keys)
        exact[label] = [float(p["exact"]) for p in preds]
    base = raw["single-person run"]["exact_match"]
    rows = []
    for label, res in raw.items():
        d = None if label == "single-person run" else paired_mean_difference(exact[label], exact["single-person run"])
        rows.append([label, _pct(res), *(_pct(res["per_key"].get(k)) for k in personas.KEYS),
                     None if d is None else f"{100 * d.difference:+.1f} [{100 * d.ci[0]:+.1f}, {100 * d.ci[1]:+.1f}]",
                     round(res["exact_match"] / base, 3) if base else None, res["n"]])
        if d is not None:
            res["paired_vs_single"] = {"difference": d.difference, "ci": list(d.ci), "p": d.p}
    table = {"title": "Single-person held-out questions read by each run: does the cross-person model keep the "
                      "single-person accuracy?",
             "columns": ["run", "all", *personas.KEYS, "minus single-person run (paired, points)",
                         "share of the single-person run's", "n"],
             "rows": rows,
             "notes": "The built-in held-out single-person items (`personas.generate`, every key equally often), "
                      "per-sentence pools. Shipping bar: at least 0.95 of the single-person run's exact match "
                      "without name tokens. With name tokens a name question's answer is in the context (copied)."}
    return table, raw


def _trained_by(folder) -> dict:
    """A run's training facts from its manifest (the command without machine paths)."""
    from analysis.weights.artefacts import read_manifest

    man = read_manifest(folder)
    return {"command": man.get("command"), "steps": man.get("steps_done"), "best_step": man.get("best_step"),
            "wall_seconds": man.get("wall_seconds"), "examples_per_second": man.get("examples_per_second"),
            "warm_start": man.get("warm_start")}


def people_main(args) -> None:
    """`--experiment people`: Experiments B, B2 and the scaling table, written as a results record."""
    import torch

    from analysis.compression.system import CompressionSystem, default_artefact
    from analysis.eval.results import runs_table, shown_folder, write_record
    from analysis.models.backbone import load_backbone
    from analysis.weights.artefacts import read_manifest
    from cache import default_store

    torch.set_num_threads(2)
    wall = time.perf_counter()
    bb = load_backbone()
    store = default_store()

    def folder(spec: str) -> Path:
        return default_artefact(bb) if spec == "shipped" else Path(spec).expanduser()

    conditions = [dict(label=label, folder=folder(spec), people=people, names=names)
                  for label, spec, people, names in (("single person", args.single, 1, False),
                                                     ("five people", args.five, 5, False),
                                                     ("five people, names", args.five_names, 5, True)) if spec]
    runs = {int(k): folder(v) for k, v in (part.split("=", 1) for part in args.scaling.split(",") if part)}
    systems = {}

    def system(path: Path):
        if path not in systems:
            systems[path] = CompressionSystem.from_artefact(bb, path)
        return systems[path]

    tables, raw = [], {}
    if conditions:
        table, raw["experiment_b"] = experiment_b([{**c, "system": system(c["folder"])} for c in conditions], args.n,
                                                  attention_n=args.attention_n, store=store, layout=args.layout)
        tables.append(table)
        print(json.dumps({"experiment_b": raw["experiment_b"]}), flush=True)
    if runs:
        base = system(folder(args.five_names)) if args.five_names and args.scaling_base else None
        table, raw["scaling"] = scaling({k: system(v) for k, v in runs.items()}, args.n, attention_n=args.attention_n,
                                        attention_max_people=args.attention_max_people, store=store,
                                        layout=args.layout, base=base,
                                        trained={k: read_manifest(v) for k, v in runs.items()})
        raw["scaling_steps"] = {k: _steps_at(read_manifest(v), k) for k, v in sorted(runs.items())}
        tables.append(table)
        print(json.dumps({"scaling": raw["scaling"]}), flush=True)
    if args.single_check and args.single and args.five_names:
        table, raw["single_check"] = single_person_check(system(folder(args.single)), system(folder(args.five_names)),
                                                         args.single_check, store=store)
        tables.append(table)
        print(json.dumps({"single_check": raw["single_check"]}), flush=True)
    names = {c["label"]: c["folder"] for c in conditions} | {f"{k} people": v for k, v in runs.items()}
    once = {}  # one row per run folder: a run read at several N (or in both tables) is listed under its first label
    for label, f in names.items():
        once.setdefault(f, label)
    tables.append(runs_table({label: read_manifest(f) for f, label in once.items()}))
    command = ("python3 scripts/compression_report.py --experiment people"
               + "".join(f" --{flag} {shown_folder(spec)}"
                         for flag, spec in (("single", args.single), ("five", args.five),
                                            ("five-names", args.five_names)) if spec)
               + (" --scaling " + ",".join(f"{k}={shown_folder(str(v))}" for k, v in sorted(runs.items()))
                  if runs else "")
               + (" --scaling-base" if runs and args.scaling_base else "")
               + (f" --single-check {args.single_check}" if args.single_check else "")
               + f" --n {args.n} --attention-n {args.attention_n}")
    record = {"id": RECORD, "title": "Context compression: picking the right person's pools",
              "command": command, "data": f"analysis.data.personas held-out split, generate_people ({args.layout} "
                                          "layout): people and person-key pairs no training or selection saw",
              "seed": 0, "trained_by": {label: _trained_by(f) for label, f in names.items()},
              "wall_seconds": round(time.perf_counter() - wall, 1), "tables": tables, "findings": people_findings(raw),
              "raw": raw}
    path = write_record(args.out, record)
    print(f"written: {path}", file=sys.stderr)


def people_findings(raw: dict) -> list[str]:
    """What the people record shows, in sentences built from its numbers (so a rerun keeps them true)."""

    def pct(r: dict) -> str:
        return _pct(r).replace(" [", "% [", 1)

    out = []
    b = raw.get("experiment_b", {})
    if "five people" in b and "five people, names" in b:
        out.append(f"Five people per context: {pct(b['five people'])} without names, {pct(b['five people, names'])} "
                   "with each pool's person as name tokens (no name questions); selection becomes copying.")
    check = raw.get("single_check", {})
    if check and check["single-person run"]["exact_match"]:
        single, kept = check["single-person run"], check["five-person run, names"]
        d, share = kept["paired_vs_single"], kept["exact_match"] / single["exact_match"]
        out.append(f"On single-person held-out questions the five-person run with names answers {pct(kept)} without "
                   f"name tokens against the single-person run's {pct(single)} (paired difference "
                   f"{100 * d['difference']:+.1f} points [{100 * d['ci'][0]:+.1f}, {100 * d['ci'][1]:+.1f}]): "
                   f"{share:.3f} of it, {'above' if share >= 0.95 else 'below'} the shipping bar of 0.95.")
    scaled = {k: v for k, v in raw.get("scaling", {}).items() if isinstance(k, int)}
    if len(scaled) > 1:
        lo, hi = min(scaled), max(scaled)
        out.append(f"With names, from {lo} to {hi} people per context exact match goes from {pct(scaled[lo])} to "
                   f"{pct(scaled[hi])} (chance of picking the right person: 1/{lo} to 1/{hi}).")
    if raw.get("scaling_steps"):
        out.append("Steps trained at each N (best step): "
                   + "; ".join(f"{k}: {v}" for k, v in raw["scaling_steps"].items()) + ".")
    return out


def _cell(r: dict) -> str:
    """"99.5 [97.2, 99.9]": exact match (%) with its Wilson interval."""
    lo, hi = r["exact_match_ci"]
    return f"{100 * r['exact_match']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def table_record(args, table: dict, curve: list, ood: list, cross: list, wall: float) -> dict:
    """The `compression` results record of the default mode."""
    from analysis.data import personas
    from analysis.eval.results import shown_folder

    tables = []
    if table:
        tables.append({"title": f"Held-out questions ({args.n}): exact match (%) [95% Wilson interval] per way of "
                                "giving the context, overall and per fact key",
                       "columns": ["mode", "all", *personas.KEYS, "context tokens per position", "n"],
                       "rows": [[mode, _cell(r), *(_cell(r["per_key"][k]) for k in personas.KEYS),
                                 None if r["compression"] is None else round(r["compression"], 2), r["n"]]
                                for mode, r in table.items()],
                       "notes": "sentence: one MiniLM pool per sentence (the system); +ids: the person's name as "
                                "literal tokens before each pool; paragraph: one pool for the whole context; text: "
                                "the full context as tokens; none: no context. Context tokens per position: the "
                                "compression ratio."})
    if curve:
        tables.append({"title": f"Dilution: exact match (%) as distractor sentences pad each context "
                                f"({args.scaling_n} held-out questions per point)",
                       "columns": ["pools", *args.scaling_modes.split(",")],
                       "rows": [[size, *(f"{100 * p['exact_match']:.1f}" for p in curve if p["pools"] == size)]
                                for size in dict.fromkeys(p["pools"] for p in curve)],
                       "notes": "One person per context, padded with content-free distractor sentences: the source "
                                "calls this a benign setting (pools are chosen by content type only)."})
    if ood:
        tables.append({"title": f"Out of distribution ({args.ood} items per probe): exact match (%) [95% Wilson "
                                "interval]",
                       "columns": ["probe", "pools", "full text", "no context"],
                       "rows": [[kind, *(_cell(r) for r in ood if r["kind"] == kind)]
                                for kind in personas.OOD_KINDS]})
    if cross:
        tables.append({"title": f"Cross-person selection read by the same weights ({args.cross_person} held-out "
                                "items of five people each, none trained on more than one person)",
                       "columns": ["condition", "all", *personas.KEYS, "n"],
                       "rows": [[label, _cell(r), *(_cell(r["per_key"][k]) if k in r["per_key"] else "–"
                                                   for k in personas.KEYS), r["n"]] for label, r in cross],
                       "notes": "Five people's fact sentences per context (grouped), the question names one of "
                                "them. With names, each pool is preceded by its person's name as literal tokens and "
                                "name questions are left out (they would be copied). Chance of picking the right "
                                "person's pool: 1/5."})
    findings = []
    if table and cross:
        alone = table["sentence"]["exact_match"]
        findings.append("On five-person held-out items these weights (trained on one person per context) answer "
                        + " and ".join(f"{100 * r['exact_match']:.1f}% {'with' if 'names' in label else 'without'} "
                                       "names" for label, r in cross)
                        + f", against {100 * alone:.1f}% on single-person items: they do not pick the asked person's "
                          "pools. Picking among people needs training on several people per context (issue 26's "
                          "Experiments B and B2, `python -m analysis train compression --people 5 [--names]`).")
    command = (f"python3 scripts/compression_report.py --n {args.n} --scaling-n {args.scaling_n}"
               + (f" --ood {args.ood}" if args.ood else "")
               + (f" --cross-person {args.cross_person}" if args.cross_person else "")
               + (f" --weights {shown_folder(args.weights)}" if args.weights else ""))
    return {"id": "compression", "title": "Context compression: facts read back from one vector per sentence",
            "command": command, "data": "analysis.data.personas held-out split: names (people) no training or "
                                        "selection saw; generated, never sorted by genre",
            "sample": {"n": args.n, "how": "the held-out generator, keys cycled (every fact key equally often)",
                       "seed": 0},
            "wall_seconds": round(wall, 1), "tables": tables, "findings": findings}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", choices=["table", "people"], default="table",
                    help="table: the held-out table, the distractor scaling curve and the OOD probes (default); "
                         "people: Experiments B, B2 and the N-people scaling table (a results record)")
    ap.add_argument("--single", default="shipped", help="people: the single-person run's folder ('shipped': the "
                                                        "shipped artefact; '' leaves the row out)")
    ap.add_argument("--five", default="", help="people: the run trained with --people 5")
    ap.add_argument("--five-names", default="", help="people: the run trained with --people 5 --names")
    ap.add_argument("--scaling", default="", help="people: N=FOLDER,... one run per people count (with --names)")
    ap.add_argument("--scaling-base", action="store_true",
                    help="people: also read every N of the scaling study with the --five-names run (never trained "
                         "on more than five people)")
    ap.add_argument("--single-check", type=int, default=0,
                    help="people: read N single-person held-out questions with the --single and --five-names runs "
                         "(the shipping bar: the latter keeps at least 95%% of the former)")
    ap.add_argument("--layout", default="grouped", choices=["grouped", "interleaved"])
    ap.add_argument("--attention-n", type=int, default=40, help="people: items whose attention is split per row")
    ap.add_argument("--attention-max-people", type=int, default=25)
    ap.add_argument("--out", default=str(REPO / "docs" / "results"), help="people: folder of the results records")
    ap.add_argument("--weights", default="", help="table: a run's folder instead of the shipped artefact (e.g. the "
                                                  "random-initialisation run, for its unseen-values probe)")
    ap.add_argument("--n", type=int, default=200, help="held-out questions for the table (default 200)")
    ap.add_argument("--scaling-n", type=int, default=50, help="questions per point of the scaling curve")
    ap.add_argument("--sizes", default="5,10,20,50,100", help="pools per context for the scaling curve")
    ap.add_argument("--scaling-modes", default="sentence,sentence+ids,paragraph")
    ap.add_argument("--skip-table", action="store_true")
    ap.add_argument("--cross-person", type=int, default=0,
                    help="also read N five-person held-out items (without and with name tokens) with the same "
                         "weights")
    ap.add_argument("--no-record", action="store_true", help="print only; do not write docs/results/compression.json")
    ap.add_argument("--ood", type=int, default=0,
                    help="also score N items of each out-of-distribution probe (unseen phrasing / values / both; "
                         "personas.generate_ood) with per-sentence pools, full text and no context")
    args = ap.parse_args()
    if args.experiment == "people":
        return people_main(args)

    import torch

    from analysis.data import personas
    from analysis.models.backbone import load_backbone
    from analysis.compression.system import TABLE_MODES, CompressionSystem, score, split_mode
    from cache import cached_compress_predict, default_store

    torch.set_num_threads(2)
    wall = time.perf_counter()
    system = CompressionSystem.from_artefact(load_backbone(), args.weights or None)
    store = default_store()
    table = {}
    if not args.skip_table:
        items = personas.generate("heldout", args.n)
        keys = [it.key for it in items]
        for mode in TABLE_MODES:
            m, ids = split_mode(mode)
            t = time.perf_counter()
            preds, hit = cached_compress_predict(store, system, items, m, ids=ids)
            res = {**score(preds, keys), "pools": mode, "seconds": round(time.perf_counter() - t, 1), "cached": hit}
            table[mode] = res
            print(json.dumps({"table": res}), flush=True)
    curve = []
    for size in [int(s) for s in args.sizes.split(",")]:
        items = personas.generate_scaled("heldout", args.scaling_n, total_sentences=size)
        for mode in args.scaling_modes.split(","):
            m, ids = split_mode(mode)
            t = time.perf_counter()
            preds, hit = cached_compress_predict(store, system, items, m, ids=ids)
            res = score(preds)
            point = {"pools": size, "mode": mode, "exact_match": res["exact_match"], "first_token": res["first_token"],
                     "compression": res["compression"], "n": res["n"], "seconds": round(time.perf_counter() - t, 1)}
            curve.append(point)
            print(json.dumps({"scaling": point}), flush=True)
    ood, cross = [], []
    for kind in personas.OOD_KINDS if args.ood else ():
        items = personas.generate_ood(kind, args.ood)
        for mode in ("sentence", "text", "none"):
            t = time.perf_counter()
            preds, hit = cached_compress_predict(store, system, items, mode)
            res = score(preds, [it.key for it in items])
            ood.append({**res, "kind": kind, "mode": mode})
            print(json.dumps({"ood": {"kind": kind, "mode": mode, "exact_match": res["exact_match"],
                                      "exact_match_ci": res["exact_match_ci"], "first_token": res["first_token"],
                                      "per_key": {k: v["exact_match"] for k, v in res["per_key"].items()},
                                      "n": res["n"], "seconds": round(time.perf_counter() - t, 1)}}), flush=True)
    for names in (False, True) if args.cross_person else ():
        items = personas.generate_people("heldout", args.cross_person, people=5, names=names)
        preds, _ = cached_compress_predict(store, system, items, "sentence", ids=names)
        res = score(preds, [it.key for it in items])
        cross.append((f"five people{', names' if names else ''} (weights trained on one person)", res))
        print(json.dumps({"cross_person": {"names": names, "exact_match": res["exact_match"],
                                           "exact_match_ci": res["exact_match_ci"], "n": res["n"]}}), flush=True)
    if not args.no_record:
        from analysis.eval.results import write_record

        path = write_record(REPO / "docs" / "results",
                            table_record(args, table, curve, ood, cross, time.perf_counter() - wall))
        print(f"written: {path}", file=sys.stderr)
    if table:
        modes = list(table)
        lines = ["| key | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
        for k in ["all", *personas.KEYS]:
            cells = []
            for mode in modes:
                r = table[mode] if k == "all" else table[mode]["per_key"][k]
                cells.append(f"{100 * r['exact_match']:.1f} / {100 * r['first_token']:.1f}")
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
        print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    main()
