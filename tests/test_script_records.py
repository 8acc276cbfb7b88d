"""Records measured by a script of the repository (the app in browsers, a process's own peak memory): the first-figure
rows become a typed record whose README block folds lesson steps into one row per lesson and says when, where and
under which load it was measured; the load test and the streamed corpus say what they found; every block has its
markers in the README or docs/BUDGETS.md."""

from pathlib import Path

import pytest

from analysis.core.errors import UserError
from analysis.experiments import corpus_stream, explain_budget, first_figure, load_test
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


def test_every_generated_block_has_its_markers_in_the_readme_or_the_budgets():
    text = (REPO / "README.md").read_text(encoding="utf-8") + (REPO / "docs" / "BUDGETS.md").read_text(encoding="utf-8")
    for name in render.blocks({}):
        assert text.count(render.markers(name)[0]) == 1, name


def test_the_readme_table_is_filled_from_the_record():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    out = render.readme(text, {"first_figure": record()})
    assert "| why-last, steps 1-2 | 6.0, 7.0 | 2.2 |" in out


LOAD = {"held_within": 4, "rounds": [
    {"users": 1, "mode": "same", "slowest_seconds": 5.1, "median_seconds": 5.1, "failures": 0, "peak_rss_mib": 900.0,
     "server_start_seconds": 2.0},
    {"users": 8, "mode": "same", "slowest_seconds": 14.0, "median_seconds": 9.0, "failures": 0,
     "peak_rss_mib": 1400.0, "server_start_seconds": 2.1}]}
STREAM = {"streamed": {"documents": 1000, "peak_rss_mib": 500.0, "model_rss_mib": 480.0, "above_model_mib": 20.0,
                       "vectors_mib": 0.2, "seconds": 3.0, "nDCG@10": 0.5},
          "whole": {"documents": 1000, "peak_rss_mib": 600.0, "model_rss_mib": 480.0, "above_model_mib": 120.0,
                    "vectors_mib": 0.2, "seconds": 3.1, "nDCG@10": 0.5}}


def test_the_load_findings_say_how_many_users_one_server_held():
    said = load_test.findings(LOAD, 10)
    assert said[0].startswith("One default server, new, held 4 user(s)") and "1,400 MiB" in said[1]
    assert "No round" in load_test.findings({**LOAD, "held_within": 0}, 10)[0]
    assert len(said) == 2  # a record without CPU seconds or the server's log says nothing of them
    rounds = [{**r, "server_cpu_seconds": 30.0, "machine_cpu_seconds": 40.0} for r in LOAD["rounds"]]
    said = load_test.findings({**LOAD, "rounds": rounds, "browser_nice": 19, "server_held_within": 8}, 10)
    assert said[1].startswith("The server sent every figure within 10 s to 8 user(s) on one step")
    assert said[3].startswith("With 8 users (same view) the server used 75%") and "at nice 19" in said[3]
    spread = {"users": 8, "mode": "different", "server": "warm", "slowest_seconds": 44.0, "failures": 0,
              "peak_rss_mib": 900.0, "results": [{"view": "geometry", "seconds": 2.0},
                                                 {"view": "attention", "seconds": 44.0}]}
    said = load_test.findings({**LOAD, "client": "protocol", "held_within_warm": 8,
                               "rounds": [*LOAD["rounds"], spread]}, 10)
    assert "each sent its figure" in said[0] and "(a warm server) it held 8 user(s)" in said[1]
    assert "slowest user waited 44 s, on attention (8 users, warm server)" in said[2]


def test_a_bad_user_count_is_one_sentence():
    with pytest.raises(UserError, match="from 1 to 32"):
        load_test.users("1,x")
    assert load_test.users("1, 4,16") == [1, 4, 16]


def test_the_stream_findings_compare_the_two_modes():
    said = corpus_stream.findings(STREAM)
    assert "peaked 20 MiB above" in said[0] and "(6.0x), with the same nDCG@10" in said[1]
    assert len(corpus_stream.findings({"streamed": STREAM["streamed"]})) == 1


EXPLAIN = {"model": "m", "method": "prompteol", "tokens": [29, 29], "positions": [38, 38], "nodes": [15, 15],
           "seconds": [12.0, 13.5], "best_seconds": 12.0, "cpu_seconds": [20.0, 21.0], "curves_seconds": 8.0,
           "lens_seconds": 2.0, "cached_seconds": 0.002, "gap_relative": 0.178, "plain_forward_seconds": 0.9,
           "explanation_per_plain_forward": 13.3}


def test_the_explain_budget_says_whether_one_pair_fit_its_budget():
    said = explain_budget.findings(EXPLAIN)
    assert "12.0 s at 15 and 15 path nodes, within the 15 s budget" in said[0] and "0.002 s" in said[0]
    assert "the fastest of 2 rounds: 12.0, 13.5 s" in said[0]
    assert "past the 15 s" in explain_budget.findings({**EXPLAIN, "best_seconds": 16.2})[0]
    assert "17.8%" in said[2]
    rec = small_record(id="explain_budget", experiment="explain_budget", findings=tuple(said),
                       config={"steps": explain_budget.STEPS, "method": "prompteol"},
                       command="python -m analysis measure explain_budget",
                       machine=Machine(2, "2.13", 2, "3.11", (0.6, 1.0, 1.0), (1.2, 1, 1), git_commit="abc1234"))
    block = explain_budget.block([rec])
    assert block.startswith("Measured by `python -m analysis measure explain_budget`") and "load 0.6 before" in block
    assert "not measured yet" in explain_budget.block([])
