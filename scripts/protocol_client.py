"""A Streamlit session without a browser: it opens the server's websocket, asks for one page as a browser's first run
does, and times the messages that come back. The load test uses it to measure what the server itself holds: headless
browsers on the same two cores spend most of the machine's CPU on loading and drawing (the load record measured 87%
with 16 of them), which a class's browsers spend on their own machines.

What it sends is what the app's front end sends on opening an address: a `rerun_script` message whose client state
names the page (the address path, which `st.navigation` resolves) and the query string. What it counts as drawn is
the first chart element the server sends (Plotly, Vega-Lite, an image or a deck); a page that draws none is done
when its run finishes. An exception element, or an error box, is the user's failure, as a browser's test reads it.

    seconds = asyncio.run(open_page("http://127.0.0.1:8501", "lessons?lesson=why-last&step=2", timeout=60))
"""

from __future__ import annotations

import asyncio
import time

CHARTS = {"plotly_chart", "vega_lite_chart", "imgs", "deck_gl_json_chart", "graphviz_chart", "echarts_chart"}
ALERT_ERROR = 1  # Alert.Format.ERROR in Streamlit's protocol


def request(path: str) -> bytes:
    """The BackMsg a browser sends when it opens `path` ("page?query")."""
    from streamlit.proto.BackMsg_pb2 import BackMsg  # lazy: Streamlit's protocol, needed only here

    page, _, query = path.partition("?")
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_name = page
    return msg.SerializeToString()


def read(data: bytes) -> tuple[str, str]:
    """(what the message is, and the element's kind for a new element): ("element", "plotly_chart"),
    ("script_finished", "") for a run that ended, ("script_stopped", status) for one stopped early (a rerun
    follows), ..."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # lazy: Streamlit's protocol, needed only here

    msg = ForwardMsg()
    msg.ParseFromString(data)
    kind = msg.WhichOneof("type") or ""
    if kind == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_SUCCESSFULLY:
        return "script_stopped", ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished)  # a rerun follows
    if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
        element = msg.delta.new_element
        name = element.WhichOneof("type") or ""
        if name == "alert" and element.alert.format == ALERT_ERROR:
            return "element", "error"
        return "element", name
    return kind, ""


async def open_page(url: str, path: str, timeout: float, start: asyncio.Event | None = None,
                    connected: asyncio.Event | None = None) -> dict:
    """Connect (then set `connected`), wait for `start` (every user opens at the same moment), ask for `path`, and
    read until its first chart or the run's end. Returns {"seconds", "seen" ("figure" or "page"), "error",
    "opened_at"}."""
    import websockets  # lazy: Streamlit's own dependency, used only by the load test

    out = {"view": path, "seconds": None, "seen": None, "error": None}
    stream = url.replace("http", "ws", 1).rstrip("/") + "/_stcore/stream"
    try:
        async with websockets.connect(stream, subprotocols=["streamlit"], max_size=None,
                                      open_timeout=timeout) as ws:
            if connected is not None:
                connected.set()
            if start is not None:
                await start.wait()
            out["opened_at"] = time.time()  # the wall clock the server's log uses
            began = time.perf_counter()
            await ws.send(request(path))
            async with asyncio.timeout(timeout):
                while out["seen"] is None:
                    kind, name = read(await ws.recv())
                    if name in ("exception", "error"):
                        out["error"] = f"an {'exception' if name == 'exception' else 'error box'} on the page"
                    elif name in CHARTS:
                        out["seen"] = "figure"
                    elif kind == "script_finished":
                        out["seen"] = "page"
                    elif kind == "page_not_found":
                        out["error"] = f"the server has no page {path.partition('?')[0]!r}"
                        break
            out["seconds"] = round(time.perf_counter() - began, 2)
    except TimeoutError:
        out["error"] = f"no figure within {timeout:g} s"
    except (OSError, websockets.WebSocketException) as err:
        out["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
    finally:
        if connected is not None:
            connected.set()  # a user who could not connect does not hold the others back
    return out


async def open_together(url: str, paths: list[str], timeout: float, opened=None) -> list[dict]:
    """Every path in its own session, all connected first and then opened at one moment; `opened()` is called at
    that moment (the load test reads the CPU counters there)."""
    start, connected = asyncio.Event(), [asyncio.Event() for _ in paths]
    users = [asyncio.create_task(open_page(url, p, timeout, start, c)) for p, c in zip(paths, connected)]
    await asyncio.gather(*(c.wait() for c in connected))
    if opened is not None:
        opened()
    start.set()
    return list(await asyncio.gather(*users))
