"""`python -m analysis methods [NAME]`: every embedding method, or one, with its parameters and its declared
differences from its paper."""

from __future__ import annotations

HELP = ("List the embedding methods (or one: `methods NAME`) with their parameters, each with its help, and the "
        "method's declared differences from its paper: what the paper does, what this code does, why, and the "
        "parameter that restores the paper's choice.")
SHOWN_META = ("choices", "min", "max", "kind")  # what a parameter's entry shows besides its default and help


def add_arguments(parser) -> None:
    parser.add_argument("name", nargs="?", default=None, help="one method's name (default: all of them)")


def run(args):
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods import list_methods, method_class

    if args.name is not None:
        method_class(args.name)  # an unknown name: one sentence listing the available ones
    rows = [entry(info) for info in list_methods() if args.name in (None, info.name)]
    return rows[0] if args.name is not None else rows


def entry(info) -> dict:
    params = [{"name": p["name"], "default": p["default"], "help": p.get("help", ""),
               **{k: p[k] for k in SHOWN_META if k in p}} for p in info.params if not p.get("hidden")]
    return {"name": info.name, "title": info.title, "summary": info.summary, "params": params,
            "differences_from_the_paper": [{**d.as_json(), "sentence": d.sentence()} for d in info.deviations]}
