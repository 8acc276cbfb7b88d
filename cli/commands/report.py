"""`python -m analysis report --model M --data stsb-dev --sample 500 --budget-minutes 30 --out report.html`: one
model's report (which method, which layers, at what cost) as a standalone HTML file and a JSON with every number
(`analysis.report`), through the compute cache so an interrupted report resumes from every finished cell."""

from __future__ import annotations

import sys
from pathlib import Path

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.data.datasets import pairs_of
from analysis.eval.tasks import load_task
from analysis.report import clock
from analysis.report.build import DEFAULT_TASKS, build, prepare
from analysis.report.clock import RESUME
from analysis.report.families import FAMILIES
from analysis.report.html import save
from analysis.sweep.ray_executor import check_address, import_ray
from cache import default_store
from cache.cached import Cached
from cli.commands._common import (
    add_boot_argument,
    add_model_arguments,
    add_run_arguments,
    add_sample_arguments,
    check_boot,
    check_html_out,
    choose,
    load_model,
)

HELP = ("Write one model's report: every method's STS Spearman with paired differences to the best, its cost as "
        "x the plain forward and peak memory, the intrinsic-dimension windows and a KV-Embedding layer map sized to "
        "the budget, mechanism summaries and a recommendation with its reasons; --out report.html also writes "
        "report.json. The estimate is printed before the work starts; Ctrl-C keeps a partial report, and the same "
        "command resumes from the cache.")


def add_arguments(parser) -> None:
    parser.add_argument("--data", default="stsb-dev", help="a built-in pair set (stsb-dev, sick, sts12 ... sts16, lee, "
                        "demo) or an STS file (STS-B format, or sentence1, sentence2, score[, genre])")
    add_sample_arguments(parser, "pairs", default_sample=500)
    parser.add_argument("--tasks", default=",".join(DEFAULT_TASKS),
                        help="probe or retrieval tasks every method is also scored on, comma-separated names as in "
                             "`bench` (a labelled set, probe:FILE, beir:FOLDER); default polarity (200 built-in "
                             "sentences); none = STS only")
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help="task families measured on small default samples after the cost, each method unit by "
                             "unit as the budget allows (analysis/report/families.py: nano SciFact retrieval, "
                             "Banking77 classification and clustering, 256- and 512-token passkey documents); a family "
                             "whose data is not on this machine is named with how to get it; none = STS and --tasks "
                             f"only (default {','.join(FAMILIES)})")
    parser.add_argument("--budget-minutes", type=float, default=30.0,
                        help="time for the whole report (default 30); the quality table must fit, the layer map is "
                             "sized to what is left")
    parser.add_argument("--executor", default="local", help="where the layer map runs: local or ray")
    parser.add_argument("--address", default=None, help="with --executor ray: a running cluster (default: start one)")
    parser.add_argument("--out", required=True, help="the HTML file to write (its .json is written beside it)")
    parser.add_argument("--shared-plotly", action="store_true",
                        help="load plotly.js from plotly.gz.js beside the HTML (written there, 1.9 MB once) instead "
                             "of embedding it: for a folder of several reports (each then about 0.1 MB)")
    add_boot_argument(parser)
    add_model_arguments(parser, dtype="float32")  # a published report compares across machines
    add_run_arguments(parser)


def check_flags(args) -> tuple[Path, list]:
    """Every flag that needs no model, before any work: (the output path, the tasks); the budget, the executor."""
    out = check_html_out(args.out, args.budget_minutes)
    if args.executor not in ("local", "ray"):
        raise UserError(f"--executor must be local or ray, not {args.executor!r:.40}.")
    if args.address is not None and args.executor != "ray":
        raise UserError("--address only applies to --executor ray.")
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}.")
    check_boot(args)
    if args.executor == "ray":
        import_ray()
        args.address = check_address(args.address)
    names = [] if args.tasks.strip() == "none" else [t.strip() for t in args.tasks.split(",") if t.strip()]
    tasks = [load_task(name) for name in names]
    bad = [t.name for t in tasks if t.kind == "sts"]
    if bad:
        raise UserError(f"--tasks: {bad[0]} is an STS set; give it as --data (--tasks holds probe and retrieval "
                        "tasks).")
    for t in tasks:  # every method embeds each task's texts: the request's texts budget holds for them too
        budgets.check("texts", t.n_texts(), f"the number of texts of --tasks {t.name}")
    families = () if args.families.strip() == "none" else tuple(f.strip() for f in args.families.split(",") if f.strip())
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise UserError(f"--families: {unknown[0]!r:.40} is not a task family; use {', '.join(FAMILIES)} or none.")
    args.families = families
    return out, tasks


def run(args) -> dict:
    from analysis.eval.sts import check_pairs  # lazy: keeps scipy off the pages' and the command line's start
    started = clock.now()  # the budget covers the whole command: loading the model and the timing probe too
    out, tasks = check_flags(args)
    pairs, picked = choose(args, pairs_of(args.data), check_pairs)
    backbone = load_model(args)
    plan = prepare(backbone, pairs, budget_minutes=args.budget_minutes, batch_size=args.batch_size, tasks=tasks,
                   families=args.families, seed=args.seed)
    estimate = plan.as_dict()
    say(f"estimate: {estimate['estimate_total_seconds'] / 60:.1f} min of {args.budget_minutes:g} "
        f"({', '.join(f'{k} {v:.0f} s' for k, v in estimate['estimate_seconds'].items())})"
        + "".join(f"; {k} left out: {v}" for k, v in plan.skipped.items())
        + "".join(f"; {k} not measured: {v}" for k, v in plan.families_skipped.items())
        + ("; more than the budget: the run stops when the time is up, says what is missing, and the same command "
           "goes on from the cache" if estimate["estimate_total_seconds"] > plan.budget_seconds else ""))
    store = None if args.no_cache else default_store()
    compute = Cached(store, batch_size=args.batch_size, executor=args.executor, address=args.address,
                     model=args.model)
    about = {"data": {"requested": str(args.data), **picked},
             "settings": {"executor": args.executor, "command": command_line(args)}}
    report = build(backbone, pairs, plan, compute=compute, seed=args.seed, n_boot=args.n_boot,
                   batch_size=args.batch_size, about=about, progress=lambda f, m: say(f"[{f:4.0%}] {m}"),
                   started=started)
    try:
        html_path, json_path = save(report, out, shared_plotly=args.shared_plotly)
    except OSError as err:  # the folder went away or filled up during the run; the work itself is in the cache
        raise UserError(f"--out: the report could not be written to {str(out)!r:.80} ({err.strerror or err}); the "
                        "same command writes it from the cache.") from None
    if report["interrupted"]:
        raise UserError(f"Interrupted: the partial report in {html_path} says which sections are missing; the same "
                        "command resumes from the cache.")
    if not report["complete"]:
        say(f"warning: the report is incomplete ({', '.join(report['missing'])} missing or partial; {html_path} says "
            f"why): {RESUME}.")
    return {"html": str(html_path), "json": str(json_path), "model": backbone.identity, "complete": report["complete"],
            "missing": report["missing"], "recommendation": report["recommendation"],
            "seconds": round(clock.now() - started, 1), "budget_seconds": plan.budget_seconds,
            "spent_seconds": report["spent_seconds"], "estimate_seconds": estimate["estimate_seconds"]}


def command_line(args) -> str:
    """The command that regenerates the report, without this machine's paths beyond what the user typed."""
    parts = [f"python -m analysis report --model {args.model} --data {args.data}"]
    if args.sample is not None or args.limit is None:
        parts.append(f"--sample {args.sample if args.sample is not None else args.default_sample}")
    if args.limit is not None:
        parts.append(f"--limit {args.limit}")
    parts.append(f"--seed {args.seed} --tasks {args.tasks} --families {','.join(args.families) or 'none'} "
                 f"--budget-minutes {args.budget_minutes:g} "
                 f"--out {Path(args.out).name}" + (" --shared-plotly" if args.shared_plotly else ""))
    return " ".join(parts)


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
