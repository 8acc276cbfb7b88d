"""Prose that states measured numbers (the lessons, a page's captions) reads them from the published records, and
pins each record it reads to what that record measured when the words were written (issue #48: nothing stale).

The numbers follow the record by themselves (`ui.recorded` reads them when the text is built); the words around them
do not ("training lifts K = 5 ... but K = 10 is worse": a new measurement may reverse that). So a module whose prose
reads records declares them, each with the digest of the record's measured content as the words were written:

    CITES = {"gircse": "5c0e3b9a17d2", "methods_models": "a81f..."}   # module level, a plain literal

and `python -m analysis results --check` fails while a pinned record has changed since (`stale`), naming the file,
the record and the new digest to pin once the words have been re-read against the new numbers. The sources are read
as text (`pins_in`), never imported: the command line may not import the app's modules (`tests/test_layers.py`).
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

from analysis.core.errors import UserError

NAME = "CITES"  # the module-level name of a module's pins


def content_digest(record) -> str:
    """12 hex digits over what `record` measured (its tables, series, findings and sample): the same numbers give
    the same digest whatever the date, the machine or the code version that measured them."""
    measured = {k: v for k, v in record.as_json().items() if k in ("tables", "series", "findings", "sample")}
    return hashlib.sha256(json.dumps(measured, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]


def pins_in(path: Path) -> dict[str, str] | None:
    """The module-level `CITES = {record id: digest}` of the Python source at `path`, or None when it has none; a
    `CITES` that is not a plain literal of strings is one sentence naming the file (UserError)."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == NAME and node.value is not None:
            try:
                pins = ast.literal_eval(node.value)
            except ValueError:
                pins = None
            if not isinstance(pins, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in pins.items()):
                raise UserError(f"{path}: {NAME} must be a literal {{record id: digest}} of strings")
            return pins
    return None


def stale(files, records: dict, shown=str) -> list[str]:
    """One sentence per pin of `files` (Python sources) that no longer holds against `records` ({id: Record}): the
    record is gone, or it measured something else since the words were written. `shown(path)` names a file."""
    out = []
    for path in files:
        for record_id, pinned in (pins_in(path) or {}).items():
            rec = records.get(record_id)
            if rec is None:
                out.append(f"{shown(path)} cites docs/results/{record_id}.json, which does not exist")
                continue
            now = content_digest(rec)
            if now != pinned:
                out.append(f"{shown(path)} cites docs/results/{record_id}.json, which has changed since its words "
                           f"were written ({pinned}, now {now}): re-read them against the record's numbers, then set "
                           f"{NAME}[{record_id!r}] = {now!r}")
    return out
