"""`python -m analysis claims --model M --budget-minutes T --out claims.html`: does each paper's headline claim hold
on this model? The claims board (`analysis.experiments.claims`) as one standalone HTML file and a JSON beside it:
an estimate from a short timed probe first, then the claims cheapest first, each started only when it still fits
the budget, through the compute cache (the same command run again resumes)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from analysis.core.errors import UserError
from analysis.core.finite import finite
from analysis.core.options import add_options, from_args
from analysis.core.standalone import save
from analysis.experiments.claims.board import choose, prepare, summary
from analysis.experiments.claims.board import run as judge
from analysis.experiments.claims.context import Settings, check
from analysis.experiments.claims.html import render
from analysis.report import clock
from cache import default_store
from cache.claims import save_board
from cli.commands._common import add_model_arguments, check_html_out, load_model

HELP = ("Judge the five papers' headline claims on one model, each by its verdict rule fixed before measuring (holds "
        "here, reversed here, not resolved, cannot run here), with the deviations that bear on each; --out "
        "claims.html also writes claims.json. The estimate is printed before any work; the budget is enforced claim "
        "by claim; the same command resumes from the cache.")


def add_arguments(parser) -> None:
    parser.add_argument("--out", required=True, help="the HTML file to write (its .json is written beside it)")
    parser.add_argument("--budget-minutes", type=float, default=60.0,
                        help="time for the whole board (default 60); a claim starts only when its estimate fits")
    parser.add_argument("--claims", default="", help="only these claims, comma-separated ids (default: all)")
    parser.add_argument("--shared-plotly", action="store_true",
                        help="load plotly.js from plotly.gz.js beside the HTML instead of embedding it")
    parser.add_argument("--no-cache", action="store_true", help="compute everything; read and store nothing")
    add_options(parser, Settings)
    add_model_arguments(parser, dtype="float32")  # a published board compares across machines


def check_flags(args) -> tuple[Path, list]:
    """Every flag that needs no model, before any work: (the output path, the claims chosen)."""
    out = check_html_out(args.out, args.budget_minutes)
    return out, choose([c.strip() for c in args.claims.split(",") if c.strip()])


def run(args) -> dict:
    from analysis.compute.direct import Direct  # lazy: keeps torch off the pages' and the command line's start
    started = clock.now()  # the budget covers the whole command: loading the model and the probe too
    out, claims = check_flags(args)
    settings = check(from_args(Settings, args))  # before the model loads
    backbone = load_model(args)
    store = None
    if args.no_cache:
        compute = Direct()
    else:
        from cache.cached import Cached  # lazy: keeps torch off the pages' and the command line's start

        store = default_store()
        compute = Cached(store)
    plan = prepare(backbone, compute, settings, claims=claims)
    estimate = plan.as_dict()
    say(f"estimate: {estimate['estimate_seconds'] / 60:.1f} min on an empty cache for {estimate['to_measure']} claims "
        f"of {len(claims)} (budget {args.budget_minutes:g} min); {estimate['refused']} cannot run here")
    board = judge(plan, budget_seconds=args.budget_minutes * 60, started=started,
                  progress=lambda done, total, message: say(f"[{done / total:4.0%}] {message}"))
    if store is not None:
        save_board(store, board)
    json_path = out.with_suffix(".json")
    try:
        save(render([board], shared_plotly=args.shared_plotly), out, shared_plotly=args.shared_plotly,
             extra={json_path: json.dumps(finite(board), indent=1, allow_nan=False)})
    except OSError as err:  # the folder went away or filled up during the run; the work itself is in the cache
        raise UserError(f"--out: the board could not be written to {str(out)!r:.80} ({err.strerror or err}); the "
                        "same command writes it from the cache.") from None
    if board["interrupted"]:
        raise UserError(f"Interrupted: the partial board in {out} says which claims are not measured; the same "
                        "command resumes from the cache.")
    return {"html": str(out), "json": str(json_path), "model": backbone.identity, "counts": board["counts"],
            "summary": summary(board), "complete": board["complete"], "spent_seconds": board["spent_seconds"],
            "estimate_seconds": estimate["estimate_seconds"]}


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
