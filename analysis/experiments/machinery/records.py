"""A results record: what an experiment measured, typed, with what a stranger needs to reproduce and judge it.

    record = Record(...)                    # built by `analysis.experiments.run`, never by hand
    write(record, folder)                   # <folder>/<id>.json, validated first, atomically
    read("gircse")                          # a Record, or None when absent; RecordError names file and field
    record.table("paired").column("all")    # pages read tables and series by name, never by title

Schema 2 (schema 1 was the untyped dicts the measuring scripts wrote): every field below is present; a field
that was not recorded (a record migrated from schema 1 that could not be re-measured) is listed in `unknown`,
never guessed. Table cells are JSON scalars, or a two-number interval `[lo, hi]`; a row has one cell per
column. `extra` holds an experiment's raw numbers under its own keys (the renderer never shows it).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from analysis.core.errors import UserError
from analysis.core.paths import records_folder

SCHEMA = 2


class RecordError(UserError):
    """A record whose shape is not schema 2: the message names the file and the field."""


@dataclass(frozen=True)
class Table:
    name: str  # the stable key readers use ("scores", "paired", ...)
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]
    notes: str = ""
    digits: dict = field(default_factory=dict)  # column -> decimals shown (default 3 for floats)

    def column(self, name: str) -> list:
        """Every row's cell under column `name`."""
        if name not in self.columns:
            raise KeyError(f"table {self.name!r} has no column {name!r} (it has {', '.join(self.columns)})")
        i = self.columns.index(name)
        return [row[i] for row in self.rows]

    def dicts(self) -> list[dict]:
        """The rows as {column: cell}."""
        return [dict(zip(self.columns, row)) for row in self.rows]

    def row(self, first) -> dict | None:
        """The row whose first cell is `first`, as {column: cell}; None when there is none."""
        return next((dict(zip(self.columns, r)) for r in self.rows if r and r[0] == first), None)


@dataclass(frozen=True)
class Series:
    """Lines over one x axis (a curve a page draws): y values per line, optionally an interval per point."""

    name: str
    title: str
    x: str  # the x axis' label
    xs: tuple
    lines: dict  # label -> y values, one per x (None where that line has no point)
    intervals: dict = field(default_factory=dict)  # label -> [lo, hi] (or None) per x
    y: str = ""
    notes: str = ""


@dataclass(frozen=True)
class Sample:
    n: int | None  # items measured (pairs, questions, queries, ...)
    how: str  # "all of it", "stratified by genre", "the held-out generator", ...
    of: int | None = None  # the whole it was drawn from (None: a generated set)
    seed: int | None = None
    strata: dict = field(default_factory=dict)  # stratum -> count


@dataclass(frozen=True)
class Model:
    name: str  # the short name a command takes ("smollm2-135m")
    identity: str | None  # the exact weights (`Backbone.identity`); None when not recorded
    weights: dict = field(default_factory=dict)  # trained artefact (as shown) -> its weights' SHA-256


@dataclass(frozen=True)
class Machine:
    cores: int | None
    torch: str | None
    threads: int | None
    python: str | None
    load_before: tuple = ()  # 1, 5 and 15 minute load averages when the measurement started
    load_after: tuple = ()  # ... and when it ended
    transformers: str | None = None  # versions of the packages that computed it (None: not recorded at the time)
    mteb: str | None = None
    git_commit: str | None = None  # the checkout's commit, "+modified" when tracked files differed; None from a wheel


@dataclass(frozen=True)
class Record:
    id: str  # the file's name: the experiment's id, or "<experiment>_<variant>"
    experiment: str  # the registry id that wrote it (`python -m analysis measure <experiment>`)
    title: str
    command: str  # the exact command that reproduces it, derived from `config`
    config: dict  # the experiment's settings (`command` is re-derived from them in the tests)
    data: str  # what was measured on, in words
    sample: Sample | None
    models: tuple[Model, ...]
    code_version: str | None  # `analysis.code_version` of the experiment's module and everything it imports
    date: str
    wall_seconds: float | None
    machine: Machine | None
    tables: tuple[Table, ...]
    series: tuple[Series, ...] = ()
    findings: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()  # provenance fields not recorded at the time (never guessed)
    notes: tuple[str, ...] = ()  # how the record came to be, where that is not just `command`
    extra: dict = field(default_factory=dict)  # raw numbers under the experiment's own keys
    schema: int = SCHEMA

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(f"record {self.id!r} has no table {name!r} (it has {', '.join(t.name for t in self.tables)})")

    def series_named(self, name: str) -> Series:
        for s in self.series:
            if s.name == name:
                return s
        raise KeyError(f"record {self.id!r} has no series {name!r}")

    def has_table(self, name: str) -> bool:
        return any(t.name == name for t in self.tables)

    def as_json(self) -> dict:
        return _plain(asdict(self))


def _plain(value):
    """Tuples as lists, recursively (what JSON holds)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# --- reading and validating ------------------------------------------------------------------------------------

_NUMBER = (int, float)
_SCALAR = (str, int, float, bool, type(None))


def _need(d: dict, key: str, kinds, where: str, optional: bool = False):
    if key not in d:
        if optional:
            return None
        raise RecordError(f"{where} has no '{key}'.")
    value = d[key]
    if optional and value is None:
        return None
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _as_tuple(kinds)):
        names = "/".join(k.__name__ for k in _as_tuple(kinds))
        raise RecordError(f"{where}.{key} should be {names}, not {type(value).__name__}.")
    return value


def _as_tuple(kinds) -> tuple:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _cell_ok(cell) -> bool:
    if isinstance(cell, _SCALAR):
        return True
    return isinstance(cell, list) and len(cell) == 2 and all(isinstance(x, _NUMBER + (type(None),)) for x in cell)


def _table(d, where: str) -> Table:
    if not isinstance(d, dict):
        raise RecordError(f"{where} should be an object, not {type(d).__name__}.")
    columns = _need(d, "columns", list, where)
    if not all(isinstance(c, str) for c in columns):
        raise RecordError(f"{where}.columns should be a list of strings.")
    rows = _need(d, "rows", list, where)
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(columns):
            raise RecordError(f"{where}.rows[{i}] should be a list of {len(columns)} cells (one per column).")
        bad = next((j for j, c in enumerate(row) if not _cell_ok(c)), None)
        if bad is not None:
            raise RecordError(f"{where}.rows[{i}][{bad}] is not a number, text, null or [lo, hi] interval.")
    digits = _need(d, "digits", dict, where, optional=True) or {}
    return Table(name=_need(d, "name", str, where), title=_need(d, "title", str, where), columns=tuple(columns),
                 rows=tuple(tuple(r) for r in rows), notes=_need(d, "notes", str, where, optional=True) or "",
                 digits=digits)


def _series(d, where: str) -> Series:
    if not isinstance(d, dict):
        raise RecordError(f"{where} should be an object, not {type(d).__name__}.")
    xs = _need(d, "xs", list, where)
    lines = _need(d, "lines", dict, where)
    for label, ys in lines.items():
        if not isinstance(ys, list) or len(ys) != len(xs):
            raise RecordError(f"{where}.lines[{label!r}] should have one value per x ({len(xs)}).")
    intervals = _need(d, "intervals", dict, where, optional=True) or {}
    for label, cis in intervals.items():
        if not isinstance(cis, list) or len(cis) != len(xs):
            raise RecordError(f"{where}.intervals[{label!r}] should have one interval per x ({len(xs)}).")
    return Series(name=_need(d, "name", str, where), title=_need(d, "title", str, where),
                  x=_need(d, "x", str, where), xs=tuple(xs), lines=lines, intervals=intervals,
                  y=_need(d, "y", str, where, optional=True) or "",
                  notes=_need(d, "notes", str, where, optional=True) or "")


def from_json(d, where: str = "record") -> Record:
    """A Record from its JSON form, every field checked; RecordError names `where` and the field."""
    if not isinstance(d, dict):
        raise RecordError(f"{where} should be a JSON object, not {type(d).__name__}.")
    if d.get("schema") != SCHEMA:
        raise RecordError(f"{where} is schema {d.get('schema')!r}, not {SCHEMA}; write it again with "
                          "`python -m analysis measure`.")
    sample = _need(d, "sample", dict, where, optional=True)
    if sample is not None:
        sample = Sample(n=_need(sample, "n", int, f"{where}.sample", optional=True),
                        how=_need(sample, "how", str, f"{where}.sample"),
                        of=_need(sample, "of", int, f"{where}.sample", optional=True),
                        seed=_need(sample, "seed", int, f"{where}.sample", optional=True),
                        strata=_need(sample, "strata", dict, f"{where}.sample", optional=True) or {})
    models = []
    for i, m in enumerate(_need(d, "models", list, where)):
        w = f"{where}.models[{i}]"
        if not isinstance(m, dict):
            raise RecordError(f"{w} should be an object.")
        models.append(Model(name=_need(m, "name", str, w), identity=_need(m, "identity", str, w, optional=True),
                            weights=_need(m, "weights", dict, w, optional=True) or {}))
    machine = _need(d, "machine", dict, where, optional=True)
    if machine is not None:
        w = f"{where}.machine"
        machine = Machine(cores=_need(machine, "cores", int, w, optional=True),
                          torch=_need(machine, "torch", str, w, optional=True),
                          threads=_need(machine, "threads", int, w, optional=True),
                          python=_need(machine, "python", str, w, optional=True),
                          load_before=tuple(_need(machine, "load_before", list, w, optional=True) or ()),
                          load_after=tuple(_need(machine, "load_after", list, w, optional=True) or ()),
                          transformers=_need(machine, "transformers", str, w, optional=True),
                          mteb=_need(machine, "mteb", str, w, optional=True),
                          git_commit=_need(machine, "git_commit", str, w, optional=True))
    tables = _need(d, "tables", list, where)
    series = _need(d, "series", list, where, optional=True) or []
    findings = _need(d, "findings", list, where, optional=True) or []
    if not all(isinstance(f, str) for f in findings):
        raise RecordError(f"{where}.findings should be a list of sentences.")
    unknown = _need(d, "unknown", list, where, optional=True) or []
    notes = _need(d, "notes", list, where, optional=True) or []
    names = [t.get("name") if isinstance(t, dict) else None for t in tables]
    if len(set(names)) != len(names):
        raise RecordError(f"{where}.tables has two tables of one name; readers find tables by name.")
    wall = _need(d, "wall_seconds", _NUMBER, where, optional=True)
    return Record(id=_need(d, "id", str, where), experiment=_need(d, "experiment", str, where),
                  title=_need(d, "title", str, where), command=_need(d, "command", str, where),
                  config=_need(d, "config", dict, where), data=_need(d, "data", str, where), sample=sample,
                  models=tuple(models), code_version=_need(d, "code_version", str, where, optional=True),
                  date=_need(d, "date", str, where), wall_seconds=None if wall is None else float(wall),
                  machine=machine, tables=tuple(_table(t, f"{where}.tables[{i}]") for i, t in enumerate(tables)),
                  series=tuple(_series(s, f"{where}.series[{i}]") for i, s in enumerate(series)),
                  findings=tuple(findings), unknown=tuple(unknown), notes=tuple(notes),
                  extra=_need(d, "extra", dict, where, optional=True) or {})


def validate(record: Record) -> Record:
    """`record` if its JSON form reads back as itself (what `write` checks before anything is written)."""
    return from_json(json.loads(json.dumps(record.as_json(), allow_nan=False)), f"record {record.id!r}")


# --- where records live ----------------------------------------------------------------------------------------

def folder() -> Path:
    """Where the published records are (`analysis.core.paths.records_folder`)."""
    return records_folder()


def reports_folder() -> Path:
    """Where the published model reports are: `docs/reports` in a checkout, the wheel's `recorded/reports/`."""
    return folder().parent / "reports" if folder().name == "results" else folder() / "reports"


def recorded_report(identity: str) -> dict | None:
    """The published model report (`python -m analysis report`'s JSON) of the model with this identity, or None.
    Matched by identity, not by name: a report is shown only for exactly the weights it measured."""
    for path in sorted(reports_folder().glob("*.json")):
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if isinstance(report, dict) and (report.get("model") or {}).get("identity") == identity:
            return report
    return None


def write(record: Record, where=None) -> Path:
    """<where>/<id>.json (default: `folder()`), validated first, written atomically; NaN is refused (JSON has
    none: a measurement that produced one says so in a finding and stores null)."""
    validate(record)
    target = Path(where) if where is not None else folder()
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{record.id}.json"
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(record.as_json(), indent=1, ensure_ascii=False, allow_nan=False) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)
    return path


def load(path) -> Record:
    """The record in file `path`; RecordError naming the file when it is unreadable or not schema 2."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise RecordError(f"{path.name} is not a readable JSON record ({err}).") from err
    return from_json(data, path.name)


def read_all(where=None) -> dict[str, Record]:
    """{id: Record} of every record in `where` (default `folder()`); the first bad one raises RecordError."""
    base = Path(where) if where is not None else folder()
    return {r.id: r for r in (load(p) for p in sorted(base.glob("*.json")))}


def read(record_id: str, where=None) -> Record | None:
    """The record `record_id`, or None when there is none or it does not validate: a reader (a page) then says the
    measurement is missing instead of failing."""
    path = (Path(where) if where is not None else folder()) / f"{record_id}.json"
    try:
        return load(path)
    except RecordError:
        return None
