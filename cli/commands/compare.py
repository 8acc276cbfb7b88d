"""`python -m analysis compare --methods prompteol,last,deep=last --param deep.layer=20 --data stsb-dev --sample 500`:
methods scored on the same pairs, each with its Spearman and interval, and every pair of methods with the paired
bootstrap interval and p-value of their difference (the same resampled pairs for both)."""

from __future__ import annotations

import sys

from analysis.core.errors import UserError
from cli.commands._common import (METHODS_PARAM_HELP, add_boot_argument, add_model_arguments, add_run_arguments,
                                  add_sample_arguments)

HELP = ("Compare methods on the same STS pairs: each method's Spearman with a 95% bootstrap interval, and for each "
        "pair of methods the difference with a paired bootstrap interval and p-value (the same resampled pairs for "
        "both methods, so 'A beats B' is tested, not read off two separate intervals). At least 10 pairs: fewer "
        "have too few distinct resamples for an interval to mean anything.")


def add_arguments(parser) -> None:
    parser.add_argument("--methods", required=True,
                        help="comma-separated methods, at least two; LABEL=NAME adds a labelled copy, to compare a "
                             "method with itself under other parameters: 'last,deep=last --param deep.layer=20'")
    parser.add_argument("--param", action="extend", nargs="+", default=[], metavar="[LABEL.]KEY=VALUE",
                        help=METHODS_PARAM_HELP)
    parser.add_argument("--data", required=True, help="a built-in pair set (stsb-dev, sick, sts12 ... sts16, lee, "
                        "demo) or an STS file (STS-B format, or sentence1, sentence2, score)")
    add_sample_arguments(parser, "pairs")
    add_boot_argument(parser)
    add_model_arguments(parser)
    add_run_arguments(parser)


def run(args) -> dict:
    from analysis.data.datasets import pairs_of
    from analysis.eval.sample_size import check_comparable
    from analysis.eval.sts import check_pairs, compare_cosines, score_pairs
    from cli.commands._common import check_boot, choose, configure_methods, encode, load_model, params_dict

    methods = configure_methods(args.methods, args.param)  # cheap checks first: a typo should not wait for the model
    if len(methods) < 2:
        raise UserError("--methods needs at least two methods to compare.")
    check_boot(args)
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}.")
    pairs, picked = choose(args, pairs_of(args.data), lambda p: (check_comparable(len(p), p.name), check_pairs(p)))
    backbone = load_model(args)
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
