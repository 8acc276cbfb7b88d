"""Peak memory of retrieval over a BEIR folder past the budgets (issue 52): streamed from disk against read whole.

A measurement, not a test (its cache is a temporary folder, removed at the end; `python -m analysis measure
corpus_stream` runs it and writes the record docs/BUDGETS.md shows):

    python scripts/bench_corpus_stream.py                                   # 100,000 documents, tiny model, streamed
    python scripts/bench_corpus_stream.py --modes streamed,whole            # ... and read whole, for the contrast
    python scripts/bench_corpus_stream.py --model default --documents 2000 --chars 400   # the real model on a subset
    python scripts/bench_corpus_stream.py --documents 300 --chars 200       # seconds: the script works

* The folder: `--documents` generated documents of about `--chars` characters each (words drawn at random, seed 0),
  20 queries each judged on 3 documents; written line by line, never held whole. `--folder` takes a BEIR folder
  instead (its test split).
* Each mode runs in a process of its own: load the model, reset the peak resident set (Linux's VmHWM), then score
  the folder as `bench --data beir:FOLDER --no-budgets` does (`cache.compute.bench_cell` through a fresh store:
  every document's vector kept in shards, one benchmark cell), `streamed` with the corpus read from disk in batches
  (`analysis.data.corpus_stream`), `whole` with it read into memory as before. The peak, the peak above the loaded
  model, the vectors' own size (documents x width x 4 bytes), seconds and nDCG@10 are reported.
* One JSON object on stdout: the machine, its load before and after, the folder, one entry per mode.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analysis.core import budgets
from analysis.data.files import load_beir
from analysis.eval.tasks import Task
from analysis.methods import get_method
from analysis.models.backbone import load_backbone
from analysis.models.tiny import tiny_backbone
from cache import Store
from cache.compute import bench_cell

WORDS = ["the", "bank", "raised", "its", "rates", "while", "a", "quick", "brown", "fox", "jumps", "over", "lazy",
         "dog", "near", "river", "and", "every", "method", "embeds", "documents", "from", "decoder", "language", "models"]
QUERIES = 20


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--documents", type=int, default=100_000, help="generated documents (default 100,000)")
    ap.add_argument("--chars", type=int, default=1000, help="characters per generated document (default 1,000)")
    ap.add_argument("--folder", default=None, help="a BEIR folder to use instead of a generated one")
    ap.add_argument("--model", default="tiny", help="'tiny' (a random tiny Llama, default), 'default' or a model")
    ap.add_argument("--method", default="mean", help="the embedding method (default mean)")
    ap.add_argument("--modes", default="streamed", help="comma-separated: streamed, whole (default streamed)")
    ap.add_argument("--batch-size", type=int, default=64, help="documents per forward pass (default 64)")
    ap.add_argument("--json", default="", help="also write the JSON object to this file (`measure corpus_stream`)")
    ap.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)  # MODE FOLDER: one measurement
    args = ap.parse_args(argv)
    if args.child:
        out = child(args, *args.child)
        print(json.dumps(out))
        return out
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - {"streamed", "whole"}:
        ap.error(f"--modes takes streamed and/or whole, not {args.modes!r}")
    with tempfile.TemporaryDirectory(prefix="corpus-stream-") as tmp:
        folder = Path(args.folder) if args.folder else generate(Path(tmp) / "generated", args.documents, args.chars)
        record = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": " ".join(sys.argv),
                  "machine": {"cores": os.cpu_count(), "platform": platform.platform()},
                  "load_before": os.getloadavg(), "folder": str(folder) if args.folder else "generated",
                  "corpus_bytes": (folder / "corpus.jsonl").stat().st_size, "model": args.model,
                  "method": args.method, "modes": {m: run_child(args, m, folder) for m in modes},
                  "load_after": os.getloadavg()}
    print(json.dumps(record, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1), encoding="utf-8")
    return record


def generate(root: Path, n: int, chars: int) -> Path:
    """A BEIR folder of `n` documents of about `chars` characters, written a line at a time."""
    rng = random.Random(0)
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            words = []
            while sum(len(w) + 1 for w in words) < chars:
                words.append(rng.choice(WORDS))
            fh.write(json.dumps({"_id": f"d{i}", "title": f"document {i}", "text": " ".join(words)}) + "\n")
    step = max(n // QUERIES, 1)
    judged = [(q, [(q * step + k) % n for k in range(3)]) for q in range(QUERIES)]
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{q}", "text": f"document {docs[0]} bank"}) +
                                                "\n" for q, docs in judged))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"q{q}\td{d}\t1\n" for q, docs in judged for d in docs))
    return root


def run_child(args, mode: str, folder: Path) -> dict:
    argv = [sys.executable, os.path.abspath(__file__), "--model", args.model, "--method", args.method,
            "--batch-size", str(args.batch_size), "--child", mode, str(folder)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parent.parent)
    if done.returncode != 0:
        sys.exit(f"the {mode} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _status(field: str) -> float:
    """A /proc/self/status field in MiB (VmRSS now, VmHWM the peak since the last reset)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(args, mode: str, folder: str) -> dict:
    """In a process of its own: the model loaded and warmed, the peak reset, the folder scored in `mode`."""
    # the tiny model reads 16 tokens of each document: the memory of texts and vectors at a scale of 100,000
    # documents in minutes (the real model on a subset measures the forward passes)
    backbone = tiny_backbone("llama", n_layers=1, max_length=16) if args.model == "tiny" else load_backbone(args.model)
    method = get_method(args.method)
    method.encode(backbone, ["a short warm-up"])  # lazy loading outside the peak
    model = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:  # Linux: VmHWM starts again from the current RSS
        fh.write("5")
    began = time.perf_counter()
    with budgets.lifted(), tempfile.TemporaryDirectory(prefix="corpus-stream-cache-") as cache:
        data = load_beir(folder, stream=mode == "streamed")
        task = Task(f"BEIR {Path(folder).name}", "retrieval", data)
        score, _, _ = bench_cell(Store(Path(cache)), backbone, method, task, n_boot=0,
                                    batch_size=args.batch_size)
    peak = _status("VmHWM")
    width = backbone.facts.hidden_size
    return {"documents": len(data.corpus), "queries": len(data.queries), "peak_rss_mib": round(peak, 1),
            "model_rss_mib": round(model, 1), "above_model_mib": round(peak - model, 1),
            "vectors_mib": round(len(data.corpus) * width * 4 / 2**20, 1),
            "seconds": round(time.perf_counter() - began, 2), "nDCG@10": round(score.value, 6)}


if __name__ == "__main__":
    main()
