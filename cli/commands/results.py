"""`python -m analysis results`: regenerate docs/RESULTS.md and the README's headline table from docs/results/, and
check that the app's prose that reads records (lessons, page captions: their `CITES`) was written against them."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from analysis.core.errors import UserError
from analysis.experiments.claims.record import refreshed
from analysis.experiments.machinery.citations import stale as stale_citations
from analysis.experiments.machinery.records import read_all
from analysis.experiments.machinery.render import fill_blocks, readme, render

HELP = ("Regenerate docs/RESULTS.md, the README's generated tables, docs/BUDGETS.md's measured blocks and the published model reports' Claims sections "
        "(docs/reports/) from the results records in docs/results/ (each written by `python -m analysis measure "
        "<experiment>`); --check writes nothing and says whether every record validates, the documents are up to "
        "date and the app's lessons and pages were written against the records they read.")
REPO = Path(__file__).resolve().parent.parent.parent
PROSE = ("ui", "pages")  # where modules whose words read records declare them (`CITES`)


def add_arguments(parser) -> None:
    parser.add_argument("--records", default=str(REPO / "docs" / "results"), help="folder of the results records")
    parser.add_argument("--reports", default=str(REPO / "docs" / "reports"),
                        help="folder of the published model reports (<model>.json beside its HTML)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 2 when a record does not validate, docs/RESULTS.md, the README or a "
                             "report differ from the records, or a lesson or page cites a record that has changed "
                             "since its words were written")


def run(args) -> dict:
    records = read_all(args.records)  # a damaged record: one sentence naming its file and field
    if not records:
        raise UserError(f"No results records in {args.records}; `python -m analysis measure` writes them there.")
    targets = {REPO / "docs" / "RESULTS.md": render(records)}
    path = REPO / "README.md"
    targets[path] = readme(path.read_text(encoding="utf-8"), records)
    path = REPO / "docs" / "BUDGETS.md"  # its measured paragraphs are blocks of their records too
    targets[path] = fill_blocks(path.read_text(encoding="utf-8"), records)
    stale = [_shown(p) for p, text in targets.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    reports, broken = _reports(Path(args.reports), records)
    stale += [_shown(p) for p in reports]
    if broken:
        raise UserError("; ".join(broken) + ".")
    reread = stale_citations(prose_files(), records, _shown)  # no command can rewrite the words: a reader must
    if args.check:
        problems = [f"{', '.join(stale)} differ from the records; run `python -m analysis results`"] if stale else []
        if problems or reread:
            raise UserError("; ".join(problems + reread) + ".")
        return {"up_to_date": True, "records": sorted(records)}
    for line in reread:
        warnings.warn(line + ".", stacklevel=1)
    for path, text in targets.items():
        path.write_text(text, encoding="utf-8")
    from analysis.report import (
        html as report_html,  # lazy: keeps plotly off the command line's start
    )

    for path, report in reports.items():  # the JSON and its HTML, each written atomically
        shared = "--shared-plotly" in (report.get("settings") or {}).get("command", "")
        report_html.save(report, path.with_suffix(".html"), shared_plotly=shared)
    return {"written": stale, "records": sorted(records), **({"reread": reread} if reread else {})}


def prose_files() -> list[Path]:
    """The app's modules that may read records in their words (`PROSE`), read as text by `stale_citations`."""
    return sorted(f for folder in PROSE for f in (REPO / folder).rglob("*.py"))


def _reports(folder: Path, records: dict) -> tuple[dict, list]:
    """({report path: the report with its citations renewed} for every stale report, [why a report cannot be
    renewed, naming it])."""
    renewed, broken = {}, []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            broken.append(f"{_shown(path)} cannot be read ({err})")
            continue
        if not isinstance(report, dict) or "model" not in report:
            continue  # not a model report
        new, problem = refreshed(report, records)
        if problem:
            broken.append(f"{_shown(path)} {problem}")
        elif new is not None:
            renewed[path] = new
    return renewed, broken


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
