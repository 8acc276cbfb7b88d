"""Layer sweeps: measured wall time against the cost floor, and against the old one-full-forward-per-cell loop.

    python scripts/bench_sweep.py [--limit 200] [--skip-old]

On the first N STS-B dev pairs with the default model: F = one prompt-only forward over the pairs' texts (timed
before and after, the mean is used); floor of a grid = F x (1 + sum over cells of (L - s) / L). Grids: 16 cells
(windows of 4 starting at 1, 5, ..., 29; b in {1, 16}: the earlier sweep in docs/RESULTS.md) and 64 cells (the
same starts, b in {0, 1, 3, 16}, rerotate off and on). The old loop (a full `encode` per cell, no cache) runs on
the 16-cell grid, and its Spearman values must equal the new ones. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict

import torch

from analysis import load_backbone
from analysis.data.datasets import pairs_of
from analysis.methods import get_method
from analysis.sweep import windows
from analysis.sweep.runner import cost, score_local, scorer


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=200, help="first N STS-B dev pairs")
    ap.add_argument("--skip-old", action="store_true", help="do not time the old loop")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default; 1 is steadier on "
                    "a loaded machine, where a descheduled second thread stalls every operation)")
    ap.add_argument("--grids", default="16,64", help="which grids to time: 16, 64 or both")
    args = ap.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)

    bb = load_backbone()
    L = bb.facts.n_layers
    pairs = pairs_of("stsb-dev", args.limit)
    texts = scorer(pairs).sides["document"]
    starts = range(1, L, 4)
    grids = {"16 cells": windows.grid(L, starts, [4], [1.0, 16.0]),
             "64 cells": windows.grid(L, starts, [4], [0.0, 1.0, 3.0, 16.0], [False, True])}
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731

    def forward_seconds() -> float:
        began = time.perf_counter()
        get_method("kv_embedding", layers="none").encode(bb, texts, batch_size=16)
        return time.perf_counter() - began

    out = {"model": bb.identity, "pairs": len(pairs), "texts": len(texts), "threads": torch.get_num_threads()}
    f_before = forward_seconds()
    log(f"prompt-only forward: {f_before:.1f} s")
    new = {}
    names = [k for k in grids if k.split()[0] in args.grids.split(",")]
    if not args.skip_old and "16 cells" not in names:
        raise SystemExit("the old loop is timed on the 16-cell grid: include it (--grids 16) or pass --skip-old")

    def time_new(name):
        cells = grids[name]
        began = time.perf_counter()
        done = {"floor": 1.0}

        def on_cell(r):  # running totals, so a run stopped early still says how close to the floor it was
            done["floor"] += (L - r.cell.start) / L
            wall = time.perf_counter() - began
            log(f"  {r.cell.label()}: rho={r.score:.4f}; elapsed {wall:.0f} s = "
                f"{wall / (done['floor'] * f_before):.3f} x its floor so far")

        rows = score_local(bb, pairs, cells, on_cell=on_cell,
                           on_prefix=lambda rho, s: out.__setitem__("prompt_only_spearman", rho))
        wall = time.perf_counter() - began
        new[name] = {r.cell: r.score for r in rows}
        out[name] = {"cells": len(cells), "floor_forwards": round(cost(cells, L), 3), "measured_seconds": wall,
                     "rows": [{**asdict(r.cell), "spearman": r.score} for r in rows]}
        log(f"{name}: {wall:.1f} s; " + json.dumps(out[name]["rows"]))

    time_new(names[0])
    if not args.skip_old:  # right after the new 16-cell run, so both see the same machine
        cells = grids["16 cells"]
        began = time.perf_counter()
        old = [windows.spearman_of(bb, windows.cell_method(c, L), pairs) for c in cells]  # the loop it replaced
        wall = time.perf_counter() - began
        diff = max(abs(rho - new["16 cells"][c]) for rho, c in zip(old, cells))
        out["old loop, 16 cells"] = {"measured_seconds": wall, "max_abs_spearman_difference": diff}
        log(f"old loop: {wall:.1f} s (max |delta rho| {diff:.2e})")
    for name in names[1:]:
        time_new(name)
    grids = {k: grids[k] for k in names}
    f_after = forward_seconds()
    f = (f_before + f_after) / 2
    out["prompt_only_forward_seconds"] = {"before": f_before, "after": f_after, "mean": f}
    for name in grids:
        g = out[name]
        g["floor_seconds"] = g["floor_forwards"] * f
        g["measured_over_floor"] = g["measured_seconds"] / g["floor_seconds"]
    if not args.skip_old:
        o = out["old loop, 16 cells"]
        o["speedup_of_new"] = o["measured_seconds"] / out["16 cells"]["measured_seconds"]
        o["old_over_forward"] = o["measured_seconds"] / f
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
