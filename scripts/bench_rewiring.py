"""Speed of Token Prepending and HTP against the vanilla forward on the same texts, and of the sensitivity view.

    python scripts/bench_rewiring.py [--n 256] [--docs 40] [--repeats 3] [--model default]

Prints one JSON line. Every configuration is timed `repeats` times, interleaved with the others so that load from
other processes hits all of them alike; the minimum is reported (the least disturbed run). Ratios are against
the vanilla forward of the same prompt on the same texts in the same run:
* TP vs PromptEOL at the final layer (the full pass TP replaces) and at TP's own readout layer (the cost of the
  placeholder and the hooks alone);
* HTP vs mean pooling at the final layer and at HTP's readout layer, on STS-B sentences and on multi-sentence
  documents (Lee corpus), where HTP adds two positions per sentence;
* early exit: PromptEOL read at hidden state 8 vs the full pass;
* sensitivity: the 64-token sample text with 16 probes (both readouts), vanilla and HTP.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from analysis import load_backbone
from analysis.inspect import sensitivity
from analysis.data.corpora import demo_texts, lee_documents, shared_stsb
from analysis.data.datasets import stsb_pairs
from analysis.methods import get_method


def sentences(n: int) -> list[str]:
    if shared_stsb("dev") is None:
        return list(demo_texts().texts)[:n]
    return stsb_pairs("dev").unique_texts()[:n]


def timed(method, backbone, texts) -> float:
    start = time.perf_counter()
    method.encode(backbone, texts, batch_size=16)
    return time.perf_counter() - start


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256, help="STS-B dev sentences")
    ap.add_argument("--docs", type=int, default=40, help="Lee corpus documents")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model", default="default")
    args = ap.parse_args(argv)

    bb = load_backbone(args.model)
    sents, docs = sentences(args.n), list(lee_documents().texts)[: args.docs]
    tp, htp = get_method("token_prepending"), get_method("htp")
    configs = {
        "prompteol_full": (get_method("prompteol", layer=-1), sents),
        "prompteol_at_tp_layer": (get_method("prompteol", layer=tp.params.layer), sents),
        "prompteol_exit_8": (get_method("prompteol", layer=8), sents),
        "tp": (tp, sents),
        "mean_full": (get_method("mean", layer=-1), sents),
        "mean_at_htp_layer": (get_method("mean", layer=htp.params.layer), sents),
        "htp": (htp, sents),
        "mean_full_docs": (get_method("mean", layer=-1), docs),
        "mean_at_htp_layer_docs": (get_method("mean", layer=htp.params.layer), docs),
        "htp_docs": (htp, docs),
    }
    for m, texts in configs.values():  # warm up (placeholder statistics, allocator, pysbd)
        m.encode(bb, texts[:4])
    best = {k: float("inf") for k in configs}
    for _ in range(args.repeats):
        for name, (m, texts) in configs.items():
            best[name] = min(best[name], timed(m, bb, texts))
    sens = {}
    for name, m in (("vanilla", get_method("mean")), ("htp", htp)):
        times = []
        for _ in range(args.repeats):
            s = sensitivity.jacobian_norms(bb, m, sensitivity.SAMPLE_TEXT, layer=-1, probes=16)
            times.append(s.seconds)
        sens[name] = {"tokens": len(s.tokens), "probes": 16, "seconds_min": round(min(times), 2),
                      "seconds_max": round(max(times), 2)}
    r = lambda a, b: round(best[a] / best[b], 3)  # noqa: E731
    n_tokens = lambda m, texts: sum(len(e) for e in m.prepare(bb, texts))  # noqa: E731
    return {
        "model": bb.facts.name, "threads": torch.get_num_threads(), "repeats": args.repeats,
        "n_sentences": len(sents), "n_docs": len(docs),
        "seconds": {k: round(v, 3) for k, v in best.items()},
        "tp_over_prompteol_full": r("tp", "prompteol_full"),
        "tp_over_prompteol_same_layer": r("tp", "prompteol_at_tp_layer"),
        "htp_over_mean_full": r("htp", "mean_full"),
        "htp_over_mean_same_layer": r("htp", "mean_at_htp_layer"),
        "htp_over_mean_full_docs": r("htp_docs", "mean_full_docs"),
        "htp_over_mean_same_layer_docs": r("htp_docs", "mean_at_htp_layer_docs"),
        "early_exit_8_over_full": r("prompteol_exit_8", "prompteol_full"),
        "tokens": {"prompteol": n_tokens(configs["prompteol_full"][0], sents), "tp": n_tokens(tp, sents),
                   "mean": n_tokens(configs["mean_full"][0], sents), "htp": n_tokens(htp, sents),
                   "mean_docs": n_tokens(configs["mean_full"][0], docs), "htp_docs": n_tokens(htp, docs)},
        "sensitivity_64_tokens_16_probes": sens,
    }


if __name__ == "__main__":
    print(json.dumps(main()))
