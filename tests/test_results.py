"""The results document: records render into docs/RESULTS.md and the README's headline block, and the committed
document is what its records say (`python -m analysis results --check`)."""

from __future__ import annotations

import pytest

from analysis.core.errors import UserError
from analysis.eval.results import markers, read_records, readme, render, replace_block, headline, write_record

RECORD = {"id": "methods_models", "title": "Methods x models", "command": "python -m analysis compare ...",
          "data": "STS-B dev report part", "sample": {"n": 500, "of": 1200, "how": "stratified", "seed": 0,
                                                      "genres": {"main-news/headlines": 10}},
          "wall_seconds": 60.0, "tables": [{"title": "t", "columns": ["method", "Spearman", "95% CI"],
                                            "rows": [["prompteol", 0.6321, [0.6, 0.66]], ["last", None, None]]}],
          "findings": ["PromptEOL leads."]}


def test_a_record_renders_with_its_command_sample_and_machine(tmp_path):
    write_record(tmp_path, RECORD)
    records = read_records(tmp_path)
    md = render(records)
    assert "## Methods x models" in md and "`python -m analysis compare ...`" in md
    assert "| prompteol | 0.632 | [0.600, 0.660] |" in md and "| last | – | – |" in md
    assert "500 of 1200; stratified; seed 0; genres main-news/headlines 10" in md
    assert "load average" in md and "PromptEOL leads." in md
    start, end = markers("headline")
    text = f"intro\n{start}\nold\n{end}\nrest"
    new = replace_block(text, headline(records))
    assert new.startswith("intro\n") and new.endswith("rest") and "prompteol" in new and "old" not in new
    with pytest.raises(UserError, match="block"):
        replace_block("no markers", "x")


def test_the_readme_gets_the_compression_results_with_their_commands(tmp_path):
    people = {"id": "compression_people", "title": "p", "command": "python3 scripts/compression_report.py --experiment "
              "people", "data": "d", "wall_seconds": 90, "tables": [{"title": "B", "columns": ["c"], "rows": [["x"]]}],
              "findings": ["Names help."]}
    training = {"id": "compression_training", "title": "t", "command": "python3 scripts/compression_training.py",
                "data": "d", "tables": [{"title": "curves", "columns": ["step"], "rows": [[0]]},
                                        {"title": "held-out", "columns": ["run"], "rows": [["random init"]]}]}
    for rec in (RECORD, people, training):
        write_record(tmp_path, rec)
    text = "\n".join(f"{a}\nold\n{b}" for a, b in (markers("headline"), markers("compression")))
    new = readme(text, read_records(tmp_path))
    block = new.split(markers("compression")[0])[1]
    assert "**B**" in block and "- Names help." in block and "compression_report.py --experiment people`" in block
    assert "**held-out**" in block and "**curves**" not in block  # the training curves stay in RESULTS.md
    assert "1.5 min" in block and "old" not in new


def test_a_record_missing_its_command_is_refused(tmp_path):
    with pytest.raises(ValueError, match="command"):
        write_record(tmp_path, {k: v for k, v in RECORD.items() if k != "command"})


def test_the_committed_results_document_matches_its_records(capsys):
    from pathlib import Path

    from cli import main

    if not list((Path(__file__).resolve().parent.parent / "docs" / "results").glob("*.json")):
        pytest.skip("no results records committed yet")
    assert main(["results", "--check"]) == 0, capsys.readouterr().err


def test_a_record_names_weights_folders_without_machine_paths(tmp_path):
    from analysis.core.paths import REPO
    from analysis.eval.results import shown_folder

    assert shown_folder("shipped") == "shipped"
    assert shown_folder(str(tmp_path / "runs" / "people5-names")) == "people5-names"  # a run in a machine's cache
    ablation = REPO / "analysis" / "artefacts" / "compression" / "smollm2-135m" / "ablations" / "single-person"
    assert shown_folder(str(ablation)) == "analysis/artefacts/compression/smollm2-135m/ablations/single-person"


def test_the_training_runs_behind_a_record_are_one_table():
    from analysis.eval.results import runs_table, table_markdown

    table = runs_table({"five people, names": {"command": "python -m analysis train compression --people 5 --names",
                                               "steps_done": 120, "best_step": 120, "wall_seconds": 1087.7,
                                               "examples_per_second": 1.765},
                        "unfinished": {}})
    assert table["rows"][0] == ["five people, names", "`python -m analysis train compression --people 5 --names`",
                                120, 120, 18.1, 1.76]
    assert "| unfinished | – | – | – | – | – |" in table_markdown(table)
