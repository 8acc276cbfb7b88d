"""The context-compression numbers of docs/RESULTS.md in one run: the held-out table (exact match and first-token
accuracy per fact key for every mode) and the scaling curve (exact match as distractor sentences are added),
and optionally (`--ood N`) the out-of-distribution probes.

    flock /work/.heavy.lock python3 scripts/compression_report.py --n 200 --scaling-n 50 > report.json

Results go through the compute cache (the same entries `python -m analysis compress-qa` and the app's Context
compression page use), so a second run, or the page afterwards, reads them back. Prints one JSON line per result
and a Markdown table at the end on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="held-out questions for the table (default 200)")
    ap.add_argument("--scaling-n", type=int, default=50, help="questions per point of the scaling curve")
    ap.add_argument("--sizes", default="5,10,20,50,100", help="pools per context for the scaling curve")
    ap.add_argument("--scaling-modes", default="sentence,sentence+ids,paragraph")
    ap.add_argument("--skip-table", action="store_true")
    ap.add_argument("--ood", type=int, default=0,
                    help="also score N items of each out-of-distribution probe (unseen phrasing / values / both; "
                         "personas.generate_ood) with per-sentence pools, full text and no context")
    args = ap.parse_args()

    import torch

    from analysis.data import personas
    from analysis.models.backbone import load_backbone
    from analysis.compression.system import TABLE_MODES, CompressionSystem, score, split_mode
    from cache import cached_compress_predict, default_store

    torch.set_num_threads(2)
    system = CompressionSystem.from_artefact(load_backbone())
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
    for kind in personas.OOD_KINDS if args.ood else ():
        items = personas.generate_ood(kind, args.ood)
        for mode in ("sentence", "text", "none"):
            t = time.perf_counter()
            preds, hit = cached_compress_predict(store, system, items, mode)
            res = score(preds, [it.key for it in items])
            print(json.dumps({"ood": {"kind": kind, "mode": mode, "exact_match": res["exact_match"],
                                      "exact_match_ci": res["exact_match_ci"], "first_token": res["first_token"],
                                      "per_key": {k: v["exact_match"] for k, v in res["per_key"].items()},
                                      "n": res["n"], "seconds": round(time.perf_counter() - t, 1)}}), flush=True)
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
