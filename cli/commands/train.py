"""`python -m analysis train <method> [options]`: train a method's weights (see analysis.training.TRAINERS)."""

from __future__ import annotations

HELP = ("Train the weights of a trained method (e.g. the Causal2Vec bridge) on this machine; prints progress on "
        "stderr and one JSON line with the validation scores at the end. `train <method> --help` lists its options.")


def add_arguments(parser) -> None:
    from analysis.training import TRAINERS, trainer

    sub = parser.add_subparsers(dest="trainer", required=True, metavar="METHOD")
    for name in TRAINERS:
        module = trainer(name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)


def run(args) -> dict:
    from analysis.training import trainer

    return trainer(args.trainer).run(args)
