"""scripts/load_test.py's bookkeeping, without a browser: who opens what, and the number of users the server held.
(The script itself is run at N = 1-2 by hand; its real measurement needs a quiet machine: /work/notes, BUDGETS.md.)"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import load_test  # noqa: E402


def test_users_open_one_view_or_the_views_in_turn():
    assert load_test.addresses("same", 3, "v", ["a", "b"]) == ["v", "v", "v"]
    assert load_test.addresses("different", 5, "v", ["a", "b"]) == ["a", "b", "a", "b", "a"]


def test_the_server_holds_the_largest_n_whose_same_view_users_all_drew_in_time():
    rounds = [{"users": 1, "mode": "same", "failures": 0, "slowest_seconds": 3.0},
              {"users": 4, "mode": "same", "failures": 0, "slowest_seconds": 9.5},
              {"users": 8, "mode": "same", "failures": 1, "slowest_seconds": 6.0},  # a failure is not held
              {"users": 16, "mode": "different", "failures": 0, "slowest_seconds": 2.0},  # another mode
              {"users": 16, "mode": "same", "failures": 0, "slowest_seconds": 31.0}]
    assert load_test.held_within(rounds, 10) == 4
    assert load_test.held_within(rounds[2:], 10) == 0


def test_an_unknown_view_is_refused_before_any_browser_starts():
    load_test.check_views(["lessons?lesson=why-last&step=2", "embed_compare"])
    with pytest.raises(SystemExit, match="unknown view"):
        load_test.check_views(["no_such_page"])


def test_the_servers_part_of_the_wait_is_read_from_its_log(tmp_path, monkeypatch):
    """ui/timing.py appends one line per figure sent when EMBEDSCOPE_SERVER_LOG is set (nothing when it is not);
    the script keeps each session's first figure, counted from the browsers' opening."""
    from ui import timing

    log = tmp_path / "server.jsonl"
    monkeypatch.delenv("EMBEDSCOPE_SERVER_LOG", raising=False)
    timing.figure_sent()
    assert not log.exists()
    monkeypatch.setenv("EMBEDSCOPE_SERVER_LOG", str(log))
    timing.figure_sent()  # outside a Streamlit session: session None, still one line
    assert log.read_text().count("\n") == 1
    log.write_text('{"session": "a", "event": "figure", "time": 103.0}\n{"session": "b", "event": "figure", "time": '
                   '101.5}\n{"session": "a", "event": "figure", "time": 109.0}\n')
    assert load_test.first_figures(log, 100.0) == [1.5, 3.0]
    assert load_test.first_figures(tmp_path / "absent.jsonl", 100.0) == []
    rounds = [{"users": 4, "mode": "same", "failures": 0, "slowest_seconds": 30.0, "server_slowest_seconds": 6.0}]
    assert load_test.held_within(rounds, 10) == 0 and load_test.held_within(rounds, 10, "server_slowest_seconds") == 4
