"""Server-side times for a load test: with `EMBEDSCOPE_SERVER_LOG` naming a file, every script run a session starts
(`app.py`) and every figure it sends are appended to it as JSON lines (session, event, wall-clock time). A browser's
wait is its own loading until it connects, the server's work, then its own drawing; on a machine where the browsers
share the server's cores only this log tells them apart (`scripts/load_test.py` reads it). Unset, it costs one
dictionary lookup per event."""

from __future__ import annotations

import json
import os
import threading
import time

_WRITE = threading.Lock()  # sessions run in threads of one process: one line at a time


def run_started() -> None:
    """Note that this session's script has just started a run (when the log is on)."""
    _note("run")


def figure_sent() -> None:
    """Note that this session has just sent a figure (when the log is on)."""
    _note("figure")


def _note(event: str) -> None:
    path = os.environ.get("EMBEDSCOPE_SERVER_LOG")
    if not path:
        return
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    line = json.dumps({"session": ctx.session_id if ctx else None, "event": event, "time": time.time()})
    with _WRITE, open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")
