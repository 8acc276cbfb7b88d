"""`python -m analysis results`: regenerate docs/RESULTS.md and the README's headline table from docs/results/."""

from __future__ import annotations

import json
from pathlib import Path

from analysis.core.errors import UserError
from analysis.experiments.claims.record import refreshed
from analysis.experiments.machinery.records import read_all
from analysis.experiments.machinery.render import fill_blocks, readme, render

HELP = ("Regenerate docs/RESULTS.md, the README's generated tables, docs/BUDGETS.md's measured blocks and the published model reports' Claims sections "
        "(docs/reports/) from the results records in docs/results/ (each written by `python -m analysis measure "
        "<experiment>`); --check writes nothing and says whether every record validates and the documents are up to "
        "date.")
REPO = Path(__file__).resolve().parent.parent.parent


def add_arguments(parser) -> None:
    parser.add_argument("--records", default=str(REPO / "docs" / "results"), help="folder of the results records")
    parser.add_argument("--reports", default=str(REPO / "docs" / "reports"),
                        help="folder of the published model reports (<model>.json beside its HTML)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 2 when a record does not validate, or docs/RESULTS.md, the README "
                             "or a report differ from the records")


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
    if args.check:
        if stale:
            raise UserError(f"{', '.join(stale)} differ from the records; run `python -m analysis results`.")
        return {"up_to_date": True, "records": sorted(records)}
    for path, text in targets.items():
        path.write_text(text, encoding="utf-8")
    from analysis.report import (
        html as report_html,  # lazy: keeps plotly off the command line's start
    )

    for path, report in reports.items():  # the JSON and its HTML, each written atomically
        shared = "--shared-plotly" in (report.get("settings") or {}).get("command", "")
        report_html.save(report, path.with_suffix(".html"), shared_plotly=shared)
    return {"written": stale, "records": sorted(records)}


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
