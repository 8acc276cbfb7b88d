"""`python -m analysis geometry --method NAME [--param k=v ...] --data lee [--sample N]`: alignment, uniformity
and anisotropy of a method's embeddings on a labelled pair set, as one JSON line."""

from __future__ import annotations

import math

from analysis.core.errors import UserError
from analysis.data.datasets import pairs_of
from analysis.inspect.geometry import anisotropy_by_layer, measure, positive_pairs
from cli.commands._common import (
    add_boot_argument,
    add_method_arguments,
    add_sample_arguments,
    check_boot,
    choose,
    encode,
    load_model,
    method_from_args,
    params_dict,
    ready,
)

HELP = ("Alignment (positive pairs: gold >= 4 of 5, or >= 0.8 on a 0-1 scale), uniformity and anisotropy of a "
        "method's embeddings on a pair set (lee, demo, stsb-dev, stsb-train or an STS file), with bootstrap intervals.")


def add_arguments(parser) -> None:
    add_method_arguments(parser)
    parser.add_argument("--data", default="lee", help="lee (default), demo, stsb-dev, stsb-train, or an STS-B-format "
                        "file / table with sentence1, sentence2, score")
    add_sample_arguments(parser, "pairs", seed=False)
    parser.add_argument("--threshold", type=float, default=None,
                        help="gold score from which a pair is positive (default: 4 on a 0-5 scale, 0.8 on 0-1)")
    add_boot_argument(parser)
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample and the bootstrap (default 0)")
    parser.add_argument("--by-layer", action="store_true",
                        help="also report anisotropy at every hidden state (one extra pass over all layers)")


def run(args) -> dict:
    method = method_from_args(args)  # cheap checks first: a typo should not wait for the model
    check_boot(args)
    if args.threshold is not None and not math.isfinite(args.threshold):
        raise UserError(f"--threshold must be a finite gold score, not {args.threshold}.")
    pairs, picked = choose(args, pairs_of(args.data))
    pos = positive_pairs(pairs, args.threshold)
    backbone = load_model(args)
    emb, info = encode(args, backbone, method, pos.texts)
    g = measure(emb, pos.left_index, pos.right_index, n_boot=args.n_boot, seed=args.seed)
    out = {
        "method": method.name,
        "params": params_dict(method),
        "model": backbone.identity,
        "data": pairs.name,
        "n_texts": g.n_texts,
        "n_pairs": g.n_pairs,
        "positive_rule": pos.rule,
        **picked,
        "alignment": _num(g.alignment),
        "uniformity": _num(g.uniformity),
        "anisotropy": _num(g.anisotropy),
        "alignment_ci": [_num(v) for v in g.alignment_ci],
        "uniformity_ci": [_num(v) for v in g.uniformity_ci],
        "anisotropy_ci": [_num(v) for v in g.anisotropy_ci],
        "seconds": round(info["seconds"], 3),
        "cached": info["cached"],
    }
    if args.by_layer:
        curve = anisotropy_by_layer(backbone, ready(args, backbone, method), pos.texts, batch_size=args.batch_size)
        out["anisotropy_by_layer"] = [_num(v) for v in curve]
    return out


def _num(x: float):
    return None if math.isnan(x) else round(float(x), 6)  # JSON has no NaN
