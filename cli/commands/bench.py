"""`python -m analysis bench --methods last,prompteol --data lee,scifact-report,clustering:banking77-report,longdoc:passkey
[--models default,gemma3-270m] [--format csv|json]`: the benchmark table (one row per model, method and task: score
with a bootstrap interval, and the method's encode time as a ratio to `last`, the vanilla forward of the raw texts, on
the same model and texts, when `last` is among the methods). A method run with something in place of trained weights
the model lacks is named so ("soft_tokens (frozen: no adapter shipped for gemma3-270m)": `analysis.weights.stand_in`). Every task family of `analysis.eval.tasks` is taken:
STS, probe, retrieval (queries embedded as queries), MTEB's classification and clustering, long documents (generated
for each model's tokenizer, so loaded once the model is)."""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import sys

from analysis.core.errors import UserError
from analysis.eval.tasks import load_task, model_task, needs_model, select_task
from analysis.weights.stand_in import label
from cache import default_store
from cli.commands._common import (
    METHODS_PARAM_HELP,
    add_boot_argument,
    add_model_arguments,
    add_run_arguments,
    add_sample_arguments,
    check_boot,
    check_weights,
    configure_methods,
    encode,
    load_model,
    picks,
    reported,
)

HELP = ("Benchmark methods on tasks of every family, each score with a bootstrap interval: STS Spearman (lee, demo, "
        "stsb-dev, sts:FILE), probe accuracy (polarity, topics, probe:FILE), retrieval nDCG@10 (scifact-report, "
        "nano:scifact-report, beir:FOLDER), MTEB classification accuracy (banking77-report, classification:FILE), "
        "clustering V-measure (clustering:banking77-report, clustering:FILE), long-document nDCG@1 (longdoc:passkey, "
        "longdoc:needle, longdoc:scifact). Cells are cached and shared with the Benchmark page.")

DEFAULT_DATA = "lee,demo,polarity"


def add_arguments(parser) -> None:
    parser.add_argument("--methods", default="all", help="comma-separated method names (LABEL=NAME for a labelled "
                        "copy), or 'all' (default)")
    parser.add_argument("--data", default=DEFAULT_DATA, help=f"comma-separated data sets (default {DEFAULT_DATA})")
    parser.add_argument("--param", action="extend", nargs="+", default=[], metavar="[LABEL.]KEY=VALUE",
                        help=METHODS_PARAM_HELP)
    parser.add_argument("--seed", type=int, default=0, help="seed of the samples, the bootstrap and the "
                        "cross-validation (default 0)")
    parser.add_argument("--format", choices=["csv", "json"], default="csv", help="output: CSV table (default) or JSON")
    parser.add_argument("--executor", default="local", help="where the cells are computed: local (default) or ray "
                        "(each model's cells over Ray actors that load it once; the same cache, the same rows)")
    parser.add_argument("--address", default=None, help="with --executor ray: a running cluster (auto, host:6379, "
                        "ray://host:10001); default: start one on this machine (docs/CLUSTER.md)")
    add_boot_argument(parser)
    add_sample_arguments(parser, "pairs / texts / queries per data set", seed=False)
    add_model_arguments(parser, many=True)
    parser.add_argument("--model", dest="models", help=argparse.SUPPRESS)  # the one-model spelling still works
    add_run_arguments(parser)


def run(args):
    from cache.grid import GridCell, cached_grid  # lazy: keeps torch off the pages' and the command line's start

    methods = list(configure_methods(args.methods, args.param).values())
    check_boot(args)
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}.")
    check_executor(args)
    specs = [s.strip() for s in args.data.split(",") if s.strip()]
    if not specs:
        raise UserError("--data names no data set.")
    ready = {s: select_task(load_task(s), **picks(args)) for s in specs if not needs_model(s)}  # absent data: now
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    if not names:
        raise UserError("--models names no model.")
    store = None
    if not args.no_cache:
        store = default_store()

    cells, about = [], []  # one grid cell per (model, method, task), in the order of the rows
    for name in names:
        backbone = load_model(args, name)
        picked = [ready[s] if s in ready else select_task(model_task(s, backbone), **picks(args)) for s in specs]
        for method in methods:
            check_weights(method, backbone)  # before any cell: a missing bridge refused, a stand-in said
            for task, report in picked:
                cells.append(GridCell(name, backbone, method, task))
                about.append(reported(report))

    def embed(backbone, side, texts):
        emb, info = encode(args, backbone, side, texts)  # its warnings printed, as every command's
        return emb, info["seconds"]

    results = cached_grid(store, cells, n_boot=args.n_boot, seed=args.seed, executor=args.executor,
                          address=args.address, batch_size=args.batch_size, embed=embed,
                          progress=lambda done, total, message: print(f"[{done}/{total}] {message}", file=sys.stderr))
    rows = []
    for c, report, (s, meta, _) in zip(cells, about, results):
        rows.append({"model": c.model, "method": label(c.method, c.backbone), "params": _params_text(c.method), "data": c.task.name,
                     "family": c.task.kind, "metric": s.metric, "score": _num(s.value), "ci_low": _num(s.lo),
                     "ci_high": _num(s.hi), "n": s.n, "seconds": _num(meta.get("encode_seconds", math.nan)),
                     **report})
    add_cost_ratios(rows)
    if args.format == "json":
        return rows
    writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: _cell(v) for k, v in r.items()} for r in rows)
    return None


def check_executor(args) -> None:
    """--executor and --address, before any work: Ray installed and the cluster answering."""
    if args.executor not in ("local", "ray"):
        raise UserError(f"--executor must be local or ray, not {args.executor!r:.40}.")
    if args.address is not None and args.executor != "ray":
        raise UserError("--address only applies to --executor ray.")
    if args.executor == "ray":
        # lazy: keeps torch off the pages' and the command line's start
        from analysis.sweep.ray_executor import check_address, import_ray

        import_ray()
        args.address = check_address(args.address)


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
