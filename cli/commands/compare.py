"""`python -m analysis compare --methods prompteol,last,deep=last --param deep.layer=20 --data stsb-dev --sample 500`:
methods scored on the same units of one task, each with its score and interval, and every pair of methods with the
paired bootstrap interval and p-value of their difference (the same resampled units for both): pairs for STS (Spearman
recomputed per resample), queries for retrieval, evaluation texts for classification, experiments for clustering,
(length, query) items for long documents (`analysis.eval.score.compare_scores`)."""

from __future__ import annotations

import sys

from analysis.core.errors import UserError
from analysis.data.datasets import pairs_of
from analysis.eval.sample_size import MIN_COMPARE_PAIRS, check_comparable
from analysis.eval.score import compare_scores
from analysis.eval.tasks import load_task, model_task, needs_model, select_task
from cache import default_store
from cache.compute import bench_cell
from cli.commands._common import (
    METHODS_PARAM_HELP,
    add_boot_argument,
    add_model_arguments,
    add_run_arguments,
    add_sample_arguments,
    check_boot,
    check_weights,
    choose,
    configure_methods,
    encode,
    load_model,
    params_dict,
    picks,
    reported,
)

HELP = ("Compare methods on the same units of one task: each method's score with a 95% bootstrap interval, and for "
        "each pair of methods the difference with a paired bootstrap interval and p-value (the same resampled pairs, "
        "queries, texts or experiments for both methods, so 'A beats B' is tested, not read off two separate "
        "intervals). Any task family: STS pairs, retrieval (scifact-report, nano:scifact-report), classification "
        "(banking77-report), clustering (clustering:banking77-report), long documents (longdoc:passkey). At least 10 "
        "units: fewer have too few distinct resamples for an interval to mean anything.")


def add_arguments(parser) -> None:
    parser.add_argument("--methods", required=True,
                        help="comma-separated methods, at least two; LABEL=NAME adds a labelled copy, to compare a "
                             "method with itself under other parameters: 'last,deep=last --param deep.layer=20'")
    parser.add_argument("--param", action="extend", nargs="+", default=[], metavar="[LABEL.]KEY=VALUE",
                        help=METHODS_PARAM_HELP)
    parser.add_argument("--data", required=True, help="a built-in pair set (stsb-dev, sick, sts12 ... sts16, lee, "
                        "demo) or an STS file (STS-B format, or sentence1, sentence2, score), or any task `bench` "
                        "takes (scifact-report, clustering:banking77-report, longdoc:passkey, ...)")
    add_sample_arguments(parser, "pairs (queries, evaluation texts)")
    add_boot_argument(parser)
    add_model_arguments(parser)
    add_run_arguments(parser)


def run(args) -> dict:
    # lazy: keeps scipy off the pages' and the command line's start
    from analysis.eval.sts import check_pairs, compare_cosines, score_pairs
    methods = configure_methods(args.methods, args.param)  # cheap checks first: a typo should not wait for the model
    if len(methods) < 2:
        raise UserError("--methods needs at least two methods to compare.")
    check_boot(args)
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}.")
    task = None if needs_model(args.data) else load_task(args.data)  # absent data: one sentence, before the model
    if task is None or task.kind != "sts":
        return compare_task(args, methods, task)
    pairs, picked = choose(args, pairs_of(args.data), lambda p: (check_comparable(len(p), p.name), check_pairs(p)))
    backbone = load_model(args)
    for method in methods.values():
        check_weights(method, backbone)  # before any encode: a missing bridge refused, a stand-in said
    cosines, runs = {}, {}
    for label, method in methods.items():
        info = {}

        def embed(texts, method=method, info=info):
            emb, meta = encode(args, backbone, method, texts)
            info.update(meta)
            return emb

        cosines[label] = score_pairs(pairs, embed, n_boot=0).cosines  # intervals below, on shared resamples
        runs[label] = {"name": method.name, "params": params_dict(method), "seconds": round(info["seconds"], 3),
                       "cached": info["cached"]}
        took = "from the cache" if info["cached"] else f"{info['seconds']:.1f} s"
        print(f"{label}: encoded ({took})", file=sys.stderr, flush=True)
    result = compare_cosines(cosines, pairs.scores, n_boot=args.n_boot, seed=args.seed)
    for row in result["methods"]:
        row.update(runs[row["method"]])
    return {"model": backbone.identity, "data": str(args.data), **picked, **result}


def compare_task(args, methods: dict, task) -> dict:
    """The comparison on a task of another family (`task`; None: a long-document task, made for the model): every
    method's cell through the benchmark's cache entries (`bench_cell`), then the paired differences of every pair."""
    if task is not None:
        task, report = select_task(task, **picks(args))
    backbone = load_model(args)
    if task is None:
        task, report = select_task(model_task(args.data, backbone), **picks(args))
    for method in methods.values():
        check_weights(method, backbone)  # a stored cell encodes nothing: said here, not in `encode`
    if task.n_units() < MIN_COMPARE_PAIRS:
        raise UserError(f"Comparing methods needs at least {MIN_COMPARE_PAIRS} units to resample, and {task.name} has "
                        f"{task.n_units()}: choose more with --sample or --limit.")
    store = None
    if not args.no_cache:
        store = default_store()
    scores, runs = {}, {}
    for label, method in methods.items():
        info = {"seconds": 0.0, "cached": True}

        def embed(side, texts, info=info):
            emb, meta = encode(args, backbone, side, texts)
            info["seconds"] += meta["seconds"]
            info["cached"] = info["cached"] and meta["cached"]
            return emb, meta["seconds"]

        def told(done, total, message, label=label):  # a wait for another process, a streamed corpus's documents
            print(f"{label}: {message}", file=sys.stderr, flush=True)

        scores[label], meta, hit = bench_cell(store, backbone, method, task, n_boot=args.n_boot, seed=args.seed,
                                              embed=embed, batch_size=args.batch_size, progress=told)
        runs[label] = {"name": method.name, "params": params_dict(method),
                       "seconds": round(float(meta.get("encode_seconds", info["seconds"])), 3),
                       "cached": bool(hit or info["cached"])}
        took = "from the cache" if runs[label]["cached"] else f"{runs[label]['seconds']:.1f} s"
        print(f"{label}: {task.metric} {scores[label].value:.4f} ({took})", file=sys.stderr, flush=True)
    result = compare_scores(scores, n_boot=args.n_boot, seed=args.seed)
    for row in result["methods"]:
        row.update(runs[row["method"]])
    return {"model": backbone.identity, "data": str(args.data), **reported(report), **result}
