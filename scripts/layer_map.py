"""KV-Embedding's layer map on both built-in models: where the intrinsic-dimension window ranks among every window.
Writes docs/results/layer_map.json.

    python scripts/layer_map.py [--sample 200] [--starts 1-29:2] [--widths paper] [--biases 0,1,3]

Runs `python -m analysis sweep` per model on one genre-stratified sample of the STS-B dev report part, at the
prefix-reuse floor (the prompt-only pass once, then only layers s..L-1 per cell), every cell through the compute
cache: an interrupted map resumes where it stopped. Starts past a model's last layer are dropped for that model.
The default grid is the model report's finest (`analysis.report.plan.ladder`: a start every second layer, the
paper's width floor(0.1 L) + 1 and twice it, biases 0, 1, 3), so after `SAMPLE=200 bash scripts/reports.sh` with a
budget that fits that grid every cell comes from the cache.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TITLES = {"default": "SmolLM2-135M-Instruct", "gemma3-270m": "Gemma 3 270M"}


def sweep(model: str, args) -> dict:
    from analysis.models.backbone import load_backbone

    from analysis.sweep.windows import paper_width

    L = load_backbone(model).facts.n_layers
    w = paper_width(L)
    widths = f"{w},{min(2 * w, L)}" if args.widths == "paper" else args.widths
    lo, _, rest = args.starts.partition("-")
    hi, _, step = rest.partition(":")
    starts = f"{lo}-{min(int(hi), L - 1)}" + (f":{step}" if step else "")
    cmd = [sys.executable, "-m", "analysis", "sweep", "--data", "stsb-dev-report", "--sample", str(args.sample),
           "--seed", str(args.seed), "--model", model, "--starts", starts, "--widths", widths,
           "--biases", args.biases, "--no-budgets"]  # the default grid is 84 cells, past the app's 64 per request
    out = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(out.stdout)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--starts", default="1-29:2", help="decoder layers, LO-HI[:STEP] (clipped to each model)")
    ap.add_argument("--widths", default="paper", help="comma-separated, or paper: floor(0.1 L) + 1 and twice it")
    ap.add_argument("--biases", default="0,1,3")
    ap.add_argument("--models", default="default,gemma3-270m")
    ap.add_argument("--out", default=str(REPO / "docs" / "results"))
    args = ap.parse_args(argv)

    from analysis.eval.results import write_record

    start = time.perf_counter()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    results = {m: sweep(m, args) for m in models}
    summary, top, findings = [], [], []
    for m, r in results.items():
        idw, best, refs = r["id_window"] or {}, r["best"], r["references"]
        summary.append([TITLES.get(m, m), r["cells"], round(refs["prompt only"], 4), round(refs["PromptEOL"], 4),
                        f"{idw.get('layers', [None])[0]}-{idw.get('layers', [None])[-1]}" if idw else "none",
                        None if idw.get("spearman") is None else round(idw["spearman"], 4),
                        f"{idw.get('rank_among_cells')} of {r['cells']}" if idw else "–",
                        f"{best['layers'][0]}-{best['layers'][-1]} b={best['bias']:g}", round(best["spearman"], 4),
                        round(r["seconds"] / 60, 1), f"{r['computed']} / {r['cached']}"])
        for row in sorted(r["rows"], key=lambda x: -x["spearman"])[:5]:
            top.append([TITLES.get(m, m), f"{row['layers'][0]}-{row['layers'][-1]}", row["width"], row["bias"],
                        round(row["spearman"], 4)])
        if idw and idw.get("spearman") is not None:
            verdict = "in the top tenth" if idw["rank_among_cells"] <= max(1, r["cells"] // 10) else "far from the best"
            findings.append(f"{TITLES.get(m, m)}: the ID window ranks {idw['rank_among_cells']} of {r['cells']} "
                            f"cells ({verdict}; {idw['spearman']:.3f} vs best {best['spearman']:.3f}, prompt only "
                            f"{refs['prompt only']:.3f}, PromptEOL {refs['PromptEOL']:.3f}).")
    first = next(iter(results.values()))
    record = {
        "id": "layer_map", "title": "KV-Embedding's layer map: does the intrinsic-dimension rule pick good layers?",
        "command": f"python scripts/layer_map.py --sample {args.sample} --starts {args.starts} --widths {args.widths} "
                   f"--biases {args.biases} --models {args.models}",
        "data": "STS-B dev, report part (stsb-dev-report)",
        "sample": {**first["sample"], "genres": first.get("genres")},
        "wall_seconds": round(time.perf_counter() - start, 1),
        "tables": [{"title": "The map per model (a coarse grid; the ID window is scored at the paper's bias 1)",
                    "columns": ["model", "cells", "prompt only", "PromptEOL", "ID window", "ID window Spearman",
                                "ID rank", "best cell", "best Spearman", "minutes (this run)",
                                "cells computed / from the cache"], "rows": summary},
                   {"title": "The five best cells per model", "columns": ["model", "layers", "width", "bias",
                                                                          "Spearman"], "rows": top}],
        "findings": findings, "raw": {m: {k: v for k, v in r.items() if k != "id_trajectory"} for m, r in results.items()}}
    print(write_record(args.out, record), file=sys.stderr)


if __name__ == "__main__":
    main()
