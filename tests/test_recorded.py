"""Measured numbers in the app's prose come from the published records, never typed (#48): every decimal and every
percentage of the lessons and of the pages' prose moves when the records' numbers move; and `results --check` fails
when a lesson cites a record that has changed since its words were written (`CITES`), naming the lesson, the record
and the digest to pin once the words are re-read."""

import importlib
import json
import re
import shutil
from pathlib import Path

import pytest

import ui.recorded
from analysis.core.errors import UserError
from analysis.experiments.machinery import citations, records
from tests.conftest import run_cli

REPO = Path(__file__).resolve().parent.parent
LESSONS = ("why_last", "compression_layers", "summary_tokens", "soft_tokens", "causal2vec", "compression",
           "why_similar")
# A decimal or a percentage, with its sign: what a measurement looks like in a sentence.
MEASURED = re.compile(r"(?<![\w.])[-+]?\d+\.\d+(?![\w.])|(?<![\w.])\d+(?:\.\d+)?%")
EXAMPLES = {"0.9"}  # why_similar's "one method's 0.9 can be its lowest score": an example, not a measurement


def prose() -> dict[str, str]:
    """{where: text} of every lesson step (paragraph, question, answer) and of the pages' prose, built now."""
    out = {}
    for name in LESSONS:
        module = importlib.reload(importlib.import_module(f"ui.lessons.{name}"))
        for i, step in enumerate(module.LESSON.steps, 1):
            out.update({f"{name} step {i} {part}": getattr(step, part) for part in ("text", "question", "answer")})
    out["ui.prose single_person_gap"] = importlib.reload(importlib.import_module("ui.prose")).single_person_gap()
    return out


def _moved(x):
    """Every number of a cell moved: x -> 1.5 x + 1.234 (whole numbers 2 n + 7), a text cell's numbers too, each
    with as many decimals as it had; True, False and None stay."""
    if isinstance(x, bool) or x is None:
        return x
    if isinstance(x, int):
        return 2 * x + 7
    if isinstance(x, float):
        return 1.5 * x + 1.234
    if isinstance(x, str):
        return re.sub(r"\d+(?:\.(\d+))?", lambda m: f"{1.5 * float(m.group()) + 1.234:.{len(m.group(1) or '')}f}", x)
    if isinstance(x, list):
        return [_moved(v) for v in x]
    if isinstance(x, dict):
        return {k: _moved(v) for k, v in x.items()}
    return x


def moved(record):
    """`record` with every measured number moved (`_moved`): row names and column names stay, so readers find the
    same cells."""
    d = record.as_json()
    for t in d["tables"]:
        t["rows"] = [[row[0], *_moved(row[1:])] for row in t["rows"]]
    for s in d["series"]:
        s["lines"] = _moved(s["lines"])
    if d.get("sample") and d["sample"].get("n") is not None:
        d["sample"]["n"] = _moved(d["sample"]["n"])
    d["extra"] = _moved(d["extra"])
    return records.from_json(d)


def test_every_measured_number_in_the_prose_is_read_from_a_record(monkeypatch):
    before = prose()
    with monkeypatch.context() as m:
        m.setattr(ui.recorded, "read_record", lambda rid: moved(records.read(rid)))
        after = prose()
    assert prose() == before  # the modules rebuilt from the real records for the tests that follow
    typed = []
    for where, text in before.items():
        old, new = MEASURED.findall(text), MEASURED.findall(after[where])
        assert len(old) == len(new), where
        typed += [f"{where}: {a}" for a, b in zip(old, new) if a == b and a not in EXAMPLES]
    assert typed == []
    assert "0.762" in before["soft_tokens step 4 text"] and "99.5%" in before["compression step 2 text"]


def test_a_missing_record_reads_as_a_question_mark_and_an_unpinned_one_is_refused(monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(ui.recorded, "read_record", lambda rid: None)
        text = prose()["soft_tokens step 4 text"]
    prose()  # rebuilt from the real records
    assert "?" in text and not MEASURED.findall(text)  # the page still draws; `results --check` names the record
    with pytest.raises(KeyError, match="not pinned"):
        ui.recorded.Cited({"gircse": "x"})("causal2vec")


def test_every_module_that_reads_records_pins_them_as_they_are():
    pinned = {f.name: citations.pins_in(f) for f in (REPO / "ui" / "lessons").glob("*.py")}
    assert {n for n, p in pinned.items() if p} == {f"{n}.py" for n in LESSONS} - {"summary_tokens.py",
                                                                                    "why_similar.py"}
    assert citations.stale(sorted((REPO / "ui").rglob("*.py")) + sorted((REPO / "pages").glob("*.py")),
                           records.read_all()) == []


def test_results_check_fails_when_a_cited_record_has_changed(tmp_path, capsys):
    copy = tmp_path / "records"
    shutil.copytree(REPO / "docs" / "results", copy)
    data = json.loads((copy / "gircse.json").read_text(encoding="utf-8"))
    data["tables"][0]["rows"][3][1] = 0.5  # GIRCSE K=5 measured again: the lesson's "training lifts" may not hold
    (copy / "gircse.json").write_text(json.dumps(data), encoding="utf-8")
    code, _, err = run_cli(capsys, "results", "--check", "--records", copy)
    new = citations.content_digest(records.read("gircse", copy))
    assert code == 2 and err.count("\n") == 1
    assert (f"ui/lessons/soft_tokens.py cites docs/results/gircse.json, which has changed since its words were "
            f"written (6ba1b1b8e54d, now {new}): re-read them against the record's numbers, then set "
            f"CITES['gircse'] = '{new}'") in err
    (copy / "gircse.json").unlink()
    code, _, err = run_cli(capsys, "results", "--check", "--records", copy)
    assert code == 2 and "ui/lessons/soft_tokens.py cites docs/results/gircse.json, which does not exist" in err


def test_a_cites_that_is_not_a_literal_is_one_sentence(tmp_path):
    module = tmp_path / "lesson.py"
    module.write_text("CITES = dict(gircse='x')\n", encoding="utf-8")
    with pytest.raises(UserError, match="CITES must be a literal"):
        citations.pins_in(module)
    module.write_text("CITES: dict = {'gircse': 'abc'}\n", encoding="utf-8")
    assert citations.pins_in(module) == {"gircse": "abc"}
    assert "which has changed" in citations.stale([module], records.read_all())[0]
