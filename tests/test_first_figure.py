"""The first-figure record: the browser script's rows become a typed record whose README block folds lesson steps
into one row per lesson and says when, where and under which load it was measured; the README has the block."""

from pathlib import Path

from analysis.experiments import first_figure
from analysis.experiments.machinery import render
from analysis.experiments.machinery.records import Machine
from tests.test_experiments import small_record

REPO = Path(__file__).resolve().parent.parent
ROWS = [{"view": f"lesson why-last step {i}", "address": f"lessons?lesson=why-last&step={i}", "fresh": 5.0 + i,
         "fresh_seen": "figure", "again": 2.2 + i / 100, "again_seen": "figure"} for i in (1, 2)]
ROWS += [{"view": "page home", "address": "", "fresh": 4.2, "fresh_seen": "no figure by default (heading)",
          "again": 1.0, "again_seen": "no figure by default (heading)"},
         {"view": "page embed_compare", "address": "embed_compare", "fresh": 12.5, "fresh_seen": "figure",
          "again": 2.6, "again_seen": "figure"}]


def record(**config):
    return small_record(id="first_figure", experiment="first_figure", config={"warm": False, "only": "", **config},
                        command="python -m analysis measure first_figure",
                        tables=(first_figure.fresh_table(ROWS),), findings=tuple(first_figure.findings(ROWS, False)),
                        machine=Machine(2, "2.13", 2, "3.11", (0.6, 1.0, 1.0), (3.4, 1, 1), git_commit="abc1234"),
                        extra={"rows": ROWS})


def test_the_block_folds_lesson_steps_and_names_its_provenance():
    block = first_figure.block([record()])
    assert "| why-last, steps 1-2 | 6.0, 7.0 | 2.2 |" in block
    assert "| home (heading) | 4.2 | 1.0 |" in block and "| embed_compare | 12.5 | 2.6 |" in block
    assert "at abc1234" in block and "load 0.6 before" in block and "`python -m analysis measure first_figure`" in block
    assert "3 of 4 views drew their first figure within 10 s" in block  # 12.5 s is over the target, and said


def test_a_smoke_run_or_a_warm_run_never_fills_the_fresh_install_table():
    assert "not measured yet" in first_figure.block([record(only="home"), record(warm=True)])


def test_the_readme_has_every_generated_block_and_is_filled_from_records():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    for name in render.blocks({}):
        assert render.markers(name)[0] in text, name
    out = render.readme(text, {"first_figure": record()})
    assert "| why-last, steps 1-2 | 6.0, 7.0 | 2.2 |" in out
