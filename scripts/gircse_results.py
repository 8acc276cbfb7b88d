"""GIRCSE against its fair baseline on held-out STS-B: the K curve of the shipped adapter, Causal-EOS, the frozen
model, PromptEOL and the shipped ablations, with paired differences overall and per genre, the cost of each K and the
training runs. Writes docs/results/gircse.json (the Soft tokens page draws its "curves" entry).

    python scripts/gircse_results.py [--sample 500] [--ks 0,1,3,5,10,20] [--speed-n 64] [--repeats 3]

Pairs: `analysis.inspect.generation.unseen_pairs`, a genre-stratified sample of the STS-B dev report part (never the
selection part) without the first 200 dev pairs, where the adapters trained before the split selected: no selection
saw a pair here. Configurations, each embedding every distinct sentence once:
- GIRCSE (adapter=shipped) at every K, from one generation of max(K) tokens (generation is causal);
- Causal-EOS (adapter=causal-eos), the fair baseline, at K = 0 (the readout it was trained on) and at K = 5
  (generating although it was never trained to: what generation alone adds to the same contrastive training);
- the frozen model at every K, and PromptEOL (training-free, the same model);
- the shipped ablations (ablations/*) at K = 5, labelled "older recipe" when the first trainer made them (mean of the
  step losses, selected on the first 200 dev pairs).
Paired differences use the same resampled pairs for both sides (analysis.eval.stats). Cost: every K of the shipped
adapter and PromptEOL as ratios to one plain forward of the same sentences (bare text, last token), timed
interleaved in this run (analysis.core.timing). Training: each shipped adapter's manifest.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GIRCSE, BASELINE, FROZEN, PROMPTEOL = "GIRCSE", "Causal-EOS", "frozen model", "PromptEOL"
ABLATION_K = 5  # the K the ablations and the paper's comparisons are read at (the K they were trained with)
CLAIMS = [  # (A, B, what A > B would show); a row is (configuration, K), K None for PromptEOL
    ((GIRCSE, 5), (BASELINE, 0), "GIRCSE beats its fair baseline Causal-EOS (same LoRA, data, steps and loss, "
                                 "without generation)"),
    ((GIRCSE, 10), (GIRCSE, 5), "K = 10 is above K = 5 (test-time scaling)"),
    ((GIRCSE, 5), (GIRCSE, 1), "K = 5 is above K = 1"),
    ((GIRCSE, 20), (GIRCSE, 5), "K = 20 is above K = 5"),
    ((GIRCSE, 5), (FROZEN, 5), "training helps at K = 5"),
    ((GIRCSE, 5), (PROMPTEOL, None), "GIRCSE beats the training-free PromptEOL"),
    ((GIRCSE, 5), (GIRCSE, 0), "generating 5 tokens beats none with the same adapter"),
]


def name(row: tuple[str, int | None]) -> str:
    return row[0] if row[1] is None else f"{row[0]} K={row[1]}"


def variants(bb) -> dict[str, tuple[str, list[int] | None]]:
    """{configuration: (adapter, Ks)} of what is shipped for this model; Ks None = every K of the run."""
    from analysis.core.errors import UserError
    from analysis.inspect.generation import older_recipe
    from analysis.weights.adapters import CAUSAL_EOS, shipped_folder

    shipped = shipped_folder(bb.facts)
    if shipped is None:
        raise UserError(f"No GIRCSE adapter is shipped for {bb.facts.name}: nothing to measure.")
    out = {GIRCSE: ("shipped", None)}
    if shipped_folder(bb.facts, CAUSAL_EOS) is not None:
        out[BASELINE] = (CAUSAL_EOS, [0, ABLATION_K])
    out[FROZEN] = ("none", None)
    for sub in sorted(shipped.glob("ablations/*")):
        if (sub / "adapter_config.json").is_file():
            out[f"ablation {sub.name}" + (" (older recipe)" if older_recipe(sub) else "")] = (str(sub), [ABLATION_K])
    return out


def embeddings(bb, texts: list[str], ks: list[int], configs: dict) -> tuple[dict, dict]:
    """({(configuration, K): (n, d) embeddings}, {configuration: seconds}); PromptEOL's K is None."""
    from analysis.methods import get_method
    from analysis.methods.soft_tokens import SoftTokens

    out, seconds = {}, {}
    for label, (adapter, wanted) in configs.items():
        run_ks = ks if wanted is None else wanted
        start = time.perf_counter()
        emb = SoftTokens(k=max(run_ks), adapter=adapter).encode_steps(bb, texts, run_ks)  # (n, m, d)
        seconds[label] = round(time.perf_counter() - start, 1)
        print(f"{label}: {seconds[label]:.0f} s", file=sys.stderr, flush=True)
        out.update({(label, k): emb[:, j] for j, k in enumerate(run_ks)})
    start = time.perf_counter()
    out[PROMPTEOL, None] = get_method("prompteol").encode(bb, texts, batch_size=32)
    seconds[PROMPTEOL] = round(time.perf_counter() - start, 1)
    return out, seconds


def scores(pairs, emb: dict, n_boot: int) -> dict:
    """Per row: cosines, the overall score with its interval, and the score per STS-B genre."""
    import numpy as np

    from analysis.eval.sts import pair_cosines, pair_index, score_cosines

    _, left, right = pair_index(pairs)
    gold = np.asarray(pairs.scores)
    genre = np.array([g.split("/")[0].removeprefix("main-") for g in pairs.genres])
    out = {"gold": gold, "genre": genre, "genres": sorted(set(genre)), "rows": {}}
    for row, e in emb.items():
        cos = pair_cosines(e, left, right)
        out["rows"][row] = {"cos": cos, "all": score_cosines(cos, gold, n_boot=n_boot),
                            "genre": {g: score_cosines(cos[genre == g], gold[genre == g], n_boot=0).spearman
                                      for g in out["genres"]}}
    return out


def paired(s: dict, n_boot: int) -> tuple[dict, list[list], list[str]]:
    """The CLAIMS present in `s`: (raw, table rows overall and per genre, one finding per claim)."""
    import numpy as np

    from analysis.eval.stats import paired_difference, resample_indices, spearman_replicates

    gold, genre, rows = s["gold"], s["genre"], s["rows"]
    raw, table, findings = {}, [], []
    for a, b, meaning in CLAIMS:
        if a not in rows or b not in rows:
            continue
        cells = [f"{name(a)} − {name(b)}"]
        for subset in ["all", *s["genres"]]:
            m = np.ones(len(gold), bool) if subset == "all" else genre == subset
            reps = spearman_replicates(np.stack([rows[a]["cos"][m], rows[b]["cos"][m]]), gold[m],
                                       resample_indices(int(m.sum()), n_boot, seed=0))
            diff = (rows[a]["all"].spearman - rows[b]["all"].spearman if subset == "all"
                    else rows[a]["genre"][subset] - rows[b]["genre"][subset])
            d = paired_difference(reps[0], reps[1], diff)
            raw[f"{name(a)} - {name(b)} | {subset}"] = {"difference": d.difference, "ci": d.ci, "p": d.p}
            cells.append(f"{d.difference:+.3f} [{d.ci[0]:+.3f}, {d.ci[1]:+.3f}]")
            if subset == "all":
                verdict = "holds" if d.ci[0] > 0 else "is reversed" if d.ci[1] < 0 else "is not shown"
                findings.append(f"{meaning[0].upper()}{meaning[1:]}: {verdict} ({name(a)} − {name(b)} = "
                                f"{d.difference:+.3f}, paired 95% CI [{d.ci[0]:+.3f}, {d.ci[1]:+.3f}], p = {d.p:.3g}).")
        table.append(cells)
    return raw, table, findings


def cost(bb, texts: list[str], ks: list[int], repeats: int, batch_size: int) -> dict[str, tuple[float, float]]:
    """{configuration: (median seconds, ratio to the plain forward)} over the same texts, interleaved rounds."""
    import torch

    from analysis.core.timing import interleaved_medians
    from analysis.methods import get_method
    from analysis.methods.soft_tokens import SoftTokens
    from benchmark import vanilla_forward  # scripts/benchmark.py, beside this script

    configs = {"plain forward": lambda: vanilla_forward(bb, texts, batch_size)}
    for k in ks:
        method = SoftTokens(k=k, adapter="shipped")
        method.adapted(bb)  # merged once, outside the timed calls: it then costs what the frozen model costs
        configs[f"soft tokens K={k}"] = lambda m=method: m.encode(bb, texts, batch_size=batch_size)
    configs[PROMPTEOL] = lambda: get_method("prompteol").encode(bb, texts, batch_size=batch_size)
    with torch.inference_mode():
        for f in configs.values():  # warm-up: first-call allocations
            f()
        med = interleaved_medians(configs, repeats)
    return {label: (round(sec, 3), round(sec / med["plain forward"], 2)) for label, sec in med.items()}


def training_rows(bb, configs: dict) -> list[list]:
    """One row per trained configuration: its recipe and run as its manifest records them."""
    from analysis.weights.adapters import PLACES, shipped_folder
    from analysis.weights.artefacts import read_manifest

    rows = []
    for label, (adapter, _) in configs.items():
        if adapter == "none":
            continue
        man = read_manifest(shipped_folder(bb.facts, adapter) if adapter in PLACES else Path(adapter))
        hp = man.get("hyperparameters") or {}
        wall = man.get("wall_seconds")
        rows.append([label, hp.get("objective") or f"{hp.get('loss')} (first trainer)", man.get("steps_done"),
                     man.get("best_step"), man.get("best_score"), None if wall is None else f"{wall / 60:.1f}",
                     man.get("examples_per_second"), man.get("command")])
    return rows


def ci(r: dict) -> list[float]:
    return [round(r["all"].ci[0], 4), round(r["all"].ci[1], 4)]


def point(r: dict) -> dict:
    return {"spearman": round(r["all"].spearman, 4), "ci": ci(r)}


def tables(bb, pairs, s: dict, ks: list[int], speed: dict, configs: dict, claim_rows: list, shape: dict) -> list:
    """The record's tables: the K curve with its cost, every configuration per genre, the paired claims, the cost,
    the training runs."""
    from analysis.inspect.generation import ABLATIONS

    rows, genres = s["rows"], s["genres"]
    curve = {"title": "The K curve: GIRCSE and the frozen model, with the cost of each K (× one plain forward of the "
                      "same sentences)",
             "columns": ["K", GIRCSE, "95% CI", FROZEN, "95% CI", "× plain forward"],
             "rows": [[k, *point(rows[GIRCSE, k]).values(), *point(rows[FROZEN, k]).values(),
                       speed.get(f"soft tokens K={k}", (None, None))[1]] for k in ks]}
    main = {"title": f"Spearman on {len(pairs)} held-out pairs ({shape['texts']} sentences), 95% bootstrap interval, "
                     "and per STS-B genre (K = 0: the prompt's last state, no generation)",
            "columns": ["configuration", "K", "Spearman", "95% CI", *genres],
            "rows": [[label, k, *point(r).values(), *[round(r["genre"][g], 4) for g in genres]]
                     for (label, k), r in rows.items()],
            "notes": "Causal-EOS was trained on K = 0, its readout; at K = 5 it generates although it was never "
                     "trained to. Ablations, read at K = 5: " + "; ".join(f"{k} = {v}" for k, v in ABLATIONS.items())
                     + ". PromptEOL has no K."}
    out = [curve, main, {"title": "Paired differences (the same resampled pairs for both sides), overall and per "
                                  "STS-B genre", "columns": ["A − B", "all", *genres], "rows": claim_rows}]
    if speed:
        out.append({"title": f"Inference cost on {shape['timed']} of these sentences (batch {shape['batch_size']}), "
                             f"medians of {shape['repeats']} interleaved rounds in this run",
                    "columns": ["configuration", "seconds", "× plain forward"],
                    "rows": [[label, sec, ratio] for label, (sec, ratio) in speed.items()],
                    "notes": "Soft tokens with the shipped adapter, merged into a copy of the model once before timing "
                             "(the frozen model's cost). K = 0 is one forward of the instruction-wrapped prompt, "
                             "longer than the bare sentence."})
    out.append({"title": "How each shipped adapter was trained (from its manifest)",
                "columns": ["configuration", "objective", "steps", "best step", "best validation ρ", "wall (min)",
                            "pairs/s", "command"], "rows": training_rows(bb, configs)})
    return out


def page_curves(bb, s: dict, ks: list[int], speed: dict, configs: dict) -> dict:
    """What the Soft tokens page draws (analysis.inspect.generation.recorded_curves): GIRCSE's and the frozen model's
    K curves, Causal-EOS at K = 0 and PromptEOL as reference lines, the other rows as points, the cost per K, and
    the shipped adapters' specs so the page can tell when the record is older than the weights."""
    from analysis.weights.adapters import PLACES, adapter_spec

    rows = s["rows"]
    timed = [k for k in ks if f"soft tokens K={k}" in speed]
    references = {f"{BASELINE} (K = 0)": point(rows[BASELINE, 0])} if (BASELINE, 0) in rows else {}
    return {"model": bb.identity, "ks": ks,
            "adapters": {a: adapter_spec(a) for a in PLACES if any(v[0] == a for v in configs.values())},
            "lines": {label: {"spearman": [point(rows[label, k])["spearman"] for k in ks],
                              "ci": [ci(rows[label, k]) for k in ks]} for label in (GIRCSE, FROZEN)},
            "references": {**references, PROMPTEOL: point(rows[PROMPTEOL, None])},
            "points": {name(row): {"k": row[1], **point(r)} for row, r in rows.items()
                       if row[0] not in (GIRCSE, FROZEN, PROMPTEOL) and row != (BASELINE, 0)},
            "cost": {"ks": timed, "ratio": [speed[f"soft tokens K={k}"][1] for k in timed]}}


def measure(bb, pairs, *, ks: list[int], n_boot: int, speed_n: int, repeats: int, batch_size: int) -> dict:
    """Everything the record holds but its provenance: tables, findings, raw numbers, the page's curves."""
    from analysis.eval.sts import pair_index

    configs = variants(bb)
    texts = pair_index(pairs)[0]
    emb, seconds = embeddings(bb, texts, ks, configs)
    s = scores(pairs, emb, n_boot)
    speed = cost(bb, texts[:speed_n], ks, repeats, batch_size) if speed_n else {}
    raw_paired, claim_rows, findings = paired(s, n_boot)
    shape = {"texts": len(texts), "timed": min(speed_n, len(texts)), "batch_size": batch_size, "repeats": repeats}
    if BASELINE not in configs:
        findings.append("No Causal-EOS baseline is shipped for this model, so the fair-baseline claim is not measured "
                        "(train it with `python -m analysis train gircse --objective causal-eos --ship`).")
    if any(label.endswith("(older recipe)") for label in configs):
        findings.append("The rows marked older recipe come from the first trainer (mean of the step losses, selected "
                        "on the first 200 dev pairs; the training table has the rest): they differ from GIRCSE in more "
                        "than the loss.")
    return {"seconds": seconds, "tables": tables(bb, pairs, s, ks, speed, configs, claim_rows, shape),
            "findings": findings, "curves": page_curves(bb, s, ks, speed, configs),
            "raw": {"scores": {name(row): r["all"].spearman for row, r in s["rows"].items()}, "paired": raw_paired}}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=500, help="held-out pairs, stratified by genre (0 = all 1,037)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ks", default="0,1,3,5,10,20", help="the K curve (the claims need 0, 1, 5, 10 and 20)")
    ap.add_argument("--speed-n", type=int, default=64, help="sentences timed for the cost table (0 = skip it)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved timing rounds (medians kept)")
    ap.add_argument("--batch-size", type=int, default=64, help="batch of the timed runs (soft tokens' default)")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's choice)")
    ap.add_argument("--out", default=str(REPO / "docs" / "results"))
    args = ap.parse_args(argv)

    import torch
    from transformers.utils import logging as hf_logging

    from analysis import load_backbone
    from analysis.data.samples import genre_counts
    from analysis.eval.results import write_record
    from analysis.inspect.generation import OLD_SELECTION, unseen_pairs

    if args.threads:
        torch.set_num_threads(args.threads)
    hf_logging.disable_progress_bar()
    start = time.perf_counter()
    pairs, pool = unseen_pairs(args.sample, args.seed)
    bb = load_backbone()
    ks = sorted({int(k) for k in args.ks.split(",")})
    result = measure(bb, pairs, ks=ks, n_boot=args.n_boot, speed_n=args.speed_n, repeats=args.repeats,
                     batch_size=args.batch_size)
    record = {
        "id": "gircse", "title": "GIRCSE against its fair baseline: the K curve on held-out pairs",
        "command": f"python scripts/gircse_results.py --sample {args.sample} --ks {','.join(map(str, ks))} "
                   f"--speed-n {args.speed_n}",
        "data": f"STS-B dev report part without the first {OLD_SELECTION} dev pairs (no selection saw them)",
        "sample": {"n": len(pairs), "of": pool, "how": "stratified by genre/source" if args.sample else "all",
                   "seed": args.seed, "genres": genre_counts(pairs)},
        "wall_seconds": round(time.perf_counter() - start, 1), **result}
    print("\n".join(result["findings"]))
    print(write_record(args.out, record), file=sys.stderr)


if __name__ == "__main__":
    main()
