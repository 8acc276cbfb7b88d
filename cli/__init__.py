"""Command line: `python -m analysis <command> ...` (installed: `embedscope <command> ...`). Each module in
cli/commands/ is one command (it defines HELP, add_arguments(parser) and run(args)); output is one line of
strict JSON on stdout (NaN and infinities written as null), errors one sentence on stderr with exit code 2.
Every command takes --no-budgets to lift the per-request limits of `analysis.core.budgets` (the app never does)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import pkgutil
import sys
import warnings

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.core.finite import finite
from analysis.core.paths import cache_root, can_create, temporary_root, write_problem
from cli import commands
from cli.commands import _common


def main(argv=None) -> int:
    prog = "embedscope" if os.path.basename(sys.argv[0]) == "embedscope" else "python -m analysis"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    runners = {}
    for mod in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"cli.commands.{mod.name}")
        name = getattr(module, "NAME", mod.name.replace("_", "-"))
        # argparse %-formats a sub-command's help (not its description): "95% bootstrap" must not break --help
        p = sub.add_parser(name, help=module.HELP.replace("%", "%%"), description=module.HELP)
        module.add_arguments(p)
        p.add_argument("--no-budgets", action="store_true",
                       help="lift the per-request limits the app enforces (attention tokens, grid cells, bootstrap "
                            "replicates, ...; see analysis/core/budgets.py): for a machine of your own")
        runners[name] = module.run
    args = parser.parse_args(argv)
    # skdim (TwoNN, behind every intrinsic-dimension estimate) imports matplotlib, which writes its font cache and
    # config into the user's home on first import: keep them under the tool's own cache unless the user chose a place
    os.environ.setdefault("MPLCONFIGDIR", str(_matplotlib_folder()))
    shown, warnings.showwarning = warnings.showwarning, _warning_line  # one sentence per warning, like errors
    _common.LOADED.clear()  # a fresh account of the models this run loads (tests run many commands in one process)
    _common.STOOD_IN.clear()  # ... and of what stood in for trained weights it lacks
    try:
        with budgets.lifted() if args.no_budgets else contextlib.nullcontext():
            result = runners[args.command](args)
        if isinstance(result, dict) and (note := _common.precision_note()):
            result.setdefault("precision", note)  # the dtype each method ran in and why, one line each
        if isinstance(result, dict) and _common.STOOD_IN:
            result.setdefault("stand_in", dict(_common.STOOD_IN))  # e.g. the frozen model in place of GIRCSE's
        text = None if result is None else to_json(result)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a disk that fills halfway, a folder made read-only meanwhile: one sentence, not a trace
        if (problem := write_problem(err)) is None:
            raise
        print(f"error: {problem}", file=sys.stderr)
        return 2
    finally:
        warnings.showwarning = shown
    if text is not None:
        print(text)
    return 0


def _matplotlib_folder():
    """The cache's .matplotlib, or a temporary one when the cache folder cannot be written (matplotlib would print
    two lines about it on the first intrinsic-dimension estimate, beside the cache's own one warning)."""
    folder = cache_root() / ".matplotlib"
    return folder if can_create(folder) else temporary_root() / ".matplotlib"


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"warning: {message}", file=sys.stderr if file is None else file)


def to_json(obj) -> str:
    """One line of strict JSON: NaN and infinities become null (bare NaN is not JSON), arrays become lists.
    The one place command output is serialised, so no command needs its own NaN handling."""
    return json.dumps(finite(obj), allow_nan=False)

