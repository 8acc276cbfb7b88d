"""bfloat16 against float32 on this CPU for one model (not a test): speed of a method's forward, interleaved in one
run, and the change in STS-B dev Spearman.

    python scripts/bench_dtype.py [--model default] [--method prompteol] [--n 256] [--repeats 3] [--limit 200]

Speed: the first N unique STS-B dev sentences, `encode` without the cache at batch 16, float32 and bfloat16
timed in turn in each round; medians of the rounds. Quality: Spearman on the first `--limit` dev pairs in each
dtype (the model weights are converted from the same float32 copy).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="default")
    ap.add_argument("--method", default="prompteol")
    ap.add_argument("--n", type=int, default=256, help="sentences timed (default 256)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=int, default=200, help="STS-B dev pairs for the Spearman (0 = all)")
    args = ap.parse_args(argv)

    import torch

    from analysis import get_method, load_backbone
    from analysis.data import read_sts, shared_stsb
    from analysis.sts import sts_spearman

    path = shared_stsb("dev")
    if path is None:
        raise SystemExit("STS-B dev not found (../shared/data/stsbenchmark)")
    pairs = read_sts(path)
    sents = list(dict.fromkeys(pairs.unique_texts()))[: args.n]
    models = {d: load_backbone(args.model, dtype=d) for d in ("float32", "bfloat16")}
    m = get_method(args.method)
    times = {d: [] for d in models}
    for _ in range(args.repeats):
        for d, bb in models.items():
            start = time.perf_counter()
            m.encode(bb, sents, batch_size=16)
            times[d].append(time.perf_counter() - start)
    sub = pairs if not args.limit else pairs.head(args.limit)
    rho = {d: sts_spearman(bb, m, sub) for d, bb in models.items()}
    med = {d: statistics.median(t) for d, t in times.items()}
    out = {"model": args.model, "method": args.method, "threads": torch.get_num_threads(), "sentences": len(sents),
           "seconds_median": med, "bf16_over_f32_time": med["bfloat16"] / med["float32"],
           "pairs": len(sub), "spearman": {d: r["spearman"] for d, r in rho.items()}}
    out["spearman_change"] = out["spearman"]["bfloat16"] - out["spearman"]["float32"]
    print(json.dumps(out, default=float))
    return out


if __name__ == "__main__":
    main()
