"""Causal2Vec on STS-B dev: every readout of the shipped and the untrained bridge, the direct-concatenation
control, the encoder alone and the decoder baselines, each with a bootstrap 95% interval (analysis.eval.metrics.sts,
the bench machinery), and the inference cost of Causal2Vec as a ratio to the vanilla forward in the same run.

    python scripts/causal2vec_results.py [--limit N] [--baselines prompteol,last] [--speed-n 256] [--json]

The four readouts of one bridge come from ONE forward pass (they differ only in which states are read), so the
table costs one pass per bridge, one for the control and one per baseline. Speed: `--speed-n` STS-B dev
sentences, batch 16, medians of `--repeats` interleaved rounds of vanilla (raw text, last token, the same
function as scripts/benchmark.py), sentence encoder alone, and Causal2Vec (shipped, concat) end to end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def readouts_one_pass(bb, method, texts, batch_size=32):
    """{readout: (n, D)} for concat/eos/contextual/mean from one forward pass per batch."""
    import numpy as np
    import torch

    from analysis.methods.causal2vec import readout_at
    from analysis.core.tokens import batches_by_length

    runner = method.load(bb)[1]
    L = bb.facts.n_layers
    items = method.prepare(runner, texts)
    out = {}
    with torch.inference_mode(), runner.lock:
        for idx in batches_by_length([len(e) for e in items], batch_size):
            batch = method.collate(runner, [items[i] for i in idx], "right")
            hidden = method.forward(runner, batch, [L]).hidden[L]
            for r in ("concat", "eos", "contextual", "mean"):
                z = readout_at(hidden, batch, r).float().numpy()
                out.setdefault(r, np.zeros((len(texts), z.shape[1]), dtype=np.float32))[idx] = z
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None, help="first N STS-B dev pairs (default all 1,500)")
    ap.add_argument("--baselines", default="prompteol,last", help="decoder methods scored alongside ('' = none)")
    ap.add_argument("--speed-n", type=int, default=256, help="sentences for the speed comparison (0 = skip)")
    ap.add_argument("--speed-long", type=int, default=0,
                    help="also time this many Lee corpus documents (~100-200 tokens): the fixed extra positions "
                         "and the encoder weigh less on longer texts (0 = skip)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from transformers.utils import logging as hf_logging

    from analysis import get_method, load_backbone
    from analysis.data.corpora import shared_stsb
    from analysis.data.files import read_sts
    from analysis.eval.metrics import pair_rows, sts

    hf_logging.disable_progress_bar()
    path = shared_stsb("dev")
    if path is None:
        sys.exit("error: STS-B dev is not in the shared data folder.")
    pairs = read_sts(path, limit=args.limit)
    texts, left, right = pair_rows(pairs)
    bb = load_backbone()
    rows, seconds = [], {}

    def score(label, emb):
        r = sts(emb[left], emb[right], pairs.scores, n_boot=args.n_boot)
        rows.append({"configuration": label, "spearman": round(r.spearman, 4),
                     "ci": [round(r.ci[0], 4), round(r.ci[1], 4)], "n": r.n})
        print(f"{label:45s} {r.spearman:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}]", file=sys.stderr, flush=True)

    for bridge in ("shipped", "untrained"):
        start = time.perf_counter()
        embs = readouts_one_pass(bb, get_method("causal2vec", bridge=bridge), texts)
        seconds[f"causal2vec[{bridge}] (4 readouts)"] = time.perf_counter() - start
        for r, emb in embs.items():
            score(f"causal2vec bridge={bridge} readout={r}", emb)
    for label, method in [("causal2vec readout=direct (control)", get_method("causal2vec", readout="direct")),
                          ("sentence_encoder (MiniLM alone)", get_method("sentence_encoder")),
                          *[(n, get_method(n)) for n in args.baselines.split(",") if n.strip()]]:
        start = time.perf_counter()
        emb = method.encode(bb, texts, batch_size=32)
        seconds[label] = time.perf_counter() - start
        score(label, emb)
    result = {"data": f"STS-B dev, {len(pairs)} pairs, {len(texts)} texts", "rows": rows,
              "seconds": {k: round(v, 1) for k, v in seconds.items()}}
    if args.speed_n:
        result["speed"] = speed(bb, texts[: args.speed_n], args.repeats)
    if args.speed_long:
        from analysis.data.corpora import lee_documents

        result["speed_long"] = speed(bb, lee_documents().texts[: args.speed_long], args.repeats)
    if args.json:
        print(json.dumps(result))
    else:
        print("| configuration | Spearman [95% CI] |\n|---|---|")
        for r in rows:
            print(f"| {r['configuration']} | {r['spearman']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] |")
        print(json.dumps({k: v for k, v in result.items() if k != "rows"}))


def speed(bb, texts, repeats):
    """Medians of interleaved rounds; ratios to the vanilla forward of the same round set."""
    import torch

    from analysis import get_method
    from benchmark import vanilla_forward  # scripts/benchmark.py, beside this script

    configs = {
        "vanilla": lambda: vanilla_forward(bb, texts, 16),
        "sentence_encoder": lambda: get_method("sentence_encoder").encode(bb, texts, batch_size=16),
        "causal2vec": lambda: get_method("causal2vec").encode(bb, texts, batch_size=16),
        "prompteol": lambda: get_method("prompteol").encode(bb, texts, batch_size=16),
    }
    times = {k: [] for k in configs}
    with torch.inference_mode():
        for f in configs.values():  # warm-up: loads, first-call allocations
            f()
        for _ in range(repeats):
            for k, f in configs.items():
                start = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"n": len(texts), "seconds": {k: round(v, 3) for k, v in med.items()},
            "x_vanilla": {k: round(v / med["vanilla"], 3) for k, v in med.items()},
            "load_average": __import__("os").getloadavg()[0]}


if __name__ == "__main__":
    main()
