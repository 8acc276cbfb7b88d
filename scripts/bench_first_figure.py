"""Seconds to the first figure of every lesson step and every page's default view, in headless Chromium.

Two measurements:
* default: after `python -m analysis warm` (the cache is the one the app uses, `EMBEDSCOPE_CACHE` or the default),
  one server that has loaded the default model, each address in a fresh tab: the "no waiting in class" target,
  every entry within 3 s.
* `--fresh`: a fresh install, as a newcomer meets it: for each address, a new empty cache (only the converted
  models, which the install made, and the seeds the tool ships), a new `streamlit run app.py`, and the time from
  starting the server to the first figure of that address (the 10 s target); then the same address in a second
  tab of the same server (the 3 s target after the first visit).

A view that draws no figure by default (`NO_FIGURE`) is timed to its heading and marked so, and one that draws none
within the timeout is timed to its heading and marked so. Prints a Markdown table and the machine's load; `--json`
also writes the rows, which `python -m analysis measure first_figure` turns into the record the README's table is
rendered from.

    python scripts/bench_first_figure.py                      # everything (minutes)
    python scripts/bench_first_figure.py --fresh              # every address on a fresh install (longer)
    python scripts/bench_first_figure.py --only embed_compare # one entry, a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from analysis.core.paths import cache_root
from ui.lessons import LESSONS  # noqa: E402
from ui.nav import page_files, page_title, url_path  # noqa: E402

FIGURE = ".js-plotly-plot .main-svg"
DRAWN = """sel => [document, ...[...document.querySelectorAll('iframe')].map(f => {
    try { return f.contentDocument; } catch (e) { return null; } })].some(d => d && d.querySelector(sel))"""
# Views whose default view draws no figure, by address path, with the reason: waiting for one would only measure
# the timeout, so they are timed to their heading.
NO_FIGURE = {"": "the home page: text and the loaded model's facts, no figure"}
HEADING_ONLY = "no figure by default (heading)"


def targets() -> list[tuple[str, str, str]]:
    """(name, address path, heading to expect) for every lesson step and every page but the Lessons page."""
    out = [(f"lesson {lesson.id} step {i}", f"lessons?lesson={lesson.id}&step={i}", f"{i}. {step.title}")
           for lesson in LESSONS for i, step in enumerate(lesson.steps, 1)]
    out += [("page home", "", "Model")]  # the home page draws no figure: timed to the loaded model's facts
    out += [(f"page {url_path(p)}", url_path(p), page_title(p)) for p in page_files()[1:] if url_path(p) != "lessons"]
    return out


def start_server(env: dict | None = None, cwd: Path = REPO) -> tuple[subprocess.Popen, str]:
    """`streamlit run app.py` in folder `cwd` on a free port, once its health check answers: (process, address)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise SystemExit("streamlit did not start within 2 minutes")


def first_figure(context, url: str, heading: str, timeout_s: float, figure: bool = True) -> tuple[float, str]:
    """(seconds, what was seen first): a figure, or the heading when the view draws no figure in time or by default
    (`figure=False`)."""
    page = context.new_page()
    try:
        start = time.perf_counter()
        page.goto(url, timeout=timeout_s * 1000)
        if not figure:
            page.get_by_role("heading", name=heading).first.wait_for(timeout=timeout_s * 1000)
            return time.perf_counter() - start, HEADING_ONLY
        try:  # on the page, or inside a same-origin frame (the Report page shows its report in one)
            page.wait_for_function(DRAWN, arg=FIGURE, timeout=timeout_s * 1000)
            return time.perf_counter() - start, "figure"
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: the view has no default figure
            page.get_by_role("heading", name=heading).first.wait_for(timeout=1000)
            return time.perf_counter() - start, f"no figure within {timeout_s:.0f} s (heading only)"
    finally:
        page.close()


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def launch(p):
    return p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                             args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])


def mark(seconds: float, seen: str, target: float) -> str:
    within = f"within {target:g} s" if seconds <= target else f"over {target:g} s"
    return within if seen == "figure" else f"{seen}, {within}" if seen == HEADING_ONLY else seen


def warm_table(chosen, timeout: float) -> list[dict]:
    from playwright.sync_api import sync_playwright  # lazy: optional dependency (playwright)

    proc, url = start_server()
    try:
        with sync_playwright() as p:
            browser = launch(p)
            context = browser.new_context(viewport={"width": 1280, "height": 720})
            home = context.new_page()  # the model loads once, outside the table
            home.goto(url, timeout=600_000)
            home.get_by_role("heading", name="embedscope").first.wait_for(timeout=600_000)
            home.close()
            print("| view | seconds to first figure | |\n|---|---|---|")
            rows = []
            for name, path, heading in chosen:
                seconds, seen = first_figure(context, f"{url}/{path}", heading, timeout, path not in NO_FIGURE)
                print(f"| {name} | {seconds:.1f} | {mark(seconds, seen, 3)} |", flush=True)
                rows.append({"view": name, "address": path, "warm": round(seconds, 2), "warm_seen": seen})
            browser.close()
            return rows
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def fresh_table(chosen, timeout: float) -> list[dict]:
    """Each address on a fresh install: an empty cache but for the converted models, a new server."""
    from playwright.sync_api import sync_playwright  # lazy: optional dependency (playwright)

    print("| view | fresh install: s from server start | | second visit: s | |\n|---|---|---|---|---|")
    rows = []
    with sync_playwright() as p:
        browser = launch(p)
        for name, path, heading in chosen:
            with tempfile.TemporaryDirectory(prefix="embedscope-fresh-") as tmp:
                (Path(tmp) / "models").symlink_to(cache_root() / "models")  # what the install converted
                began = time.perf_counter()
                proc, url = start_server({**os.environ, "EMBEDSCOPE_CACHE": tmp})
                try:
                    context = browser.new_context(viewport={"width": 1280, "height": 720})
                    up = time.perf_counter() - began
                    seconds, seen = first_figure(context, f"{url}/{path}", heading, timeout, path not in NO_FIGURE)
                    first = up + seconds
                    again, seen2 = first_figure(context, f"{url}/{path}", heading, timeout, path not in NO_FIGURE)
                    print(f"| {name} | {first:.1f} | {mark(first, seen, 10)} | {again:.1f} | {mark(again, seen2, 3)} |",
                          flush=True)
                    rows.append({"view": name, "address": path, "fresh": round(first, 2), "fresh_seen": seen,
                                 "again": round(again, 2), "again_seen": seen2})
                    context.close()
                finally:
                    proc.terminate()
                    proc.wait(timeout=20)
        browser.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="only the entries whose name contains this")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for a figure (default 60)")
    parser.add_argument("--fresh", action="store_true", help="each address on a fresh install (see above)")
    parser.add_argument("--json", default="", help="also write the rows and the load to this JSON file")
    args = parser.parse_args()
    chosen = [t for t in targets() if args.only in t[0]]
    before = load()
    rows = (fresh_table if args.fresh else warm_table)(chosen, args.timeout)
    print(f"\nload average (1/5/15 min) before: {before}; after: {load()}; {os.cpu_count()} cores")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "load_before": before, "load_after": load(),
                                               "NO_FIGURE": NO_FIGURE}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
