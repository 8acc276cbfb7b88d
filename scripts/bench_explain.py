"""Time one pair explanation (issue 50's budget: two ~30-token sentences on SmolLM2 within 15 s on two cores at the
default settings, instant when cached), and what its parts cost.

    python scripts/bench_explain.py [--model default] [--method prompteol] [--steps 16] [--rounds 2] [--json FILE]
    python -m analysis measure explain_budget   # the same, as the record BUDGETS.md renders

Prints one JSON line (and writes it to --json FILE): the wall time of each round of `explain_pair` (the minimum is
the least disturbed), the time of plain forward passes of the same two prompts, once per path node (`encode`, no
gradients: the load's yardstick, a ratio that depends less on the machine's speed and load than the seconds do), the
deletion/insertion curves and the logit lens of both texts timed once, the path nodes used, the completeness gap,
the time of a second call through the cache (a fresh temporary store: the first call computes, the second reads), the
tokens of each text with the method's prompt, torch's threads, the process's CPU seconds per round (on a busy
machine the wall time also holds other processes' turns; CPU time does not, though spinning threads count), and the
load average before and after (`uptime`'s one-minute figure), so a time can be read against what else ran.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import torch

from analysis import load_backbone
from analysis.inspect import attribution, explain, logit_lens
from analysis.inspect.explain_settings import DIRECTIONS, STEPS, Settings
from analysis.inspect.faithfulness import pair_curves
from analysis.methods import get_method
from cache.cached import Cached
from cache.store import Store

# Two sentences of about 30 tokens each on SmolLM2's tokenizer (29 each), written for this benchmark.
A = ("A young man in a bright red jacket is riding his old bicycle down a busy city street at noon while talking "
     "loudly on his new smart phone.")
B = ("On a crowded street in the middle of the city, a man wearing a red winter coat rides a bike and chats happily on "
     "a mobile phone.")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="default")
    ap.add_argument("--method", default="prompteol")
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--directions", type=int, default=DIRECTIONS)
    ap.add_argument("--rounds", type=int, default=2, help="explanations timed (the minimum is reported)")
    ap.add_argument("--json", help="also write the JSON line to this file")
    args = ap.parse_args(argv)

    load_before = os.getloadavg()[0]
    bb = load_backbone(args.model)
    m = get_method(args.method)
    tok = bb.tokenizer
    settings = dict(steps=args.steps, directions=args.directions)
    rounds, cpu, ex = [], [], None
    for _ in range(args.rounds):
        began, used = time.perf_counter(), time.process_time()
        ex = attribution.explain_pair(bb, m, A, B, **settings)
        rounds.append(time.perf_counter() - began)
        cpu.append(time.process_time() - used)
    began = time.perf_counter()
    pair_curves(bb, m, ex)
    curves_seconds = time.perf_counter() - began
    began = time.perf_counter()
    for text in (A, B):
        logit_lens.decode(bb, m, text)
    lens_seconds = time.perf_counter() - began
    began = time.perf_counter()  # the load's yardstick: plain forward passes of the same prompts, as many as the nodes
    m.encode(bb, [A, B] * max(ex.nodes), batch_size=16)
    forward_seconds = time.perf_counter() - began
    with tempfile.TemporaryDirectory() as folder:
        compute = Cached(Store(folder))  # the door the view and the command use
        explain.explanation(compute, bb, m, A, B, Settings(**settings))
        began = time.perf_counter()
        _, hit = explain.explanation(compute, bb, m, A, B, Settings(**settings))
        cached = time.perf_counter() - began
    out = {"model": bb.identity, "method": m.name, **settings, "tokens": [len(tok(A)["input_ids"]),
                                                                           len(tok(B)["input_ids"])],
           "positions": [len(ex.a.tokens), len(ex.b.tokens)], "nodes": list(ex.nodes),
           "seconds": [round(s, 2) for s in rounds], "best_seconds": round(min(rounds), 2),
           "cpu_seconds": [round(s, 2) for s in cpu],
           "curves_seconds": round(curves_seconds, 2), "lens_seconds": round(lens_seconds, 2),
           "cached_seconds": round(cached, 4), "cache_hit": hit, "gap_relative": round(ex.gap["relative"], 4),
           "plain_forward_seconds": round(forward_seconds, 2),
           "explanation_per_plain_forward": round(min(rounds) / forward_seconds, 1),
           "torch_threads": torch.get_num_threads(), "load_before": round(load_before, 2),
           "load_after": round(os.getloadavg()[0], 2)}
    print(json.dumps(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out), encoding="utf-8")
    return out


if __name__ == "__main__":
    main()
