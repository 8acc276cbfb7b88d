"""scripts/load_test.py's bookkeeping, without a browser: who opens what, and the number of users the server held;
and its protocol client against a real Streamlit server on a small app. (The measurement itself needs a quiet
machine: `python -m analysis measure load_test`, docs/BUDGETS.md.)"""

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
              {"users": 16, "mode": "same", "failures": 0, "slowest_seconds": 31.0},
              {"users": 16, "mode": "same", "server": "warm", "failures": 0, "slowest_seconds": 5.0}]
    assert load_test.held_within(rounds, 10) == 4  # a new server's rounds (a record without "server": new ones)
    assert load_test.held_within(rounds[2:], 10) == 0
    assert load_test.held_within(rounds, 10, server="warm") == 16


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


def test_the_protocol_client_asks_for_a_page_as_a_browser_does_and_reads_what_comes_back():
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    import protocol_client

    sent = BackMsg.FromString(protocol_client.request("lessons?lesson=why-last&step=2"))
    assert (sent.rerun_script.page_name, sent.rerun_script.query_string) == ("lessons", "lesson=why-last&step=2")
    chart = ForwardMsg()
    chart.delta.new_element.plotly_chart.spec = "{}"
    error = ForwardMsg()
    error.delta.new_element.alert.format = protocol_client.ALERT_ERROR
    stopped, done = ForwardMsg(), ForwardMsg()
    stopped.script_finished = ForwardMsg.FINISHED_EARLY_FOR_RERUN
    done.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    assert protocol_client.read(chart.SerializeToString()) == ("element", "plotly_chart")
    assert protocol_client.read(error.SerializeToString()) == ("element", "error")
    assert protocol_client.read(stopped.SerializeToString()) == ("script_stopped", "FINISHED_EARLY_FOR_RERUN")
    assert protocol_client.read(done.SerializeToString()) == ("script_finished", "")


APP = """
import time
import streamlit as st
if st.query_params.get("fail"):
    st.error("refused")
elif st.query_params.get("text"):
    st.markdown("no chart here")
else:
    time.sleep(0.3)
    st.line_chart([1, 3, 2])
"""


def test_protocol_clients_open_a_real_server_together_and_see_its_figures_and_errors(tmp_path):
    import asyncio
    import time

    import protocol_client
    from bench_first_figure import start_server

    (tmp_path / "app.py").write_text(APP)
    proc, url = start_server(cwd=tmp_path)
    try:
        opened = []
        got = asyncio.run(protocol_client.open_together(url, ["?a=1", "?a=2", "?fail=1", "?text=1"], timeout=30,
                                                        opened=lambda: opened.append(time.time())))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    refused = ("page", "an error box on the page")
    assert [(g["seen"], g["error"]) for g in got] == [("figure", None), ("figure", None), refused, ("page", None)]
    assert len(opened) == 1 and all(g["opened_at"] >= opened[0] for g in got)
    assert all(0.3 <= g["seconds"] < 30 for g in got[:2])
