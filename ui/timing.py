"""Server-side times for a load test: with `EMBEDSCOPE_SERVER_LOG` naming a file, every figure a session sends is
appended to it as one JSON line (session, wall-clock time). A browser's wait is the server's work plus its own
rendering; on a machine where the browsers share the server's cores only this log tells the two apart
(`scripts/load_test.py` reads it). Unset, it costs one dictionary lookup per figure."""

from __future__ import annotations

import json
import os
import threading
import time

_WRITE = threading.Lock()  # sessions run in threads of one process: one line at a time


def figure_sent() -> None:
    """Note that this session has just sent a figure (when the log is on)."""
    path = os.environ.get("EMBEDSCOPE_SERVER_LOG")
    if not path:
        return
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    line = json.dumps({"session": ctx.session_id if ctx else None, "event": "figure", "time": time.time()})
    with _WRITE, open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")
