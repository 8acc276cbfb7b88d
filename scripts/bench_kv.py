"""Cost of KV-Embedding's re-routing against the prompt-only forward, on the same texts in the same run.

    python scripts/bench_kv.py [--texts 128] [--reps 5] [--layers auto] [--model default]

Three configurations share the prompt, batching and pooling; only the attention differs:
  vanilla      the model's own sdpa attention, no re-routing machinery at all
  prompt-only  kv_embedding with layers=none (the registered function delegates in every layer)
  re-routed    kv_embedding with the chosen layers (default: the ID-selected window)
Runs are interleaved and the best of `reps` is kept, so load from other processes hurts all three alike.
Prints one JSON line with seconds and ratios.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from analysis import load_backbone
from analysis.core.forward import run
from analysis.data.corpora import demo_texts, shared_stsb
from analysis.data.datasets import texts_of
from analysis.methods import get_method
from analysis.methods.kv_embedding import KVEmbedding


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=128, help="how many STS-B dev sentences (demo sentences offline)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--layers", default="auto")
    ap.add_argument("--model", default="default")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    args = ap.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)
    bb = load_backbone(args.model)
    if shared_stsb("dev") is not None:
        texts = texts_of("stsb-dev").texts[: args.texts]
    else:
        texts = (demo_texts("all").texts * 10)[: args.texts]

    class Vanilla(KVEmbedding):  # same prompt, batching and pooling; plain forward
        def forward(self, backbone, batch, layers, attention=False, trace=False):
            return run(backbone, batch, layers)

    rerouted = get_method("kv_embedding", layers=args.layers)
    configs = {
        "vanilla": Vanilla(layers="none"),
        "prompt-only": get_method("kv_embedding", layers="none"),
        "re-routed": rerouted,
    }
    layers = sorted(rerouted.decoder_layers(bb))  # resolves auto once, outside the timing
    best = {k: float("inf") for k in configs}
    cpu = {k: float("inf") for k in configs}  # process CPU time: less sensitive to other processes' load
    with torch.inference_mode():
        for m in configs.values():
            m.encode(bb, texts[:16])  # warm-up
        for _ in range(args.reps):
            for name, m in configs.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                m.encode(bb, texts)
                best[name] = min(best[name], time.perf_counter() - start)
                cpu[name] = min(cpu[name], time.process_time() - start_cpu)
    out = {
        "model": bb.facts.name,
        "texts": len(texts),
        "layers": layers,
        "seconds": {k: round(v, 4) for k, v in best.items()},
        "ratio_rerouted_vs_prompt_only": round(best["re-routed"] / best["prompt-only"], 4),
        "ratio_rerouted_vs_vanilla": round(best["re-routed"] / best["vanilla"], 4),
        "ratio_prompt_only_vs_vanilla": round(best["prompt-only"] / best["vanilla"], 4),
        "cpu_seconds": {k: round(v, 4) for k, v in cpu.items()},
        "cpu_ratio_rerouted_vs_prompt_only": round(cpu["re-routed"] / cpu["prompt-only"], 4),
        "cpu_ratio_rerouted_vs_vanilla": round(cpu["re-routed"] / cpu["vanilla"], 4),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
