"""`python -m analysis train <system> [options]`: train a system's weights (see analysis.training.systems)."""

from __future__ import annotations

import sys

HELP = ("Train the weights of a trained system (causal2vec, gircse, compression) on this machine; prints progress on "
        "stderr and one JSON line with the validation and held-out scores at the end. `train <system> --help` lists "
        "its options, each generated from the system's Config.")


def add_arguments(parser) -> None:
    import argparse

    from analysis.core.options import add_options
    from analysis.training.systems import SYSTEMS, deviations, system

    sub = parser.add_subparsers(dest="system", required=True, metavar="SYSTEM")
    for name in SYSTEMS:
        module = system(name)
        found = deviations(name)
        epilog = "\n".join([f"Differences from the {found[0].source}'s recipe:",
                             *(f"- {d.sentence()}" for d in found)]) if found else None
        p = sub.add_parser(name, help=module.HELP, description=module.HELP, epilog=epilog,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        add_options(p, module.Config)


def run(args) -> dict:
    from transformers.utils import logging as hf_logging

    from analysis.core.options import from_args
    from analysis.training.systems import run as train, system

    config = from_args(system(args.system).Config, args)  # every flag checked before a model loads
    hf_logging.disable_progress_bar()  # stdout carries one JSON line; stderr the progress bar
    bar = _progress(args.system, config.steps)
    try:
        return train(args.system, config, progress=bar)
    finally:
        bar.close()


def _progress(name: str, total: int):
    """A tqdm bar on stderr, opened at the first step: a run refused before it starts prints only its sentence."""
    from tqdm import tqdm

    bar = None

    def progress(step, total_steps, info):
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, file=sys.stderr, desc=name, dynamic_ncols=True)
        bar.n = step
        shown = {"loss": f"{info['loss']:.3f}"}
        if "score" in info:
            shown["val"] = f"{info['score']:.3f}"
        bar.set_postfix(shown, refresh=False)
        bar.refresh()

    progress.close = lambda: bar is not None and bar.close()
    return progress
