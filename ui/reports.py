"""Model reports in the app: reading a report JSON someone uploads, and the few numbers that compare two reports
(the Report page writes them, the Compare models page opens two side by side). Pure functions but `side_by_side`,
so a test can check them without a browser."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from analysis.core.errors import UserError
from analysis.report.build import SCHEMA, problems
from ui.inputs import upload_bytes
from ui.text import md


def read_report(data: bytes, name: str) -> dict:
    """A report JSON (`analysis.report.build`'s schema) from an upload; anything else is one UserError."""
    try:
        report = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise UserError(f"{name} is not a JSON file (write one with `python -m analysis report --out r.html`).") \
            from None
    wrong = problems(report)
    if wrong:
        raise UserError(f"{name} is not a model report of schema {SCHEMA} (made by `python -m analysis report`): "
                        f"{wrong[0]}.")
    return report


def key_numbers(report: dict) -> dict:
    """The numbers that answer "which method, which layers, at what cost" for one report, as one column."""
    q, rec, layers = report["quality"] or {}, report["recommendation"] or {}, report["layers"] or {}
    rows = {r["label"]: r for r in q.get("methods", [])}
    best = rows.get(q.get("best"), {})
    ratio = {r["label"]: r["ratio"] for r in (report["cost"] or {}).get("rows", [])}
    sel = layers.get("selection") or {}
    window = ((layers.get("map") or {}).get("id_window") or {})
    top = (layers.get("map") or {}).get("best") or {}
    fmt = lambda v: "" if v is None else f"{v:.3f}"  # noqa: E731 - local formatting
    return {
        "model": report["model"]["title"], "layers": report["model"]["n_layers"],
        "data": f"{report['data']['name']} ({report['data']['n_pairs']} pairs)",
        "complete": "yes" if report["complete"] else "no: " + ", ".join(report["missing"]),
        "best method": q.get("best", ""), "its Spearman": fmt(best.get("spearman")),
        "best per unit of cost": rec.get("best_per_cost") or "",
        "its cost (x plain forward)": fmt(ratio.get(rec.get("best_per_cost"))),
        "not different from the best": ", ".join(rec.get("not_different", [])),
        "ID rule": sel.get("rule", ""), "ID window": f"{sel.get('start')}-{sel.get('end')}" if sel else "",
        "ID window Spearman (rank)": (f"{fmt(window.get('spearman'))} ({window.get('rank_among_cells')})"
                                      if window else ""),
        "map's best cell": (f"{top['start']}+{top['width']} b={top['bias']:g}: {fmt(top['spearman'])}" if top else ""),
        "ID rule trusted": {True: "yes", False: "no", None: "unknown"}[(rec.get("id_rule") or {}).get("trusted")],
    }


def side_by_side(reports: dict) -> pd.DataFrame:
    """{name: report} -> a table with one column per report (the key numbers as rows)."""
    return pd.DataFrame({name: key_numbers(r) for name, r in reports.items()})


def compare_uploads(key: str) -> None:
    """Two report JSONs uploaded, shown side by side with their recommendations' reasons."""
    files = st.file_uploader("Two report JSONs (`python -m analysis report --out r.html` writes r.json; the Report "
                             "page offers it for download)", type=["json"], accept_multiple_files=True,
                             key=f"{key}_upload")
    if len(files or []) != 2:
        st.info("Upload two report JSONs to compare them.")
        return
    reports = {f.name: read_report(upload_bytes(f), f.name) for f in files}
    st.dataframe(side_by_side(reports), width="stretch")
    cols = st.columns(2)
    for col, (name, r) in zip(cols, reports.items()):
        col.markdown(f"**{md(name)}**")
        for reason in (r["recommendation"] or {}).get("reasons", ["(no recommendation: the report is partial)"]):
            col.markdown(f"- {md(reason)}")
