"""`python -m analysis data list` and `python -m analysis data fetch stsb|sick|sts12|...|sts16|scifact|banking77|all`:
which data sets this machine has and how to get the others; downloading the public ones into the data folder
(EMBEDSCOPE_DATA), checked and bounded (`analysis.data.fetch`)."""

from __future__ import annotations

import sys

from analysis.core.errors import UserError
from analysis.core.paths import data_dir
from analysis.data.datasets import REGISTRY
from analysis.data.fetch import SOURCES, fetch, source

HELP = ("List the data sets (present or not, and how to get each), or fetch the public sets (STS, SciFact, "
        "Banking77) into the data folder (EMBEDSCOPE_DATA; default ../shared/data next to the repository): "
        "downloaded from the authors' servers, checked (published or pinned digests where known, else read by the "
        "same reader the tool uses), then stored.")


def add_arguments(parser) -> None:
    parser.add_argument("action", choices=["list", "fetch"], help="list: every data set; fetch: download some")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"with fetch: {', '.join(SOURCES)}, or all")
    parser.add_argument("--base-url", default=None,
                        help="fetch from a mirror serving the archives (or files) under their own names instead of "
                             "the authors' servers: a URL, or a folder on this machine holding files downloaded by "
                             "hand (e.g. /home/me/downloads or file:///home/me/downloads)")
    parser.add_argument("--force", action="store_true", help="fetch again even when the files are already there")


def run(args):
    if args.action == "list":
        if args.names:
            raise UserError("data list takes no names; use data fetch NAME to download one.")
        return {"data_folder": str(data_dir()), "sets": _rows()}
    return {"data_folder": str(data_dir()), "fetched": [_fetch(n, args) for n in _names(args.names)]}


def _names(names: list[str]) -> list[str]:
    if not names:
        raise UserError(f"data fetch needs the sets to get: {', '.join(SOURCES)}, or all.")
    chosen = list(SOURCES) if "all" in names else list(dict.fromkeys(names))
    for n in chosen:
        source(n)  # an unknown name fails before anything is downloaded
    return chosen


def _fetch(name: str, args) -> dict:
    print(f"{name}: {source(name).label} ...", file=sys.stderr, flush=True)
    return fetch(name, base_url=args.base_url, force=args.force)


def _rows() -> list[dict]:
    return [{"id": d.id, "label": d.label, "kind": d.kind, "present": d.present(), "get": d.how_to_get(),
             "tasks": list(d.tasks),
             **({"licence": source(d.fetch_name).licence, "checked": source(d.fetch_name).pinned or "by its reader"}
                if d.fetch_name else {})} for d in REGISTRY]
