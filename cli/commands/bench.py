"""`python -m analysis bench --methods last,prompteol --data lee,demo,polarity [--models default,gemma3-270m]
[--format csv|json]`: the benchmark table (one row per model, method and data set: score with a bootstrap
interval, and the method's encode time as a ratio to `last`, the vanilla forward of the raw texts, on the same
model and texts, when `last` is among the methods)."""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import sys

from analysis.core.errors import UserError

HELP = ("Benchmark methods on data sets: STS Spearman (lee, demo, stsb-dev, stsb-train, sts:FILE), probe accuracy "
        "(polarity, topics, probe:FILE), retrieval nDCG@10 (beir:FOLDER); each score with a bootstrap interval. "
        "Cells are cached and shared with the Benchmark page.")

DEFAULT_DATA = "lee,demo,polarity"


def add_arguments(parser) -> None:
    parser.add_argument("--methods", default="all", help="comma-separated method names, or 'all' (default)")
    parser.add_argument("--data", default=DEFAULT_DATA, help=f"comma-separated data sets (default {DEFAULT_DATA})")
    parser.add_argument("--param", action="extend", nargs="+", default=[], metavar="[METHOD.]KEY=VALUE",
                        help="method parameter, e.g. --param prompteol.layer=20; without METHOD. it applies to "
                             "every chosen method that has the parameter (repeatable)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the samples, the bootstrap and the "
                        "cross-validation (default 0)")
    parser.add_argument("--format", choices=["csv", "json"], default="csv", help="output: CSV table (default) or JSON")
    from cli.commands._common import add_boot_argument, add_model_arguments, add_sample_arguments

    add_boot_argument(parser)
    add_sample_arguments(parser, "pairs / texts / queries per data set", seed=False)
    add_model_arguments(parser, many=True)
    parser.add_argument("--model", dest="models", help=argparse.SUPPRESS)  # the one-model spelling still works
    parser.add_argument("--batch-size", type=int, default=16, help="texts per forward pass (default 16)")
    parser.add_argument("--no-cache", action="store_true", help="always compute; neither read nor write the cache")


def configure_methods(names: str, params: list[str]) -> list:
    """Methods from 'a,b,c' or 'all', with `[method.]key=value` parameters parsed by each method's Params."""
    from analysis.methods import get_method, list_methods, method_class, parse_params

    chosen = [m.name for m in list_methods()] if names.strip() == "all" else \
        [n.strip() for n in names.split(",") if n.strip()]
    if not chosen:
        raise UserError("--methods names no method.")
    for n in chosen:
        method_class(n)  # unknown name -> UserError listing the available ones
    per_method: dict[str, list[str]] = {n: [] for n in chosen}
    for p in params:
        key = p.partition("=")[0]
        target, dot, _ = key.partition(".")
        if dot:
            if target not in per_method:
                raise UserError(f"--param {p}: {target!r} is not among the chosen methods {chosen}.")
            per_method[target].append(p[len(target) + 1:])
            continue
        takers = [n for n in chosen if key.strip() in {f.name for f in dataclasses.fields(method_class(n).Params)}]
        if not takers:
            raise UserError(f"--param {p}: no chosen method has a parameter {key.strip()!r}.")
        for n in takers:
            per_method[n].append(p)
    return [get_method(n, **parse_params(n, per_method[n])) for n in chosen]


def run(args):
    from cli.commands._common import check_boot, encode, load_model, picks, reported
    from analysis.eval.tasks import load_task, run_task, score_from_record, score_record, select_task
    from cache.keys import BENCH, bench_parts

    methods = configure_methods(args.methods, args.param)
    check_boot(args)
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}.")
    specs = [s.strip() for s in args.data.split(",") if s.strip()]
    if not specs:
        raise UserError("--data names no data set.")
    picked = [select_task(load_task(s), **picks(args)) for s in specs]
    tasks, reports = [t for t, _ in picked], [reported(r) for _, r in picked]
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    if not names:
        raise UserError("--models names no model.")
    store = None
    if not args.no_cache:
        from cache import default_store

        store = default_store()

    rows = []
    for name in names:
        backbone = load_model(args, name)
        for method in methods:
            for task, report in zip(tasks, reports):
                def compute(method=method, task=task):
                    seconds = []

                    def embed(texts):
                        emb, info = encode(args, backbone, method, texts)
                        seconds.append(info["seconds"])
                        return emb

                    arrays, meta = score_record(run_task(task, embed, n_boot=args.n_boot, seed=args.seed))
                    return arrays, {**meta, "encode_seconds": sum(seconds)}

                if store is None:
                    arrays, meta = compute()
                else:
                    entry, _ = store.get_or_compute(bench_parts(backbone.identity, method, task, n_boot=args.n_boot,
                                                                seed=args.seed), compute, namespace=BENCH)
                    arrays, meta = entry.arrays, entry.meta
                s = score_from_record(arrays, meta)
                rows.append({"model": name, "method": method.name, "params": _params_text(method), "data": task.name,
                             "metric": s.metric, "score": _num(s.value), "ci_low": _num(s.lo),
                             "ci_high": _num(s.hi), "n": s.n, "seconds": _num(meta.get("encode_seconds", math.nan)),
                             **report})
                print(f"{name}: {method.name} on {task.name}: {s.metric} {s.value:.4f}", file=sys.stderr)
    add_cost_ratios(rows)
    if args.format == "json":
        return rows
    writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: _cell(v) for k, v in r.items()} for r in rows)
    return None


def add_cost_ratios(rows: list[dict]) -> None:
    """`x_last`: a row's encode seconds over those of `last` (default parameters) on the same model and data.
    Seconds are those recorded when each cell was computed: cells computed in different runs or under
    different load compare less well than the interleaved timings of scripts/benchmark.py."""
    base = {(r["model"], r["data"]): r["seconds"] for r in rows if r["method"] == "last" and not r["params"]}
    for r in rows:
        ref = base.get((r["model"], r["data"]))
        r["x_last"] = _num(r["seconds"] / ref) if ref and r["seconds"] is not None else None


def _params_text(method) -> str:
    """Only the parameters that differ from the method's defaults, as k=v; '' for the defaults."""
    default = type(method.params)()
    return " ".join(f"{f.name}={getattr(method.params, f.name)}" for f in dataclasses.fields(method.params)
                    if getattr(method.params, f.name) != getattr(default, f.name))


def _cell(value):
    """A CSV cell: the sample and genre dicts as 'key=value; ...' (JSON keeps them as objects)."""
    return "; ".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else value


def _num(x: float):
    return None if math.isnan(x) else round(float(x), 6)
