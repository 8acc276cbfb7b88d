"""`python -m analysis results`: regenerate docs/RESULTS.md and the README's headline table from docs/results/."""

from __future__ import annotations

from pathlib import Path

from analysis.core.errors import UserError
from analysis.experiments.machinery.records import read_all
from analysis.experiments.machinery.render import readme, render

HELP = ("Regenerate docs/RESULTS.md and the README's headline table from the results records in docs/results/ "
        "(each written by `python -m analysis measure <experiment>`); --check writes nothing and says whether every "
        "record validates and the documents are up to date.")
REPO = Path(__file__).resolve().parent.parent.parent


def add_arguments(parser) -> None:
    parser.add_argument("--records", default=str(REPO / "docs" / "results"), help="folder of the results records")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 2 when a record does not validate, or docs/RESULTS.md or the README "
                             "differ from the records")


def run(args) -> dict:
    records = read_all(args.records)  # a damaged record: one sentence naming its file and field
    if not records:
        raise UserError(f"No results records in {args.records}; `python -m analysis measure` writes them there.")
    targets = {REPO / "docs" / "RESULTS.md": render(records)}
    path = REPO / "README.md"
    targets[path] = readme(path.read_text(encoding="utf-8"), records)
    stale = [str(p.relative_to(REPO)) for p, text in targets.items()
             if not p.exists() or p.read_text(encoding="utf-8") != text]
    if args.check:
        if stale:
            raise UserError(f"{', '.join(stale)} differ from the records; run `python -m analysis results`.")
        return {"up_to_date": True, "records": sorted(records)}
    for path, text in targets.items():
        path.write_text(text, encoding="utf-8")
    return {"written": stale, "records": sorted(records)}
