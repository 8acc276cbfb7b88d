"""Measured numbers in the app's prose, read from the published records (docs/results/), never typed (#48).

A lesson or a page's text names the records it reads in its module's `CITES` (each pinned to the record's content
as the words were written: `analysis.experiments.machinery.citations`, which `results --check` holds them to) and
reads every number through them:

    CITES = {"gircse": "5c0e3b9a17d2"}
    cited = Cited(CITES)
    g = cited("gircse")
    g.value("scores", "GIRCSE K=5", "Spearman")           # "0.762": a number cell, to 3 decimals
    g.text("paired", "GIRCSE K=5 − Causal-EOS K=0", "all")  # "-0.030 [-0.055, -0.007]": the cell as recorded
    cited("compression").percent("heldout", "sentence", "all")  # "99.5%": a rate cell's number
    cited("compression").rate("heldout", "sentence", "all")     # "99.5% [97.2, 99.9]"

Rows are found by their first cell, columns by name (`after`: the first column of that name after another, for the
tables that repeat a column per model). A record that is absent, or lacks the cell, reads as "?": a page never fails
over its prose, and `results --check` says which record is missing.
"""

from __future__ import annotations

import re

from analysis.experiments.machinery import records

MISSING = "?"
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def read_record(record_id: str):
    """The published record `record_id`, or None (tests replace this to read other numbers)."""
    return records.read(record_id)


class Cited:
    """The records a module's prose reads: only those it pins (`CITES`), so no number escapes the check."""

    def __init__(self, pins: dict):
        self.pins = pins

    def __call__(self, record_id: str) -> Reading:
        if record_id not in self.pins:
            raise KeyError(f"{record_id!r} is read but not pinned in CITES")
        return Reading(read_record(record_id))


class Reading:
    """Cells of one record, formatted for a sentence."""

    def __init__(self, record):
        self.record = record

    def cell(self, table: str, row, column: str, after: str | None = None):
        """The raw cell (None when the record, the table, the row or the column is missing)."""
        if self.record is None or not self.record.has_table(table):
            return None
        t = self.record.table(table)
        start = t.columns.index(after) if after in t.columns else 0
        if column not in t.columns[start:]:
            return None
        found = next((r for r in t.rows if r and r[0] == row), None)
        return None if found is None else found[t.columns.index(column, start)]

    def column(self, table: str, column: str) -> list:
        """Every row's cell under `column`, in the table's order ([] when the record or the column is missing)."""
        if self.record is None or not self.record.has_table(table):
            return []
        t = self.record.table(table)
        return t.column(column) if column in t.columns else []

    def number(self, table: str, row, column: str, after: str | None = None) -> float | None:
        """The cell as a number: a number cell, or the first number of a text cell ("99.5 [97.2, 99.9]" -> 99.5)."""
        c = self.cell(table, row, column, after)
        if isinstance(c, bool) or c is None:
            return None
        if isinstance(c, (int, float)):
            return float(c)
        m = _NUMBER.search(str(c))
        return float(m.group()) if m else None

    def value(self, table: str, row, column: str, digits: int = 3, after: str | None = None) -> str:
        """A number cell to `digits` decimals (a whole number with thousands separators), or a text cell's first
        number as the record wrote it."""
        c = self.cell(table, row, column, after)
        if isinstance(c, str):
            m = _NUMBER.search(c)
            return m.group() if m else MISSING
        if isinstance(c, bool) or not isinstance(c, (int, float)):
            return MISSING
        return f"{c:,}" if isinstance(c, int) else f"{c:.{digits}f}"

    def percent(self, table: str, row, column: str, digits: int = 0) -> str:
        """A rate's number with "%": a text cell's as recorded, a number cell (already in %) to `digits` decimals."""
        shown = self.value(table, row, column, digits)
        return MISSING if shown == MISSING else f"{shown}%"

    def rate(self, table: str, row, column: str) -> str:
        """A rate cell "99.5 [97.2, 99.9]" as "99.5% [97.2, 99.9]"."""
        c = self.cell(table, row, column)
        return MISSING if not isinstance(c, str) else _NUMBER.sub(lambda m: f"{m.group()}%", c, count=1)

    def text(self, table: str, row, column: str, after: str | None = None) -> str:
        """A text cell as recorded (a paired difference "-0.005 [-0.036, +0.028]", a layer range "27-29")."""
        c = self.cell(table, row, column, after)
        return MISSING if c is None else str(c)

    def sample(self) -> str:
        """How many items the record measured ("500"), with thousands separators."""
        n = getattr(getattr(self.record, "sample", None), "n", None)
        return MISSING if n is None else f"{n:,}"

    def extra(self, *keys):
        """A value under the record's `extra` (its raw numbers), or None."""
        value = getattr(self.record, "extra", None)
        for k in keys:
            value = value.get(k) if isinstance(value, dict) else None
        return value
