"""Command line: `python -m analysis <command> ...` (installed: `embedscope <command> ...`). Each module in
analysis/commands/ is one command (it defines HELP, add_arguments(parser) and run(args)); output is JSON on
stdout, errors one sentence on stderr with exit code 2."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import sys
import warnings

from analysis import commands
from analysis.errors import UserError


def main(argv=None) -> int:
    prog = "embedscope" if os.path.basename(sys.argv[0]) == "embedscope" else "python -m analysis"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    runners = {}
    for mod in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if mod.name.startswith("_"):
            continue
        module = importlib.import_module(f"analysis.commands.{mod.name}")
        name = getattr(module, "NAME", mod.name.replace("_", "-"))
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        runners[name] = module.run
    args = parser.parse_args(argv)
    shown, warnings.showwarning = warnings.showwarning, _warning_line  # one sentence per warning, like errors
    try:
        result = runners[args.command](args)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        warnings.showwarning = shown
    if result is not None:
        print(json.dumps(result, default=_jsonable))
    return 0


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"warning: {message}", file=sys.stderr if file is None else file)


def _jsonable(obj):
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


if __name__ == "__main__":
    sys.exit(main())
