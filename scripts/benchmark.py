"""Speed of every registered method against the vanilla forward, measured in one run (not a test).

    python scripts/benchmark.py [--n 256] [--repeats 3] [--batch-size 16] [--methods last,echo] [--json]

Texts: the first N unique STS-B dev sentences when ../shared/data/stsbenchmark is present, else the demo and
Lee-corpus sentences, numbered copies added until there are N distinct texts (the output says which).

* vanilla: the plain forward of the bare decoder on the raw text (the model's own tokenizer padding, no
  template, no hooks, no cache), last-token readout; the same batching by length as the methods.
* every method of `list_methods()` (new methods appear automatically), `encode` without the cache.
* a method may name what it must be compared with in a class attribute `bench_reference`: a method name
  ("prompteol"), parameter overrides of itself ({"layers": "none"}), or both (("name", {...})). That
  configuration is timed too and the method's time is also given as a ratio to it.

Each round times vanilla and every configuration once, in turn; `--repeats` rounds are run and the median
per configuration is kept, so load from other processes on a shared machine hurts all of them alike.
Ratios are method time / vanilla time in the same run. Peak memory is the process's maximum resident
set size (getrusage), after the model loaded and over the whole run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys

import torch
from transformers.utils import logging as hf_logging

from analysis import UserError, load_backbone
from analysis.core.timing import interleaved_medians
from analysis.data.corpora import demo_texts, lee_documents, shared_stsb
from analysis.data.datasets import texts_of
from analysis.eval.cost import plain_forward
from analysis.methods import get_method, method_class, method_names


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="default", help="'default', a Hugging Face id in the local cache, or a folder")
    ap.add_argument("--n", type=int, default=256, help="number of texts (default 256)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds; medians are reported (default 3)")
    ap.add_argument("--batch-size", type=int, default=16, help="texts per forward pass (default 16)")
    ap.add_argument("--methods", default="all", help="comma-separated method names, or 'all' (default)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default 0 = torch's own choice)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = ap.parse_args(argv)

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    hf_logging.disable_progress_bar()
    try:
        names = method_names(args.methods)
        for n in names:
            method_class(n)
        bb = load_backbone(args.model)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    rss_loaded = _peak_rss_mib()
    texts, source = bench_texts(args.n)
    load_start = os.getloadavg()[0]

    # Configurations to time: label -> (encode callable). The vanilla pass comes first.
    configs = {"vanilla": lambda ts: plain_forward(bb, ts, args.batch_size)}
    rows, errors = [], {}
    for name in names:
        method = get_method(name)
        configs[name] = _encoder(bb, method, args.batch_size)
        ref = _reference(name, getattr(type(method), "bench_reference", None))
        ref_label = None
        if ref is not None:
            ref_name, overrides = ref
            ref_label = ref_name + ("[" + ",".join(f"{k}={v}" for k, v in overrides.items()) + "]" if overrides else "")
            if ref_label not in configs:
                configs[ref_label] = _encoder(bb, get_method(ref_name, **overrides), args.batch_size)
        rows.append((name, ref_label))

    with torch.inference_mode():
        for label, fn in list(configs.items()):  # warm-up: lazy initialisation, auto layer choices, ...
            try:
                fn(texts[:8])
            except Exception as err:  # one broken method must not hide the others' numbers
                errors[label] = f"{type(err).__name__}: {err}"
                del configs[label]
        times: dict[str, list[float]] = {}  # every round's seconds, for the JSON
        med = interleaved_medians({label: (lambda fn=fn: fn(texts)) for label, fn in configs.items()}, args.repeats,
                                  after_round=times.update)

    vanilla = med["vanilla"]
    result = {
        "model": bb.identity,
        "texts": {"n": len(texts), "source": source, "mean_tokens": _mean_tokens(bb, texts)},
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(),
        "load_average": [round(load_start, 2), round(os.getloadavg()[0], 2)],  # start, end (shared machine)
        "vanilla": {"seconds": round(vanilla, 3), "sentences_per_second": round(len(texts) / vanilla, 2),
                    "all_seconds": [round(t, 3) for t in times["vanilla"]]},
        "methods": [],
        "peak_rss_mib": {"after_load": rss_loaded, "run": _peak_rss_mib()},
    }
    for name, ref_label in rows:
        row = {"method": name}
        if name in errors:
            row["error"] = errors[name]
        else:
            row.update(seconds=round(med[name], 3), ratio_to_vanilla=round(med[name] / vanilla, 3),
                       sentences_per_second=round(len(texts) / med[name], 2),
                       all_seconds=[round(t, 3) for t in times[name]])
        if ref_label is not None:
            row["reference"] = ref_label
            if ref_label in med and name in med:
                row["reference_seconds"] = round(med[ref_label], 3)
                row["ratio_to_reference"] = round(med[name] / med[ref_label], 3)
            elif ref_label in errors:
                row["reference_error"] = errors[ref_label]
        result["methods"].append(row)

    print(json.dumps(result) if args.json else format_table(result))
    return result


def _reference(name: str, ref) -> tuple[str, dict] | None:
    """`bench_reference` as (method name, parameter overrides)."""
    if ref is None:
        return None
    if isinstance(ref, str):
        return ref, {}
    if isinstance(ref, dict):
        return name, dict(ref)
    ref_name, overrides = ref
    return ref_name, dict(overrides)


def _encoder(bb, method, batch_size):
    return lambda texts: method.encode(bb, texts, batch_size=batch_size)


def bench_texts(n: int) -> tuple[list[str], str]:
    if shared_stsb("dev") is not None:
        sentences = texts_of("stsb-dev").texts
        if len(sentences) >= n:
            return sentences[:n], f"first {n} unique STS-B dev sentences"
    pool = list(demo_texts("all").texts)
    for doc in lee_documents().texts:
        pool += [s.strip() for s in re.split(r"(?<=[.!?])\s+", doc) if len(s.split()) >= 4]
    pool = list(dict.fromkeys(pool))
    texts = [pool[i % len(pool)] + ("" if i < len(pool) else f" ({i // len(pool) + 1})") for i in range(n)]
    return texts, f"{min(n, len(pool))} demo and Lee-corpus sentences" + \
        (f", numbered copies up to {n}" if n > len(pool) else "") + " (STS-B dev not found)"


def _mean_tokens(bb, texts) -> float:
    return round(sum(len(ids) for ids in bb.tokenizer(texts)["input_ids"]) / len(texts), 1)


def _peak_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # Linux reports KiB


def format_table(r: dict) -> str:
    v = r["vanilla"]
    lines = [
        f"model: {r['model']}",
        f"texts: {r['texts']['n']} ({r['texts']['source']}; {r['texts']['mean_tokens']} tokens on average), "
        f"batch size {r['batch_size']}, {r['repeats']} interleaved rounds (medians), {r['torch_threads']} torch "
        f"threads, load average {r['load_average'][0]} -> {r['load_average'][1]}",
        f"vanilla forward: {v['seconds']:.2f} s = {v['sentences_per_second']:.1f} sentences/s",
        "",
        f"{'method':<18}{'seconds':>9}{'sent/s':>9}{'x vanilla':>11}   {'reference':<26}{'x reference':>11}",
    ]
    for m in r["methods"]:
        if "error" in m:
            lines.append(f"{m['method']:<18}failed: {m['error']}")
            continue
        ref = m.get("reference", "")
        ratio_ref = f"{m['ratio_to_reference']:.2f}" if "ratio_to_reference" in m else \
            ("failed" if "reference_error" in m else "")
        lines.append(f"{m['method']:<18}{m['seconds']:>9.2f}{m['sentences_per_second']:>9.1f}"
                     f"{m['ratio_to_vanilla']:>11.2f}   {ref:<26}{ratio_ref:>11}")
    p = r["peak_rss_mib"]
    lines += ["", f"peak memory (max RSS): {p['after_load']:.0f} MiB after loading the model, "
                  f"{p['run']:.0f} MiB over the run"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
