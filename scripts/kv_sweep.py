"""The layer explorer's sweep from the command line, through the same cache entries as the Layer explorer page.

    python scripts/kv_sweep.py [--data stsb-dev|lee|FILE] [--limit 200] [--step 4] [--widths 4] [--biases 1.0]

Scores the prompt-only forward, PromptEOL, the ID window (layers=auto) and every cell; prints one JSON line
with the rows and the summary (best cell vs ID window vs references). Stop it any time: a rerun resumes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="stsb-dev")
    ap.add_argument("--limit", type=int, default=200, help="first N pairs")
    ap.add_argument("--start", type=int, default=1)
    ap.add_argument("--step", type=int, default=4)
    ap.add_argument("--widths", default="4")
    ap.add_argument("--biases", default="1.0")
    ap.add_argument("--rerotate", default="false", help="false, true or both")
    ap.add_argument("--model", default="default")
    ap.add_argument("--cells-only", action="store_true", help="skip the references (a helper process)")
    ap.add_argument("--reverse", action="store_true", help="score the cells last-first (a helper process)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    args = ap.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    from analysis import explorer, load_backbone
    from analysis.datasets import pairs_of
    from analysis.methods import get_method
    from cache import auto_window, default_store
    from cache.keys import sts_score_parts

    bb = load_backbone(args.model)
    L = bb.facts.n_layers
    pairs = pairs_of(args.data, args.limit)
    store = default_store()

    def score(method, label):
        start = time.perf_counter()

        def compute():
            return {"spearman": np.array([explorer.spearman_of(bb, method, pairs)])}, {}

        entry, hit = store.get_or_compute(sts_score_parts(bb, pairs, method), compute, namespace="kv_explorer")
        rho = float(entry.arrays["spearman"][0])
        print(f"{label}: rho={rho:.4f} ({'cached' if hit else f'{time.perf_counter() - start:.0f} s'})",
              file=sys.stderr, flush=True)
        return rho

    base = {"prompt": "document", "pooling": "hybrid"}  # the page's defaults, so entries are shared
    sel, ids = auto_window(store, bb, get_method("kv_embedding", **base))
    refs, id_score = {}, None
    if not args.cells_only:
        refs = {"prompt only": score(get_method("kv_embedding", layers="none", **base), "prompt only"),
                "PromptEOL": score(get_method("prompteol"), "PromptEOL")}
        id_score = score(get_method("kv_embedding", layers=",".join(map(str, sel.layers)), **base), "ID window")
    rot = {"false": [False], "true": [True], "both": [False, True]}[args.rerotate]
    cells = explorer.grid(L, range(args.start, L, args.step), [int(w) for w in args.widths.split(",")],
                          [float(b) for b in args.biases.split(",")], rot)
    if args.reverse:
        cells = cells[::-1]
    rows = explorer.sweep(cells, lambda c: score(explorer.cell_method(c, L, **base), c.label()))
    out = {"model": bb.identity, "data": args.data, "pairs": len(pairs), "id_trajectory": ids,
           "id_selection": sel.as_dict(), "rows": rows,
           "summary": explorer.summary(rows, L, sel.layers, id_score, refs)}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
