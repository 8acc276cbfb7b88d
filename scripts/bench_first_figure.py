"""Seconds to the first figure of every lesson step and every page's default view, in headless Chromium.

Run after `python -m analysis warm` (the cache is the one the app uses, `EMBEDSCOPE_CACHE` or the default) to check
the "no waiting" target: every entry within 3 s of opening. Starts its own `streamlit run app.py` on a free port,
opens each address in a fresh tab and times from the request to the first drawn Plotly figure (an svg inside a
Plotly div); a view that draws no figure by default (`NO_FIGURE`) is timed to its heading at once and marked so, and
one that draws none within the timeout is timed to its heading and marked so. Prints a Markdown table.

    python scripts/bench_first_figure.py                      # everything (minutes)
    python scripts/bench_first_figure.py --only embed_compare # one entry, a smoke run
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ui.lessons import LESSONS  # noqa: E402
from ui.nav import page_files, page_title, url_path  # noqa: E402

FIGURE = ".js-plotly-plot .main-svg"
# Views whose default view draws no figure, by address path, with the reason: waiting for one would only measure
# the timeout, so they are timed to their heading.
NO_FIGURE = {"report": "collects the report's inputs; its figures come after 'Build the report'"}
HEADING_ONLY = "no figure by default (heading)"


def targets() -> list[tuple[str, str, str]]:
    """(name, address path, heading to expect) for every lesson step and every page but the Lessons page."""
    out = [(f"lesson {lesson.id} step {i}", f"lessons?lesson={lesson.id}&step={i}", f"{i}. {step.title}")
           for lesson in LESSONS for i, step in enumerate(lesson.steps, 1)]
    out += [(f"page {url_path(p)}", url_path(p), page_title(p)) for p in page_files()[1:] if url_path(p) != "lessons"]
    return out


def start_server() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
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
        try:
            page.wait_for_selector(FIGURE, state="visible", timeout=timeout_s * 1000)
            return time.perf_counter() - start, "figure"
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: the view has no default figure
            page.get_by_role("heading", name=heading).first.wait_for(timeout=1000)
            return time.perf_counter() - start, f"no figure within {timeout_s:.0f} s (heading only)"
    finally:
        page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="only the entries whose name contains this")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for a figure (default 60)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    chosen = [t for t in targets() if args.only in t[0]]
    proc, url = start_server()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])
            context = browser.new_context(viewport={"width": 1280, "height": 720})
            home = context.new_page()  # the model loads once, outside the table
            home.goto(url, timeout=600_000)
            home.get_by_role("heading", name="embedscope").first.wait_for(timeout=600_000)
            home.close()
            print("| view | seconds to first figure | |\n|---|---|---|")
            for name, path, heading in chosen:
                seconds, seen = first_figure(context, f"{url}/{path}", heading, args.timeout, path not in NO_FIGURE)
                mark = "within 3 s" if seconds <= 3 else "over 3 s"
                shown = mark if seen == "figure" else f"{seen}, {mark}" if seen == HEADING_ONLY else seen
                print(f"| {name} | {seconds:.1f} | {shown} |", flush=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


if __name__ == "__main__":
    main()
