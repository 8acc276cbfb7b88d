"""GIRCSE's test-time scaling on held-out STS-B: the K curve of the shipped adapter and of the frozen model, with
paired differences. Writes docs/results/gircse.json.

    python scripts/gircse_results.py [--sample 200] [--ks 0,1,3,5,10,20]

Pairs: a genre-stratified sample of the STS-B dev report part (never the selection part) without the first 200 dev
pairs, which the shipped adapter selected its checkpoint on before the split existed: no pair here was seen by any
selection. One generation of max(K) tokens per text gives every smaller K (generation is causal).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def held_out(sample: int, seed: int):
    from analysis.data.datasets import stsb_dev_part, stsb_pairs
    from analysis.data.samples import sample_pairs, subset

    dev, report = stsb_pairs("dev"), stsb_dev_part("report")
    seen = set(zip(dev.left[:200], dev.right[:200]))
    unseen = subset(report, [i for i, p in enumerate(zip(report.left, report.right)) if p not in seen],
                    "STS-B dev report part without the first 200 dev pairs")
    return sample_pairs(unseen, sample, seed), len(unseen)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ks", default="0,1,3,5,10,20")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--out", default=str(REPO / "docs" / "results"))
    args = ap.parse_args(argv)

    import numpy as np
    from transformers.utils import logging as hf_logging

    from analysis import load_backbone
    from analysis.data.samples import genre_counts
    from analysis.eval.results import write_record
    from analysis.eval.stats import paired_difference, resample_indices, spearman_replicates
    from analysis.inspect.generation import scaling_curve
    from analysis.weights.artefacts import read_manifest
    from analysis.weights.adapters import shipped_folder

    hf_logging.disable_progress_bar()
    start = time.perf_counter()
    pairs, pool = held_out(args.sample, args.seed)
    bb = load_backbone()
    ks = [int(k) for k in args.ks.split(",")]
    curves, seconds = {}, {}
    for label, adapter in (("shipped adapter", "shipped"), ("frozen model", "none")):
        curves[label] = scaling_curve(bb, pairs, ks, adapter=adapter, n_boot=args.n_boot)
        seconds[label] = round(float(curves[label]["seconds"][0]), 1)
        print(f"{label}: {seconds[label]:.0f} s", file=sys.stderr, flush=True)
    gold = np.asarray(pairs.scores)
    idx = resample_indices(len(gold), args.n_boot, seed=0)
    sims = {(label, int(k)): c["sims"][j] for label, c in curves.items() for j, k in enumerate(c["ks"])}
    rows = [[k, *[v for label in curves for v in (round(float(curves[label]["spearman"][j]), 4),
                                                  [round(float(x), 4) for x in curves[label]["ci"][j]])]]
            for j, k in enumerate(ks)]
    claims, findings = [], []
    for (a, b, meaning) in ((("shipped adapter", 5), ("frozen model", 5), "training helps at K = 5"),
                            (("shipped adapter", 5), ("shipped adapter", 0), "generating 5 tokens beats none"),
                            (("shipped adapter", 10), ("shipped adapter", 5), "K = 10 at least K = 5 (test-time scaling)"),
                            (("shipped adapter", 5), ("shipped adapter", 1), "K = 5 at least K = 1"),
                            (("shipped adapter", 20), ("shipped adapter", 5), "K = 20 at least K = 5")):
        if a not in sims or b not in sims:
            continue
        reps = spearman_replicates(np.stack([sims[a], sims[b]]), gold, idx)
        rho = [float(curves[x[0]]["spearman"][ks.index(x[1])]) for x in (a, b)]
        d = paired_difference(reps[0], reps[1], rho[0] - rho[1])
        claims.append([f"{a[0]} K={a[1]} − {b[0]} K={b[1]}", round(d.difference, 4),
                       [round(d.ci[0], 4), round(d.ci[1], 4)], round(d.p, 4)])
        verdict = "holds" if d.ci[0] > 0 else "is reversed" if d.ci[1] < 0 else "is not shown"
        findings.append(f"{meaning[0].upper()}{meaning[1:]}: {verdict} ({d.difference:+.3f}, paired 95% CI "
                        f"[{d.ci[0]:+.3f}, {d.ci[1]:+.3f}]).")
    man = read_manifest(shipped_folder(bb.facts))
    findings.append("The shipped adapter is the earlier one-epoch run (" + man.get("note", "") + "); the fair "
                    "baseline Causal-EOS and a run under the paper's summed loss are not trained yet.")
    record = {
        "id": "gircse", "title": "GIRCSE: the K curve on held-out pairs",
        "command": f"python scripts/gircse_results.py --sample {args.sample} --ks {args.ks}",
        "data": "STS-B dev report part without the first 200 dev pairs (no selection saw them)",
        "sample": {"n": len(pairs), "of": pool, "how": "stratified by genre/source", "seed": args.seed,
                   "genres": genre_counts(pairs)},
        "wall_seconds": round(time.perf_counter() - start, 1), "seconds": seconds,
        "tables": [{"title": "Spearman by K (K = 0: the prompt's last state, no generation), 95% bootstrap interval",
                    "columns": ["K", *[c for label in curves for c in (label, "95% CI")]], "rows": rows},
                   {"title": "Paired differences (the same resampled pairs)", "columns": ["A − B", "difference",
                                                                                       "95% CI", "p"],
                    "rows": claims}],
        "findings": findings}
    print(write_record(args.out, record), file=sys.stderr)


if __name__ == "__main__":
    main()
