"""Cost of soft-token generation relative to one vanilla forward pass, and (optionally) test-time scaling on STS.

    python scripts/bench_soft_tokens.py                       # speed: K = 1, 5, 20 vs one forward
    python scripts/bench_soft_tokens.py --sts --limit 1500    # STS-B dev Spearman for K = 0, 1, 3, 5, 10, 20

Speed: the same ~30-token prompts (instruction + text), embedded by (a) one plain forward pass of the prompt
batch with a last-token readout, (b) the soft_tokens method with K soft tokens (prompt pass with the KV cache,
then K one-position steps, each with one lm_head product and one vocabulary mix). Repetitions are interleaved
(round-robin) so that load from other processes hits every variant alike; the medians and their ratios to (a)
are printed as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import torch

from analysis import load_backbone
from analysis.corpora import demo_texts, shared_stsb
from analysis.datasets import stsb_pairs
from analysis.forward import run
from analysis.methods import get_method
from analysis.timing import interleaved_medians


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
            from analysis.tokens import collate

            batch = collate(items[i:i + batch_size], backbone.tokenizer.pad_token_id)
            h = run(backbone, batch, [L]).hidden[L]
            h[torch.arange(h.shape[0]), batch.last_index].numpy()


def speed(backbone, args) -> dict:
    base = get_method("soft_tokens", k=0)
    texts = prompts_near(backbone, base, args.texts, args.length)
    lengths = [len(e) for e in base.prepare(backbone, texts)]
    variants = {"vanilla": lambda bs: vanilla(backbone, base, texts, bs)}
    for k in args.ks:
        m = get_method("soft_tokens", k=k)
        variants[f"K={k}"] = (lambda m: lambda bs: m.encode(backbone, texts, batch_size=bs))(m)
    out = {"model": backbone.facts.name, "texts": len(texts), "prompt_tokens_mean": float(np.mean(lengths)),
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
    from analysis.soft_tokens import SCALING_KS, scaling_curve

    if shared_stsb("dev") is None:
        raise SystemExit("STS-B dev is not available")
    pairs = stsb_pairs("dev")
    if args.limit:
        pairs = pairs.head(args.limit)
    done = []
    curve = scaling_curve(backbone, pairs, SCALING_KS,
                          progress=lambda d, t: done.append(d) or print(f"\r{d}/{t}", end="", file=sys.stderr))
    print(file=sys.stderr)
    return {"model": backbone.facts.name, "pairs": len(pairs), "texts": len(pairs.unique_texts()),
            "ks": curve["ks"].tolist(), "spearman": [round(float(r), 4) for r in curve["spearman"]],
            "seconds": round(float(curve["seconds"][0]), 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--texts", type=int, default=64, help="prompts per measurement (default 64)")
    p.add_argument("--length", type=int, default=30, help="target prompt length in tokens (default 30)")
    p.add_argument("--ks", type=int, nargs="+", default=[1, 5, 20])
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 64])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own choice)")
    p.add_argument("--sts", action="store_true", help="measure test-time scaling on STS-B dev instead")
    p.add_argument("--limit", type=int, default=0, help="with --sts: first N pairs (0 = all 1500)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    backbone = load_backbone()
    print(json.dumps(sts(backbone, args) if args.sts else speed(backbone, args)))


if __name__ == "__main__":
    main()
