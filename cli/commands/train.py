"""`python -m analysis train <system> [options]`: train a system's weights (see analysis.training.systems)."""

from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from analysis.core.options import add_options, from_args
from analysis.training.systems import SYSTEMS, deviations, system
from analysis.training.systems import run as train

HELP = ("Train the weights of a trained system (causal2vec, gircse, compression) on this machine, or every system the "
        "claims board needs for a model (`train all`); prints progress on stderr and one JSON line at the end. "
        "`train <system> --help` lists its options, each generated from the system's Config.")


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="system", required=True, metavar="SYSTEM")
    for name in SYSTEMS:
        module = system(name)
        found = deviations(name)
        epilog = "\n".join([f"Differences from the {found[0].source}'s recipe:",
                             *(f"- {d.sentence()}" for d in found)]) if found else None
        p = sub.add_parser(name, help=module.HELP, description=module.HELP, epilog=epilog,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        add_options(p, module.Config)
    _add_all(sub)


def _add_all(sub) -> None:
    """`train all`: its help lists the parts in order (`analysis.training.queue.PARTS`) and how long they took here."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.models.backbone import BUILTIN
    from analysis.training.queue import PARTS, QUEUE_HELP, took_here

    listing = "\n".join(f"  {i:2d}. {p.label} ({p.system}; board claims: {', '.join(p.claims)})\n"
                         + "".join(f"      {model}: {took_here(p, model)}\n" for model in BUILTIN)
                         for i, p in enumerate(PARTS, 1))
    p = sub.add_parser("all", help="every system and control the claims board needs, for one model, in one "
                       "resumable queue under a time budget", description=QUEUE_HELP,
                       epilog=f"Parts, in the order they train, and how long each took when this repository trained it "
                              f"for each built-in model (its shipped manifest's wall time, validation included):"
                              f"\n{listing}",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="default", help="decoder: 'default', a built-in name, a Hugging Face folder or "
                   "a .gguf file (default 'default')")
    p.add_argument("--budget-hours", type=float, required=True, help="training time for the whole queue; parts are "
                   "shortened to one common share of their recipes (at least a quarter) or skipped to fit")
    p.add_argument("--precision", default="float32", choices=("float32", "bfloat16"),
                   help="the training forward's precision (bfloat16: autocast; weights and validation stay float32)")
    p.add_argument("--no-ship", action="store_true", help="keep every result in the cache's run folders instead of "
                   "shipping it into analysis/artefacts/<system>/<model>/")
    p.add_argument("--dry-run", action="store_true", help="time the steps and print the plan; train nothing")
    p.add_argument("--retrain", action="store_true", help="train again the parts this repository already shipped "
                   "for the model (by default they count as done and the budget goes to what is missing)")


def run(args) -> dict:
    # lazy: keeps torch, transformers off the pages' and the command line's start
    from transformers.utils import logging as hf_logging

    if args.system == "all":
        # lazy: keeps torch off the pages' and the command line's start
        from analysis.training.queue import check_budget, run_queue

        check_budget(args.budget_hours)  # before the model loads
        hf_logging.disable_progress_bar()
        bars = []

        def progress_for(label):
            bars.append(_progress(label, 0))
            return bars[-1]

        try:
            return run_queue(args.model, args.budget_hours, precision=args.precision, ship=not args.no_ship,
                             say=lambda text: print(text, file=sys.stderr, flush=True), progress_for=progress_for,
                             dry_run=args.dry_run, retrain=args.retrain)
        finally:
            for bar in bars:
                bar.close()

    config = from_args(system(args.system).Config, args)  # every flag checked before a model loads
    hf_logging.disable_progress_bar()  # stdout carries one JSON line; stderr the progress bar
    bar = _progress(args.system, config.steps)
    try:
        return train(args.system, config, progress=bar)
    finally:
        bar.close()


def _progress(name: str, total: int):
    """A tqdm bar on stderr, opened at the first step: a run refused before it starts prints only its sentence."""
    bar = None

    def progress(step, total_steps, info):
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total_steps, file=sys.stderr, desc=name, dynamic_ncols=True)
        bar.n = step
        shown = {"loss": f"{info['loss']:.3f}"}
        if "score" in info:
            shown["val"] = f"{info['score']:.3f}"
        bar.set_postfix(shown, refresh=False)
        bar.refresh()

    progress.close = lambda: bar is not None and bar.close()
    return progress
