"""A published model report kept in step with the records it cites.

A report (`docs/reports/<model>.json` and its HTML) copies the model's claims board from its published record
(`docs/results/claims_<model>.json`). When the board is measured again, the copy is stale: `python -m analysis
results` rewrites the report's Claims section from the record (and its HTML), and `results --check` fails until it
has. A report whose board came from a cache, not a record, cites nothing and is left as it is.

    report, problem = refreshed(report, records)   # (the report with its citations renewed, or None when current;
                                                   #  a sentence when only rebuilding the report can fix it)
"""

from __future__ import annotations

import re

from analysis.experiments.claims.record import record_source, report_section

CITED = re.compile(r"the published record docs/results/([A-Za-z0-9_]+)\.json")


def refreshed(report: dict, records: dict) -> tuple[dict | None, str | None]:
    """(`report` with its Claims section read again from the record it cites, or None when it is current; a reason
    when the citation cannot be renewed: the record is gone, or it measured other weights)."""
    section = report.get("claims") or {}
    found = CITED.search(section.get("source") or "")
    if found is None:
        return None, None
    rec = records.get(found.group(1))
    if rec is None:
        return None, f"cites docs/results/{found.group(1)}.json, which no longer exists: rebuild the report"
    board = rec.extra.get("board") or {}
    if board.get("model", {}).get("identity") != report.get("model", {}).get("identity"):
        return None, f"cites docs/results/{rec.id}.json, now measured on other weights: rebuild the report"
    current = report_section(board, record_source(rec))
    if current == section:
        return None, None
    return {**report, "claims": current}, None
