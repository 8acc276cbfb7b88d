"""bfloat16 against float32 on this CPU for one model (not a test): speed of a method's forward, interleaved in one
run, and the change in STS-B dev Spearman.

    python scripts/bench_dtype.py [--model default] [--methods last,prompteol] [--n 256] [--repeats 3] [--limit 200]

Speed: the first N unique STS-B dev sentences, `encode` without the cache at batch 16, every method in float32
and bfloat16 timed in turn in each round; medians of the rounds; bfloat16 time / float32 time per method.
Quality: Spearman of the last method listed on the first `--limit` dev pairs in each dtype.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from analysis import get_method, load_backbone
from analysis.data.corpora import shared_stsb
from analysis.data.files import read_sts
from analysis.eval.sts import sts_spearman


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="default")
    ap.add_argument("--methods", default="last,prompteol", help="timed methods; the last one is also scored")
    ap.add_argument("--n", type=int, default=256, help="sentences timed (default 256)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=int, default=200, help="STS-B dev pairs for the Spearman (0 = all)")
    args = ap.parse_args(argv)

    path = shared_stsb("dev")
    if path is None:
        raise SystemExit("STS-B dev not found (../shared/data/stsbenchmark)")
    pairs = read_sts(path)
    sents = list(dict.fromkeys(pairs.unique_texts()))[: args.n]
    models = {d: load_backbone(args.model, dtype=d) for d in ("float32", "bfloat16")}
    methods = [get_method(n.strip()) for n in args.methods.split(",") if n.strip()]
    times = {(m.name, d): [] for m in methods for d in models}
    for _ in range(args.repeats):
        for m in methods:
            for d, bb in models.items():
                start = time.perf_counter()
                m.encode(bb, sents, batch_size=16)
                times[(m.name, d)].append(time.perf_counter() - start)
    sub = pairs if not args.limit else pairs.head(args.limit)
    scored = methods[-1]
    rho = {d: sts_spearman(bb, scored, sub)["spearman"] for d, bb in models.items()}
    med = {f"{n}/{d}": statistics.median(t) for (n, d), t in times.items()}
    out = {"model": args.model, "threads": torch.get_num_threads(), "sentences": len(sents), "seconds_median": med,
           "bf16_over_f32_time": {m.name: med[f"{m.name}/bfloat16"] / med[f"{m.name}/float32"] for m in methods},
           "scored": scored.name, "pairs": len(sub), "spearman": rho,
           "spearman_change": rho["bfloat16"] - rho["float32"]}
    print(json.dumps(out, default=float))
    return out


if __name__ == "__main__":
    main()
