"""Cost of soft-token generation relative to one vanilla forward pass, and (optionally) test-time scaling on STS.

    python scripts/bench_soft_tokens.py                       # speed: K = 1, 5, 20 vs one forward (shipped adapter)
    python scripts/bench_soft_tokens.py --adapter none        # the same for the frozen model
    python scripts/bench_soft_tokens.py --sts --limit 1500 --adapter shipped none   # STS-B dev Spearman with 95%
                                                              # bootstrap intervals, K = 0, 1, 3, 5, 10, 20

Speed: the same ~30-token prompts (instruction + text), embedded by (a) one plain forward pass of the prompt
batch with a last-token readout, (b) the soft_tokens method with K soft tokens (prompt pass with the KV cache,
then K one-position steps, each with one lm_head product and one vocabulary mix). Repetitions are interleaved
(round-robin) so that load from other processes hits every variant alike; the medians and their ratios to (a)
are printed as one JSON line. A trained adapter is merged into a copy of the model once (before timing), so the
generation runs on an ordinary decoder: the same cost as the frozen model.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import torch

from analysis import load_backbone
from analysis.core.forward import run
from analysis.core.timing import interleaved_medians
from analysis.core.tokens import collate
from analysis.data.corpora import demo_texts, shared_stsb
from analysis.data.datasets import stsb_pairs
from analysis.inspect.generation import SCALING_KS, scaling_curve
from analysis.methods import get_method


def prompts_near(backbone, method, n: int, length: int) -> list[str]:
    """n texts whose instruction-wrapped prompt is within ±4 tokens of `length` (STS-B dev, else demo)."""
    pool = stsb_pairs("dev").unique_texts() if shared_stsb("dev") else demo_texts("all").texts
    fits = [t for t in pool if abs(len(method.prepare(backbone, [t])[0]) - length) <= 4]
    if len(fits) < n:
        raise SystemExit(f"only {len(fits)} texts of about {length} prompt tokens available")
    return fits[:n]


def vanilla(backbone, method, texts, batch_size):
    """One forward pass per batch over the same prompts (no generation, no cache), last-token readout."""
    items = method.prepare(backbone, texts)
    L = backbone.facts.n_layers
    with torch.inference_mode():
        for i in range(0, len(items), batch_size):
            batch = collate(items[i:i + batch_size], backbone.tokenizer.pad_token_id)
            h = run(backbone, batch, [L]).hidden[L]
            h[torch.arange(h.shape[0]), batch.last_index].numpy()


def speed(backbone, args) -> dict:
    base = get_method("soft_tokens", k=0)
    texts = prompts_near(backbone, base, args.texts, args.length)
    lengths = [len(e) for e in base.prepare(backbone, texts)]
    variants = {"vanilla": lambda bs: vanilla(backbone, base, texts, bs)}
    for k in args.ks:
        m = get_method("soft_tokens", k=k, adapter=args.adapter[0])
        m.adapted(backbone)  # merge once, outside the timed calls
        variants[f"K={k}"] = (lambda m: lambda bs: m.encode(backbone, texts, batch_size=bs))(m)
    out = {"model": backbone.facts.name, "adapter": get_method("soft_tokens", adapter=args.adapter[0]).params.adapter,
           "texts": len(texts), "prompt_tokens_mean": float(np.mean(lengths)),
           "threads": torch.get_num_threads(), "repeats": args.repeats, "batch_sizes": {}}
    for bs in args.batch_sizes:
        for fn in variants.values():  # warm-up
            fn(bs)
        med = interleaved_medians(
            {name: (lambda fn=fn: fn(bs)) for name, fn in variants.items()}, args.repeats,
            lambda times: print(f"batch {bs}: {({k: round(v[-1], 2) for k, v in times.items()})}", file=sys.stderr,
                                flush=True))
        out["batch_sizes"][str(bs)] = {
            "median_seconds": {k: round(v, 4) for k, v in med.items()},
            "ratio_to_vanilla": {k: round(v / med["vanilla"], 3) for k, v in med.items() if k != "vanilla"},
        }
    return out


def sts(backbone, args) -> dict:
    if shared_stsb("dev") is None:
        raise SystemExit("STS-B dev is not available")
    pairs = stsb_pairs("dev")
    if args.offset or args.limit:  # e.g. --offset 100: pairs the GIRCSE trainer did not select checkpoints on
        end = args.offset + args.limit if args.limit else len(pairs)
        pairs = type(pairs)(f"STS-B dev {args.offset}..{end - 1}", pairs.left[args.offset:end],
                            pairs.right[args.offset:end], pairs.scores[args.offset:end])
    out = {"model": backbone.facts.name, "data": pairs.name, "pairs": len(pairs), "texts": len(pairs.unique_texts()),
           "curves": {}}
    for adapter in args.adapter:
        curve = scaling_curve(backbone, pairs, SCALING_KS, adapter=adapter,
                              progress=lambda d, t: print(f"\r{adapter}: {d}/{t}", end="", file=sys.stderr))
        print(file=sys.stderr)
        out["curves"][adapter] = {"ks": curve["ks"].tolist(),
                                  "spearman": [round(float(r), 4) for r in curve["spearman"]],
                                  "ci": [[round(float(a), 4), round(float(b), 4)] for a, b in curve["ci"]],
                                  "seconds": round(float(curve["seconds"][0]), 1)}
        print(json.dumps({adapter: out["curves"][adapter]}), file=sys.stderr, flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--texts", type=int, default=64, help="prompts per measurement (default 64)")
    p.add_argument("--length", type=int, default=30, help="target prompt length in tokens (default 30)")
    p.add_argument("--ks", type=int, nargs="+", default=[1, 5, 20])
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 64])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own choice)")
    p.add_argument("--sts", action="store_true", help="measure test-time scaling on STS-B dev instead")
    p.add_argument("--adapter", nargs="+", default=["shipped"],
                   help="soft_tokens adapter(s): shipped, none or a folder (speed: the first; --sts: each)")
    p.add_argument("--limit", type=int, default=0, help="with --sts: N pairs (0 = all 1500)")
    p.add_argument("--offset", type=int, default=0, help="with --sts: skip the first N pairs (default 0)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    backbone = load_backbone()
    print(json.dumps(sts(backbone, args) if args.sts else speed(backbone, args)))


if __name__ == "__main__":
    main()
