"""`python -m analysis measure <experiment> [options]`: measure one experiment and write its results record."""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

from tqdm import tqdm

from analysis.core.errors import UserError
from analysis.core.options import add_options, from_args
from analysis.experiments import EXPERIMENTS, experiment
from analysis.experiments import run as measure
from analysis.experiments.machinery import records
from cache import default_store

HELP = ("Measure one experiment of the registry (analysis.experiments) and write its typed results record to "
        "docs/results/<id>.json, with the command, code version, models and weights, sample, wall time and machine "
        "load that reproduce it; `python -m analysis results` then renders docs/RESULTS.md. `measure <id> --help` "
        "lists an experiment's options, each generated from its Config.")


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")
    for name in EXPERIMENTS:
        module = experiment(name)
        p = sub.add_parser(name, help=module.HELP.replace("%", "%%"), description=module.HELP)
        add_options(p, module.Config)
        p.add_argument("--records", default="", help="folder the record is written to (default: docs/results)")
        p.add_argument("--no-cache", action="store_true", help="compute everything; read and store nothing")
        p.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's choice); the record "
                                                              "notes the number used")


def run(args) -> dict:
    # lazy: keeps torch, transformers off the pages' and the command line's start
    from transformers.utils import logging as hf_logging

    config = from_args(experiment(args.experiment).Config, args)  # every flag checked before a model loads
    folder = _writable(args.records or records.folder())
    if args.threads:
        import torch  # lazy: keeps torch off the pages' and the command line's start

        torch.set_num_threads(args.threads)
    hf_logging.disable_progress_bar()  # stdout carries one JSON line; stderr the progress bar
    compute = None  # --no-cache: the experiment's own default, analysis.compute.direct.Direct
    if not args.no_cache:
        from cache.cached import Cached  # lazy: keeps torch off the pages' and the command line's start

        compute = Cached(default_store())
    bar = _progress(args.experiment)
    try:
        with compute.ledger() if compute is not None else nullcontext() as book:
            record = measure(args.experiment, config, compute=compute, progress=bar)
    finally:
        bar.close()
    if book and book["read"]:
        record = dataclasses.replace(record, notes=(*record.notes, reuse_note(book, record.wall_seconds)))
    path = records.write(record, folder)
    return {"written": str(path), "id": record.id, "wall_seconds": record.wall_seconds,
            "findings": list(record.findings)}


def reuse_note(book: dict, wall_seconds: float | None) -> str:
    """What a run that read stored values says of its wall time: those values' count and what they took when an
    earlier run of the same code computed them."""
    total = book["read"] + book["computed"]
    took = f"; this run took {wall_seconds / 60:.1f} min" if wall_seconds is not None else ""
    return (f"Resumed from the cache: {book['read']:,} of {total:,} stored values were read, computed earlier by the "
            f"same code in {book['read_seconds'] / 60:.1f} min; {book['computed']:,} computed now in "
            f"{book['computed_seconds'] / 60:.1f} min{took}.")


def _progress(name: str):
    """progress(done, total, message) as a tqdm bar on stderr, opened at the first report."""
    bar = None

    def progress(done, total, message):
        nonlocal bar
        if bar is None or bar.total != total:
            if bar is not None:
                bar.close()
            bar = tqdm(total=total, file=sys.stderr, desc=name, dynamic_ncols=True)
        bar.n = done
        bar.set_postfix_str(message[:60], refresh=False)
        bar.refresh()

    progress.close = lambda: bar is not None and bar.close()
    return progress


def _writable(folder):
    """`folder`, created if needed, once a file could be written there: checked before any work."""
    folder = Path(folder).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as err:
        raise UserError(f"cannot write records to {folder} ({err.strerror or err}).") from err
    return folder
