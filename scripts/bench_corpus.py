"""Corpus-scale encoding: throughput of every method against a plain forward, and peak memory on long documents.

A pure timing benchmark (not a test; it writes no record and no cache entry):

    python scripts/bench_corpus.py [--model default] [--docs 64] [--tokens 512] [--rounds 3] [--methods all]
                                   [--batch-size 16] [--max-tokens 8192] [--memory-tokens 4096] [--memory-docs 4]
    python scripts/bench_corpus.py --quick       # about a minute: last and mean, one round, mean on 4,096 tokens

* Documents: news text of the Lee corpus (bundled with gensim), joined and cut to lengths spread evenly from a
  quarter of --tokens up to --tokens (seeded, shuffled), so batching by length has work to do.
* Throughput: each method's `encode` (no cache) and a plain transformers forward (the bare decoder on the raw
  texts, no template, no hooks) over the same batches (`batches_by_length` with the same count and token budget),
  timed in interleaved rounds (`analysis.core.timing.interleaved_medians`: medians, each configuration first in a
  round at most once every few rounds). Tokens/s counts the documents' own tokens, so a method that adds a prompt
  or a second copy of the text pays for it; the ratio is the method's tokens/s over the plain forward's, measured
  in the same run (issue 34 asks at least 0.9x for `mean` and `last`).
* Peak memory: each method, and the plain forward, encodes --memory-docs documents of --memory-tokens tokens in a
  process of its own; the peak resident set (VmHWM) of that process while encoding, with the model (target: at
  most 2 GiB), and above the model alone.
* The machine's load average is printed before and after: numbers from a busy machine compare badly.
* The targets are checked at the end: `mean` and `last` at least 0.9x the plain forward's tokens/s, every peak at most
  2 GiB; each line says met or NOT met with the number.

`--quick` checks the same on the default model in about a minute (8 documents up to 256 tokens, one round, `last` and
`mean` only, the memory test of `mean` on one 4,096-token document): that the script works and the targets roughly
hold, not the numbers to publish (one short round on a busy machine is noisy: run the full one on a quiet machine).

`--model tiny` runs a random tiny Llama (mechanics only, seconds): `--model tiny --docs 6 --tokens 64 --rounds 1
--memory-tokens 100` checks that the script works.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time

import numpy as np
import torch
from transformers.utils import logging as hf_logging

from analysis import UserError, load_backbone
from analysis.core.timing import interleaved_medians
from analysis.core.tokens import TOKEN_BUDGET, batches_by_length
from analysis.data.corpora import lee_documents
from analysis.methods import get_method, method_class, method_names
from analysis.models.tiny import tiny_backbone


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="default", help="'default', another built-in or local model, or 'tiny'")
    ap.add_argument("--docs", type=int, default=64, help="documents in the throughput corpus (default 64)")
    ap.add_argument("--tokens", type=int, default=512, help="the longest throughput document, in tokens (default 512)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are reported (default 3)")
    ap.add_argument("--methods", default="all", help="comma-separated method names, or 'all' (default)")
    ap.add_argument("--batch-size", type=int, default=16, help="documents per forward pass at most (default 16)")
    ap.add_argument("--max-tokens", type=int, default=None, help="padded tokens per forward pass at most (default: "
                    "the library's TOKEN_BUDGET)")
    ap.add_argument("--memory-tokens", type=int, default=4096, help="length of the memory test's documents "
                    "(default 4096; 0 skips the memory test)")
    ap.add_argument("--memory-docs", type=int, default=4, help="documents in the memory test (default 4)")
    ap.add_argument("--memory-methods", default="", help="comma-separated configurations of the memory test (default: "
                    "the plain forward and every method of --methods)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default 0 = torch's own choice)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--quick", action="store_true", help="about a minute: 8 documents up to 256 tokens, one round, "
                    "last and mean against the plain forward, the memory test of mean on one 4,096-token document")
    ap.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)  # one memory measurement, in a child
    args = ap.parse_args(argv)
    if args.quick:
        args.docs, args.tokens, args.rounds, args.methods, args.memory_docs = 8, 256, 1, "last,mean", 1
        args.memory_methods = "mean"

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    hf_logging.disable_progress_bar()
    if args.max_tokens is None:
        args.max_tokens = TOKEN_BUDGET
    if args.memory_child is not None:
        print(json.dumps(memory_child(args)))
        return {}

    load_before = os.getloadavg()
    try:
        names = method_names(args.methods)
        for n in names:
            method_class(n)
        bb = backbone(args.model)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    texts = documents(bb, args.docs, args.tokens)
    tokens = sum(token_counts(bb, texts))
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; "
          f"{len(texts)} documents, {tokens:,} tokens", file=sys.stderr, flush=True)

    configs, errors = {"plain forward": lambda ts: plain_forward(bb, ts, args.batch_size, args.max_tokens)}, {}
    for name in names:
        try:
            method = get_method(name)
        except UserError as err:
            errors[name] = str(err)
            continue
        configs[name] = lambda ts, m=method: m.encode(bb, ts, batch_size=args.batch_size, max_tokens=args.max_tokens)
    with torch.inference_mode():
        for label, fn in list(configs.items()):  # warm-up: lazy loading (encoders, adapters, the auto window)
            try:
                fn(texts[:2])
            except Exception as err:  # one broken method must not hide the others' numbers
                errors[label] = f"{type(err).__name__}: {err}"
                del configs[label]

        def told(times):
            print(f"round {len(next(iter(times.values())))}/{args.rounds} done", file=sys.stderr, flush=True)

        med = interleaved_medians({label: (lambda fn=fn: fn(texts)) for label, fn in configs.items()}, args.rounds,
                                  after_round=told)
    plain = tokens / med["plain forward"]
    rows = [{"method": label, "seconds": round(s, 3), "tokens_per_second": round(tokens / s, 1),
             "ratio_to_plain": round(tokens / s / plain, 3)} for label, s in med.items()]
    rows += [{"method": name, "error": err} for name, err in errors.items()]
    memory = {}
    if args.memory_tokens > 0:
        wanted = [m.strip() for m in args.memory_methods.split(",") if m.strip()] or \
            ["plain forward", *[n for n in names if n not in errors]]
        for label in wanted:
            print(f"memory: {label} on {args.memory_docs} documents of {args.memory_tokens} tokens",
                  file=sys.stderr, flush=True)
            memory[label] = run_child(args, label)
    load_after = os.getloadavg()
    result = {"model": bb.identity, "documents": len(texts), "tokens": tokens, "longest": args.tokens,
              "batch_size": args.batch_size, "max_tokens": args.max_tokens, "rounds": args.rounds,
              "torch_threads": torch.get_num_threads(), "load_average": {"before": load_before, "after": load_after},
              "throughput": rows, "memory": memory, "memory_documents": [args.memory_docs, args.memory_tokens]}
    result["targets"] = targets(result)
    print(json.dumps(result) if args.json else table(result))
    return result


def backbone(name: str):
    if name == "tiny":
        return tiny_backbone("llama", max_length=8192)
    return load_backbone(name)


def token_counts(bb, texts: list[str]) -> list[int]:
    return [len(ids) for ids in bb.tokenizer(texts)["input_ids"]]


def documents(bb, n: int, longest: int, seed: int = 0) -> list[str]:
    """`n` distinct documents of news text, from longest/4 to `longest` tokens (the model's tokenizer), shuffled."""
    rng = random.Random(seed)
    news = list(lee_documents().texts)
    out = []
    for i in range(n):
        want = round(longest / 4 + (longest - longest / 4) * i / max(n - 1, 1))
        rng.shuffle(news)
        text = f"Document {i}. " + " ".join(news)
        while len(bb.tokenizer(text)["input_ids"]) < want:  # the whole corpus is about 10k tokens
            text += " " + " ".join(news)
        offsets = bb.tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)["offset_mapping"]
        out.append(text[: offsets[min(want, len(offsets)) - 1][1]])
    rng.shuffle(out)
    return out


def plain_forward(bb, texts: list[str], batch_size: int, max_tokens: int):
    """The bare decoder on the raw texts (the tokenizer's padding, no template, no hooks, no cache), final state of
    each last real token, over the batches the methods run (`batches_by_length`, same count and budget)."""
    tok = bb.tokenizer
    out = np.zeros((len(texts), bb.facts.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for idx in batches_by_length(token_counts(bb, texts), batch_size, max_tokens):
            enc = tok([texts[i] for i in idx], return_tensors="pt", padding=True)
            hidden = bb.decoder(**enc, use_cache=False).last_hidden_state  # (B, T, d)
            last = enc["attention_mask"].sum(dim=1) - 1  # (B,): right padding
            out[idx] = hidden[torch.arange(len(idx)), last].numpy()
    return out


def _status(field: str) -> float:
    """A /proc/self/status field in MiB (VmRSS now, VmHWM the peak since the last reset)."""
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def memory_child(args) -> dict:
    """In a process of its own: load the model, reset the peak, encode the long documents, report the peak."""
    bb = backbone(args.model)
    texts = documents(bb, args.memory_docs, args.memory_tokens, seed=1)
    if args.memory_child == "plain forward":
        run = lambda: plain_forward(bb, texts, args.batch_size, args.max_tokens)  # noqa: E731
    else:
        method = get_method(args.memory_child)
        method.encode(bb, ["a short warm-up"])  # lazy loading (encoder, adapter, auto window) outside the peak
        run = lambda: method.encode(bb, texts, batch_size=args.batch_size, max_tokens=args.max_tokens)  # noqa: E731
    model = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:  # Linux: VmHWM starts again from the current RSS
        fh.write("5")
    began = time.perf_counter()
    run()
    peak = _status("VmHWM")
    return {"peak_mib": round(peak, 1), "above_model_mib": round(peak - model, 1),
            "seconds": round(time.perf_counter() - began, 2), "tokens": sum(token_counts(bb, texts))}


def run_child(args, label: str) -> dict:
    argv = [sys.executable, os.path.abspath(__file__), "--model", args.model, "--batch-size", str(args.batch_size),
            "--max-tokens", str(args.max_tokens), "--memory-tokens", str(args.memory_tokens), "--memory-docs",
            str(args.memory_docs), "--threads", str(args.threads), "--memory-child", label]
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


RATIO_TARGET = 0.9  # `mean` and `last` at least this share of the plain forward's tokens/s (issue 34)
MEMORY_TARGET_MIB = 2048  # peak resident memory on the long documents, the model included


def targets(r: dict) -> list[str]:
    """One line per target: met or NOT met, with the number."""
    out = []
    for row in r["throughput"]:
        if row["method"] in ("mean", "last") and "ratio_to_plain" in row:
            ok = row["ratio_to_plain"] >= RATIO_TARGET
            out.append(f"{row['method']}: {row['ratio_to_plain']:.2f}x the plain forward (at least {RATIO_TARGET}): "
                       f"{'met' if ok else 'NOT met'}")
    measured = {k: m for k, m in r["memory"].items() if "peak_mib" in m}
    if measured:
        worst = max(measured, key=lambda k: measured[k]["peak_mib"])
        ok = measured[worst]["peak_mib"] <= MEMORY_TARGET_MIB
        out.append(f"memory: the highest peak is {worst}'s {measured[worst]['peak_mib']:,.0f} MiB (at most "
                   f"{MEMORY_TARGET_MIB:,}): {'met' if ok else 'NOT met'}")
    return out


def table(r: dict) -> str:
    before, after = r["load_average"]["before"], r["load_average"]["after"]
    lines = [f"model: {r['model']}",
             f"{r['documents']} documents, {r['tokens']:,} tokens (up to {r['longest']} each), at most "
             f"{r['batch_size']} documents and {r['max_tokens']:,} padded tokens per pass, {r['rounds']} interleaved "
             f"rounds (medians), {r['torch_threads']} torch threads",
             f"load average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, after {after[0]:.2f} "
             f"{after[1]:.2f} {after[2]:.2f}",
             "",
             f"{'method':<20}{'seconds':>10}{'tokens/s':>11}{'x plain':>9}"]
    for row in r["throughput"]:
        if "error" in row:
            lines.append(f"{row['method']:<20}failed: {row['error']}")
        else:
            lines.append(f"{row['method']:<20}{row['seconds']:>10.2f}{row['tokens_per_second']:>11,.0f}"
                         f"{row['ratio_to_plain']:>9.2f}")
    if r["memory"]:
        docs, tokens = r["memory_documents"]
        lines += ["", f"peak memory encoding {docs} documents of {tokens:,} tokens (a process each; target at most "
                  "2,048 MiB)", f"{'method':<20}{'peak MiB':>10}{'above model':>13}{'seconds':>10}"]
        for label, m in r["memory"].items():
            lines.append(f"{label:<20}failed: {m['error']}" if "error" in m else
                         f"{label:<20}{m['peak_mib']:>10,.0f}{m['above_model_mib']:>13,.0f}{m['seconds']:>10.1f}"
                         + ("  over 2 GiB" if m["peak_mib"] > MEMORY_TARGET_MIB else ""))
    return "\n".join(lines + ["", "targets:", *(f"  {t}" for t in r["targets"])])


if __name__ == "__main__":
    main()
