"""`python -m analysis sts --method NAME [--param k=v ...] --data stsb-dev [--sample N --seed S | --limit N]`: Spearman
on STS pairs."""

from __future__ import annotations

from analysis.data.datasets import pairs_of
from cli.commands._common import (
    add_boot_argument,
    add_method_arguments,
    add_sample_arguments,
    check_boot,
    choose,
    encode,
    load_model,
    method_from_args,
)

HELP = ("Score a method on STS-Benchmark-format pairs (tab-separated: gold in column 5, sentences in 6 and 7): "
        "Spearman correlation of cosine similarity with the gold scores, with a 95% bootstrap interval.")


def add_arguments(parser) -> None:
    add_method_arguments(parser)
    parser.add_argument("--data", required=True, help="STS-B file (e.g. ../shared/data/stsbenchmark/sts-dev.csv), "
                        "a table with sentence1, sentence2, score columns, or a built-in pair set "
                        "(demo, lee, stsb-dev, stsb-train, sick, sts12 ... sts16)")
    add_sample_arguments(parser, "pairs")
    add_boot_argument(parser)


def run(args) -> dict:
    # lazy: keeps scipy off the pages' and the command line's start
    from analysis.eval.sts import check_pairs, sts_spearman

    method = method_from_args(args)  # cheap checks first: a typo should not wait for the model
    check_boot(args)
    pairs, picked = choose(args, pairs_of(args.data), check_pairs)
    backbone = load_model(args)
    info = {}

    def cached_encode(texts, progress):
        emb, meta = encode(args, backbone, method, texts)
        info.update(meta)
        return emb

    result = sts_spearman(backbone, method, pairs, encode=cached_encode, n_boot=args.n_boot, seed=args.seed)
    return {
        **result,
        "spearman": round(result["spearman"], 6),  # NaN is written as null
        "ci": [round(v, 6) for v in result["ci"]],
        "seconds": round(info["seconds"], 3),
        "cached": info["cached"],
        "data": str(args.data),
        **picked,
    }
