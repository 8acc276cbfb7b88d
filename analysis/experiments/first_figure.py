"""Seconds to the first figure of every lesson step and every page, as a newcomer meets them: the record the
README's table is rendered from, so the "no waiting in class" claim is a measurement anyone can repeat.

The browser work is `scripts/bench_first_figure.py` (headless Chromium against `streamlit run app.py`; it knows the
pages and lessons, which this library may not import), run as a child process (`machinery.scripts`); this module
turns its rows into a typed record with the machine's load, the commit and the targets each view met.

    python -m analysis measure first_figure            # every address on a fresh install (~10 min)
    python -m analysis measure first_figure --warm     # after `python -m analysis warm`: one server, every address
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.errors import UserError
from analysis.core.params import param
from analysis.experiments import Measured
from analysis.experiments.machinery.scripts import run_script
from analysis.experiments.machinery.records import Model, Sample, Table

ID = "first_figure"
TITLE = "Seconds to the first figure of every view, in headless Chromium"
HELP = ("Every lesson step and page opened in headless Chromium: on a fresh install (an empty cache but for the "
        "converted models and the shipped seeds, a new server per address, timed from its start) and again in a "
        "second tab; or, with --warm, after `warm`. The README's first-visit table is rendered from it.")
FRESH_TARGET, AGAIN_TARGET = 10.0, 3.0  # seconds: a fresh install's first figure, and every visit after it
BLOCK = "first-figure"  # the README block this record fills (`render.readme`)


@dataclass(frozen=True)
class Config:
    warm: bool = param(False, "time every address on one warmed server instead of a fresh install per address")
    only: str = param("", "only the views whose name contains this (a smoke run)")
    timeout: float = param(60.0, "seconds to wait for a view's figure", min=5, limit=600)


def measure(config: Config, compute, progress) -> Measured:
    progress(0, 1, "opening every view in headless Chromium")
    measured = run_script("bench_first_figure.py", ["--timeout", str(config.timeout),
                                                    *(["--only", config.only] if config.only else []),
                                                    *([] if config.warm else ["--fresh"])])
    rows = measured["rows"]
    if not rows:
        raise UserError(f"No view's name contains {config.only!r}.")
    progress(1, 1, "done")
    backbone = compute.backbone("default")
    table = warm_table(rows) if config.warm else fresh_table(rows)
    return Measured(data="every lesson step and page of the app" + (f" whose name contains {config.only!r}"
                                                                    if config.only else ""),
                    sample=Sample(n=len(rows), how="every address (none sampled)"),
                    models=[Model(name=backbone.facts.name, identity=backbone.identity)],
                    tables=[table], findings=findings(rows, config.warm),
                    extra={"rows": rows, "script_load": [measured["load_before"], measured["load_after"]],
                           "no_figure": measured["NO_FIGURE"]})


def fresh_table(rows: list[dict]) -> Table:
    return Table("views", "Seconds to the first figure on a fresh install (from the server's start), then again",
                 ("view", "fresh install", "what was seen", f"within {FRESH_TARGET:g} s", "second visit",
                  f"within {AGAIN_TARGET:g} s"),
                 tuple((r["view"], r["fresh"], r["fresh_seen"], r["fresh"] <= FRESH_TARGET, r["again"],
                        r["again"] <= AGAIN_TARGET) for r in rows), digits={"fresh install": 1, "second visit": 1},
                 notes="Per address: a new empty cache holding only the converted models and the shipped seeds, a "
                       "new `streamlit run app.py`, timed from its start; then the same address in a second tab.")


def warm_table(rows: list[dict]) -> Table:
    return Table("views", "Seconds to the first figure after `python -m analysis warm` (one server)",
                 ("view", "seconds", "what was seen", f"within {AGAIN_TARGET:g} s"),
                 tuple((r["view"], r["warm"], r["warm_seen"], r["warm"] <= AGAIN_TARGET) for r in rows),
                 digits={"seconds": 1})


def findings(rows: list[dict], warm: bool) -> list[str]:
    if warm:
        slowest = max(rows, key=lambda r: r["warm"])
        met = sum(r["warm"] <= AGAIN_TARGET for r in rows)
        return [f"{met} of {len(rows)} views drew within {AGAIN_TARGET:g} s after warm; the slowest, "
                f"{slowest['view']}, in {slowest['warm']:.1f} s."]
    slowest = max(rows, key=lambda r: r["fresh"])
    fresh = sum(r["fresh"] <= FRESH_TARGET for r in rows)
    again = sum(r["again"] <= AGAIN_TARGET for r in rows)
    return [f"{fresh} of {len(rows)} views drew their first figure within {FRESH_TARGET:g} s of a fresh server's "
            f"start (the slowest, {slowest['view']}, in {slowest['fresh']:.1f} s), and {again} of {len(rows)} within "
            f"{AGAIN_TARGET:g} s on a second visit."]


def block(records: list) -> str:
    """The README's first-visit table: the fresh-install record's views in three columns of (view, fresh, again),
    lesson steps folded into one row per lesson, with the record's date, commit and load."""
    fresh = [r for r in records if not r.config.get("warm") and not r.config.get("only")]
    if not fresh:
        return "(not measured yet: `python -m analysis measure first_figure`)"
    rec = max(fresh, key=lambda r: r.date)
    cells = folded(rec.extra["rows"])
    lines = ["| view | fresh | again " * 3 + "|", "|---|---|---" * 3 + "|"]
    for i in range(0, len(cells), 3):
        row = cells[i:i + 3] + [("", "", "")] * (3 - len(cells[i:i + 3]))
        lines.append("| " + " | ".join(" | ".join(c) for c in row) + " |")
    m = rec.machine
    load = "/".join(f"{x:.1f}" for x in (m.load_before if m else ())[:1]) or "?"
    commit = (m.git_commit if m else None) or rec.code_version
    return (f"Seconds to the first figure in headless Chromium on a fresh install, then in a second tab "
            f"(`{rec.command}`, {rec.date}, at {commit}, {m.cores if m else '?'} cores, load {load} before; "
            f"{rec.findings[0] if rec.findings else ''}):\n\n" + "\n".join(lines))


def folded(rows: list[dict]) -> list[tuple[str, str, str]]:
    """(view, fresh, again) cells: a lesson's steps in one cell ("why-last, 1-4"), every page in its own."""
    lessons: dict[str, list[dict]] = {}
    cells = []
    for r in rows:
        if r["view"].startswith("lesson "):
            lessons.setdefault(r["view"].split()[1], []).append(r)
        else:
            name = r["view"].removeprefix("page ")
            cells.append((name + (" (heading)" if r["fresh_seen"] != "figure" else ""), f"{r['fresh']:.1f}",
                          f"{r['again']:.1f}"))
    steps = [(f"{lesson}, steps 1-{len(rs)}", ", ".join(f"{r['fresh']:.1f}" for r in rs),
              spread([r["again"] for r in rs])) for lesson, rs in lessons.items()]
    return steps + cells


def spread(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.1f}" if round(lo, 1) == round(hi, 1) else f"{lo:.1f}-{hi:.1f}"
