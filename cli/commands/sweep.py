"""`python -m analysis sweep --data stsb-dev --sample 200 --starts 1-29:4 --widths 4 --biases 1,16`: the Layer
explorer's sweep of KV-Embedding's re-routing window (start x width x bias) at the cost floor, resumable
through the same cache entries as the page, locally or on a Ray cluster (`--executor ray [--address ...]`)."""

from __future__ import annotations

import math
import re
import sys
import time
from dataclasses import asdict

from analysis.core.errors import UserError
from analysis.data.datasets import pairs_of
from analysis.sweep import windows
from cache import auto_window, default_store
from cache.compute import sts_score
from cli.commands._common import add_sample_arguments, choose, load_model

HELP = ("Score KV-Embedding's re-routing windows (start x width x bias [x rerotate]) by Spearman on labelled pairs, "
        "next to the prompt-only forward, PromptEOL and the window the intrinsic-dimension rule picks (JSON). "
        "Per-cell progress on stderr; every cell is cached as it finishes, so a stopped sweep resumes.")

REROTATE = {"false": [False], "true": [True], "both": [False, True]}


def add_arguments(parser) -> None:
    parser.add_argument("--data", default="stsb-dev", help="a built-in pair set (stsb-dev, lee, ...) or an STS file")
    add_sample_arguments(parser, "pairs", default_sample=200)
    parser.add_argument("--starts", default=None, help="window starts (decoder layers): '1,5,9', '1-29' or '1-29:4' "
                        "(every 4th); default every 4th from 1")
    parser.add_argument("--widths", default=None, help="window widths in layers, e.g. '1-8' (default: the paper's "
                        "Eq. 4 as this project read it, floor(0.1 L) + 1; it read windows of 7-10 layers in the "
                        "paper's results; neither verified against the full text)")
    parser.add_argument("--biases", default="1", help="pre-softmax biases, e.g. '0,1,3' (default 1, the paper's as "
                        "this project read it, not verified)")
    parser.add_argument("--rerotate", default="false", help="re-rotate the re-routed key: false, true or both")
    parser.add_argument("--prompt", default="document", choices=["document", "query"])
    parser.add_argument("--pooling", default="hybrid", choices=["hybrid", "last", "mean"])
    parser.add_argument("--model", default="default",
                        help="'default', a Hugging Face id in the local cache, or a folder")
    parser.add_argument("--batch-size", type=int, default=16, help="texts per forward pass (default 16)")
    parser.add_argument("--memory-mb", type=float, default=None, help="stored prefix states above this spill to the "
                        "cache folder (default 512)")
    parser.add_argument("--no-cache", action="store_true", help="always compute; neither read nor write the cache")
    parser.add_argument("--executor", default="local", help="local (this process) or ray")
    parser.add_argument("--address", default=None, help="with --executor ray: a running cluster ('auto', "
                        "'ray://host:10001'); default: start a local one with the cores available")


_SPAN = re.compile(r"(?P<lo>[0-9]+)(?:-(?P<hi>[0-9]+))?(?::(?P<step>[0-9]+))?", re.ASCII)


def parse_ints(raw: str, what: str, most: int) -> list[int]:
    """'1,5,9', '1-29' or '1-29:4' -> sorted ints, each at most `most`. Every range is checked from its ends before
    it is expanded: `--widths 1-1000000000` is refused at once instead of building a billion-element list."""
    out = set()
    for part in str(raw).replace(" ", "").split(","):
        if not part:
            continue
        match = _SPAN.fullmatch(part)
        if match is None:
            raise UserError(f"--{what}: {part!r:.40} is not a number, a range like 1-29 or a stepped range like "
                            "1-29:4.")
        lo, hi, step = (_capped(match[k] or match["lo"], most) for k in ("lo", "hi", "step"))
        step = step if match["step"] else 1
        if max(lo, hi) > most:
            raise UserError(f"--{what}: {part!r:.40} goes past any model's depth (at most {most}).")
        if hi < lo:
            raise UserError(f"--{what}: the range {lo}-{hi} runs backwards; write {hi}-{lo}.")
        if step < 1:
            raise UserError(f"--{what}: {part!r:.40} has a step of 0; a step is at least 1.")
        out.update(range(lo, hi + 1, step))
    if not out:
        raise UserError(f"--{what} names no value.")
    return sorted(out)


def check_flags(args, base: dict) -> tuple[list[float], list[int] | None, list[int] | None]:
    """Every flag that needs no model, checked before any work: (biases, starts, widths; None = the default)."""
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods.kv_embedding import MAX_LAYER  # lazy: keeps torch off the pages' and the command line's start

    if args.executor not in ("local", "ray"):
        raise UserError(f"--executor must be local or ray, not {args.executor!r:.40}.")
    if args.rerotate not in REROTATE:
        raise UserError(f"--rerotate must be false, true or both, not {args.rerotate!r:.40}.")
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}.")
    for flag, n in (("--limit", args.limit), ("--sample", args.sample)):
        if n is not None and n < 2:  # before the pairs are read: no warning about one pair before the refusal
            raise UserError(f"{flag} must be at least 2 pairs for a sweep, got {n}.")
    if args.memory_mb is not None and not (math.isfinite(args.memory_mb) and args.memory_mb >= 0):
        raise UserError(f"--memory-mb must be a finite number of megabytes, 0 or more, not {args.memory_mb}.")
    try:
        biases = sorted({float(b) for b in args.biases.split(",") if b.strip()})
    except ValueError:
        raise UserError(f"--biases: {args.biases!r:.60} is not a comma-separated list of numbers.") from None
    for b in biases:  # finite and in the parameter's range: a NaN bias would fail only when its cell runs
        try:
            get_method("kv_embedding", bias=b, **base)
        except UserError as err:
            raise UserError(f"--biases: {err}") from None
    starts = parse_ints(args.starts, "starts", MAX_LAYER) if args.starts else None
    widths = parse_ints(args.widths, "widths", MAX_LAYER + 1) if args.widths else None
    if widths and widths[0] < 1:
        raise UserError("--widths must be at least 1 layer.")
    if args.address is not None and args.executor != "ray":
        raise UserError("--address only applies to --executor ray.")
    if args.executor == "ray":
        # lazy: keeps torch off the pages' and the command line's start
        from analysis.sweep.ray_executor import check_address, import_ray

        import_ray()  # missing Ray: one sentence before any model loads
        args.address = check_address(args.address)  # a cluster that does not answer: refused in seconds
    return biases, starts, widths


def _capped(digits: str, cap: int) -> int:
    """int(digits), or cap + 1 when larger; compared as text first (int() refuses numbers of over 4,300 digits)."""
    digits = digits.lstrip("0") or "0"
    return cap + 1 if len(digits) > len(str(cap)) else min(int(digits), cap + 1)


def load_pairs(args):
    """(pairs, fields): what --sample/--limit pick of --data (`_common.choose`), at least 2 pairs."""
    try:
        pairs, picked = choose(args, pairs_of(args.data))
    except UserError as err:
        raise UserError(f"--data: {err}") from None
    if len(pairs) < 2:
        raise UserError(f"A sweep needs at least 2 pairs, got {len(pairs)}.")
    return pairs, picked


def run(args) -> dict:
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start

    began = time.perf_counter()
    base = {"prompt": args.prompt, "pooling": args.pooling}
    biases, starts, widths = check_flags(args, base)
    pairs, picked = load_pairs(args)
    backbone = load_model(args.model)
    L = backbone.facts.n_layers
    if starts is None:
        starts = list(range(1, L, 4))
    elif starts[-1] >= L:
        raise UserError(f"--starts: {starts[-1]} is not a decoder layer of this model (it has layers 0..{L - 1}).")
    widths = sorted({min(w, L) for w in widths}) if widths else [windows.paper_width(L)]  # wider = to the end
    cells = windows.grid(L, starts, widths, biases, REROTATE[args.rerotate])

    from cache.sweep import cached_sweep  # lazy: keeps torch off the pages' and the command line's start

    store = None if args.no_cache else default_store()
    sel, ids = auto_window(store, backbone, get_method("kv_embedding", **base))
    id_cell = windows.Cell(sel.start, len(sel.layers), 1.0) if sel.layers else None  # the paper's bias
    work = cells + ([id_cell] if id_cell is not None and id_cell not in cells else [])

    def progress(done, total, message):
        print(f"[{done}/{total}] {message}", file=sys.stderr, flush=True)

    print(f"{len(work)} cell(s) on {len(pairs)} pairs, executor {args.executor}", file=sys.stderr, flush=True)
    result = cached_sweep(store, backbone, pairs, work, base=base, executor=args.executor, address=args.address,
                          model=args.model, batch_size=args.batch_size, memory_mb=args.memory_mb, progress=progress)
    promptEOL = sts_score(store, backbone, pairs, get_method("prompteol"), batch_size=args.batch_size)[0]  # one pass
    refs = {"prompt only": result.prompt_only, "PromptEOL": promptEOL}
    rows = [{**asdict(c), "layers": list(c.layers(L)), "spearman": result.scores[c]} for c in cells]
    id_score = result.scores.get(id_cell) if id_cell is not None else None
    summary = windows.summary(rows, L, sel.layers, id_score, refs)
    if id_cell is not None:
        summary["id_window"]["cell"] = asdict(id_cell)
    return {
        "model": backbone.identity, "data": args.data, "pairs": len(pairs), **picked, "cells": len(cells),
        "executor": args.executor, "rows": rows, "references": refs, "id_window": summary.get("id_window"),
        "best": summary["best"], "id_selection": sel.as_dict(), "id_trajectory": ids,
        "computed": result.computed, "cached": result.cached, "floor_forwards": round(result.floor, 3),
        "seconds": round(time.perf_counter() - began, 3),
    }
