"""Every method on both built-in models, on held-out STS-B with paired intervals: writes docs/results/methods_models.json.

    python scripts/methods_models.py [--sample 500] [--models default,gemma3-270m]

Runs `python -m analysis compare` once per model on the same genre-stratified sample of the report part of STS-B
dev (the 1,200 pairs no trainer selected on; `--data stsb-dev-report`), so trained methods (Causal2Vec, GIRCSE's
soft tokens) are judged on pairs their selection never saw. Embeddings go through the compute cache: a second run,
or one after a single method changed, recomputes only what changed. Each method's Spearman has its 95% bootstrap
interval; "vs best decoder" is the paired difference to that model's best decoder-only method (the same resampled
pairs for both); the sentence encoder alone (MiniLM) is the reference every decoder method is measured against.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Causal2Vec is measured in its own section (scripts/causal2vec_results.py): trained vs untrained readouts, the
# direct control, PromptEOL and its encoder, paired, on the same held-out pairs.
METHODS = ("last", "mean", "prompteol", "echo", "token_prepending", "htp", "kv_embedding", "soft_tokens",
           "sentence_encoder")
TITLES = {"default": "SmolLM2-135M-Instruct", "gemma3-270m": "Gemma 3 270M"}


def compare(model: str, methods: list[str], sample: int, seed: int) -> dict:
    """The `compare` command's JSON for one model (through the cache; progress on this process's stderr)."""
    cmd = [sys.executable, "-m", "analysis", "compare", "--methods", ",".join(methods), "--data", "stsb-dev-report",
           "--sample", str(sample), "--seed", str(seed), "--model", model]
    out = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(out.stdout)


ENCODER = "sentence_encoder"  # not a decoder method: the reference a decoder method is measured against


def versus_best(result: dict) -> dict[str, dict]:
    """{method: {"difference", "ci", "p"}} of each method minus the best decoder method (None for that one)."""
    best = max((r for r in result["methods"] if r["method"] != ENCODER), key=lambda r: r["spearman"])["method"]
    out = {best: None}
    for d in result["differences"]:
        if best in (d["a"], d["b"]):
            other, sign = (d["b"], -1) if d["a"] == best else (d["a"], 1)
            out[other] = {"difference": sign * d["difference"], "ci": sorted(sign * x for x in d["ci"]), "p": d["p"]}
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", default="default,gemma3-270m")
    ap.add_argument("--out", default=str(REPO / "docs" / "results"))
    ap.add_argument("--compare-json", action="append", default=[], metavar="MODEL=PATH",
                    help="use this saved output of the same compare command for MODEL instead of running it")
    args = ap.parse_args(argv)

    from analysis.eval.results import write_record

    start = time.perf_counter()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    saved = dict(item.split("=", 1) for item in args.compare_json)
    results = {m: json.loads(Path(saved[m]).read_text()) if m in saved else compare(m, list(METHODS), args.sample,
                                                                                      args.seed) for m in models}
    vs = {m: versus_best(r) for m, r in results.items()}
    rows = []
    for name in METHODS:
        row = [name]
        for m in models:
            r = next((x for x in results[m]["methods"] if x["method"] == name), None)
            if r is None:  # not applicable to this model
                row += [None, None, "no weights for this model"]
                continue
            d = vs[m].get(name)
            row += [round(r["spearman"], 4), [round(r["ci"][0], 4), round(r["ci"][1], 4)],
                    "best decoder method" if d is None else
                    f"{d['difference']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]"]
        rows.append(row)
    columns = ["method"] + [c for m in models for c in (f"{TITLES.get(m, m)}", "95% CI", "vs best decoder (paired)")]
    first = results[models[0]]
    findings = []
    for m in models:
        best = next(k for k, v in vs[m].items() if v is None)
        tied = [k for k, v in vs[m].items() if v is not None and k != ENCODER and v["ci"][0] <= 0 <= v["ci"][1]]
        enc = vs[m][ENCODER]
        findings.append(f"{TITLES.get(m, m)}: the best decoder method is {best}" +
                        (f"; not significantly different from it: {', '.join(tied)}" if tied else "") +
                        f"; the small sentence encoder alone is {enc['difference']:+.3f} above it (paired 95% CI "
                        f"[{enc['ci'][0]:+.3f}, {enc['ci'][1]:+.3f}]).")
    record = {
        "id": "methods_models", "title": "Methods x models on held-out STS-B",
        "command": f"python scripts/methods_models.py --sample {args.sample} --seed {args.seed}",
        "data": "STS-B dev, report part (stsb-dev-report: 1,200 pairs no trainer selected on)",
        "sample": {"n": first["sample"]["n"], "of": first["sample"].get("of"), "how": first["sample"].get("how"),
                   "seed": args.seed, "genres": first.get("genres")},
        "wall_seconds": round(time.perf_counter() - start, 1),
        "tables": [{"title": "Spearman of cosine similarity with the gold scores (methods at their defaults; soft "
                             "tokens with the adapter shipped for the model, the frozen model where none is shipped; "
                             "Causal2Vec: its own section)", "columns": columns, "rows": rows,
                    "notes": first["bootstrap"]}],
        "findings": findings, "raw": results}
    print(write_record(args.out, record), file=sys.stderr)


if __name__ == "__main__":
    main()
