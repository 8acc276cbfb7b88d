"""Many users at once: N headless Chromium browsers open the app together, on one view (a class on one lesson step)
and on different views, and each is timed to its first figure while the server's memory is sampled.

For each N of `--users` and each mode of `--mode`, a new `streamlit run app.py` starts on a fresh cache (the converted
models linked in, as an install leaves them, and the seeds the tool ships), so every round meets the server as a
class meets it; the N browsers (each its own Chromium process, started before the clock) open their address at the
same moment. Per user: seconds to the first figure, or the failure. Per round: the server's resident memory (its
process and children) every half second, its peak, the slowest user, the CPU seconds the server used against the
machine's from the opening on (the rest went to the browsers), and when the server sent each session's first figure
(`ui/timing.py`'s log, from the moment the browsers opened their addresses): the server's part of each wait.
`--servers warm` lets someone open the home page first, as a teacher does before class (the process has imported
its modules and loaded the model; the class's figures are still to compute). `--client protocol` replaces the
browsers by sessions over the server's websocket (`protocol_client.py`): the server's part alone. The
browsers share the server's two cores here, where a class's run on their own machines: they run at `--browser-nice`
(19 by default), so the server's work comes first and a browser renders in the cores' idle time; `--browser-nice 0`
measures them as equals. The one JSON file written (`--out`) holds every number, the machine and its load;
`held_within` says the largest N whose users on the same view all drew (`server_held_within`: were all sent their
figure) within `--target` seconds (the issue's 10 s), which docs/BUDGETS.md reports.

    python scripts/load_test.py --users 1,4,8,16 --mode both --out load.json   # the measurement (a quiet machine)
    python scripts/load_test.py --users 1,2 --mode same --out /tmp/load.json   # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_first_figure import DRAWN, FIGURE, NO_FIGURE, launch, load, start_server, targets  # noqa: E402
from protocol_client import open_together  # noqa: E402

from analysis.core.paths import cache_root  # noqa: E402

SAME_VIEW = "lessons?lesson=why-last&step=2"
DIFFERENT = ["embed_compare", "layer_explorer", "lessons?lesson=why-last&step=1", "geometry", "attention",
             "benchmark"]  # six views a class spreads over (the six browsers)


def addresses(mode: str, n: int, same: str, views: list[str]) -> list[str]:
    """The address each of `n` users opens: all the same one, or the views in turn."""
    return [same] * n if mode == "same" else [views[i % len(views)] for i in range(n)]


def check_views(views: list[str]) -> None:
    known = {path for _, path, _ in targets()}
    unknown = [v for v in views if v.split("?")[0] not in {k.split("?")[0] for k in known}]
    if unknown:
        raise SystemExit(f"unknown view(s) {', '.join(unknown)}: use addresses like {', '.join(sorted(known)[:4])}")


def sample_rss(pid: int, stop: threading.Event, into: list) -> None:
    """[seconds since start, MiB] of the server's process and its children, every half second until `stop`."""
    began = time.perf_counter()
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    while not stop.is_set():
        try:
            rss = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
        except psutil.Error:
            break
        into.append([round(time.perf_counter() - began, 2), round(rss / 2**20, 1)])
        stop.wait(0.5)


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process `pid` and its living children (0 when it is gone)."""
    try:
        root = psutil.Process(pid)
        return sum(sum(p.cpu_times()[:2]) for p in [root, *root.children(recursive=True)])
    except psutil.Error:
        return 0.0


def busy_seconds() -> float:
    """CPU seconds the machine's cores have run anything, since boot (user, nice, system and interrupts; not idle,
    I/O wait, time a hypervisor stole, nor guest time, which user time already holds)."""
    t = psutil.cpu_times()
    return t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)


def user(url: str, path: str, timeout: float, ready: threading.Barrier, out: dict, nice: int) -> None:
    """One browser: started (at niceness `nice`: Linux sets it per thread, and the browser's processes inherit it),
    then waits for the others, then opens `path` and waits for its first figure."""
    from playwright.sync_api import sync_playwright  # lazy: optional dependency (playwright)

    out.update(view=path, seconds=None, seen=None, error=None)
    os.setpriority(os.PRIO_PROCESS, 0, nice)  # this thread (the caller's TID) and what it starts
    try:
        with sync_playwright() as p:
            browser = launch(p)
            page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
            ready.wait(timeout=300)
            out["opened_at"] = time.time()  # the wall clock the server's log uses
            began = time.perf_counter()
            page.goto(f"{url}/{path}", timeout=timeout * 1000)
            if path in NO_FIGURE:
                page.wait_for_selector("h1, h2", timeout=timeout * 1000)
                out["seen"] = "heading"
            else:
                page.wait_for_function(DRAWN, arg=FIGURE, timeout=timeout * 1000)
                out["seen"] = "figure"
            out["seconds"] = round(time.perf_counter() - began, 2)
            errors = page.locator("[data-testid='stException'], [data-testid='stAlertContentError']").count()
            if errors:
                out["error"] = f"{errors} error box(es) on the page"
            browser.close()
    except Exception as err:  # noqa: BLE001 - a timeout, a crashed tab: recorded as this user's failure
        out["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"


def browsers(url: str, paths: list[str], timeout: float, nice: int, opened) -> list[dict]:
    """One headless browser per path, each in its own thread, opening together once all are up."""
    results = [{} for _ in paths]
    ready = threading.Barrier(len(paths), action=opened)
    threads = [threading.Thread(target=user, args=(url, path, timeout, ready, out, nice))
               for path, out in zip(paths, results)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 330)
    return results


def round_of(n: int, mode: str, paths: list[str], timeout: float, nice: int, client: str = "browser",
             server: str = "fresh") -> dict:
    """One round: a new server, `n` users at once (browsers, or protocol clients), the server's memory sampled
    throughout. server="warm": someone opened the home page first (the teacher before class: the process has
    imported its modules and loaded the model, the class's figures are still to compute), untimed."""
    with tempfile.TemporaryDirectory(prefix="embedscope-load-") as tmp:
        (Path(tmp) / "models").symlink_to(cache_root() / "models", target_is_directory=True)
        started, log = time.perf_counter(), Path(tmp) / "server.jsonl"
        proc, url = start_server({**os.environ, "EMBEDSCOPE_CACHE": tmp, "EMBEDSCOPE_SERVER_LOG": str(log)})
        up = time.perf_counter() - started
        if server == "warm":
            asyncio.run(open_together(url, [""], timeout))
            log.unlink(missing_ok=True)
        rss, stop = [], threading.Event()
        sampler = threading.Thread(target=sample_rss, args=(proc.pid, stop, rss), daemon=True)
        sampler.start()
        at_open: dict = {}  # the CPU counters when every user is connected and all open their address at once

        def opened():
            at_open.update(server=cpu_seconds(proc.pid), busy=busy_seconds())

        try:
            results = (browsers(url, paths, timeout, nice, opened) if client == "browser"
                       else asyncio.run(open_together(url, paths, timeout, opened)))
        finally:
            server_cpu = cpu_seconds(proc.pid) - at_open.get("server", 0.0)
            busy = busy_seconds() - at_open.get("busy", busy_seconds())
            stop.set()
            sampler.join(5)
            proc.terminate()
            proc.wait(timeout=30)
        sent = first_figures(log, min((r["opened_at"] for r in results if r.get("opened_at")), default=0.0))
    times = [r["seconds"] for r in results if r.get("seconds") is not None and not r.get("error")]
    return {"users": n, "mode": mode, "server": server, "server_start_seconds": round(up, 2), "results": results,
            "failures": sum(1 for r in results if r.get("error") or r.get("seconds") is None),
            "slowest_seconds": max(times) if times else None,
            "median_seconds": round(statistics.median(times), 2) if times else None,
            "peak_rss_mib": max((m for _, m in rss), default=None), "rss_mib": rss,
            "server_cpu_seconds": round(server_cpu, 1), "machine_cpu_seconds": round(busy, 1),
            "client": client, "browser_nice": nice if client == "browser" else None, "server_sent_seconds": sent,
            "server_slowest_seconds": max(sent) if len(sent) == n else None,
            "server_median_seconds": round(statistics.median(sent), 2) if sent else None}


def first_figures(log: Path, opened_at: float) -> list[float]:
    """Seconds from the browsers' opening to each session's first figure sent, from the server's log (sorted)."""
    first: dict = {}
    if log.is_file():
        for line in log.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            first.setdefault(event["session"], event["time"])
    return sorted(round(t - opened_at, 2) for t in first.values())


def held_within(rounds: list[dict], target: float, key: str = "slowest_seconds", server: str = "fresh") -> int:
    """The largest N whose users on the same view all drew (or, key="server_slowest_seconds", were all sent their
    figure) within `target` seconds, without a failure, on a `server` ("fresh" or "warm") server (0: none)."""
    ok = [r["users"] for r in rounds if r["mode"] == "same" and not r["failures"]
          and r.get("server", "fresh") == server
          and r.get(key) is not None and r[key] <= target]
    return max(ok, default=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", default="1,4,8,16", help="numbers of browsers at once, comma-separated")
    parser.add_argument("--mode", choices=["same", "different", "both"], default="both")
    parser.add_argument("--view", default=SAME_VIEW,
                        help=f"the address every user opens in 'same' (default {SAME_VIEW})")
    parser.add_argument("--views", default=",".join(DIFFERENT), help="addresses for 'different', comma-separated")
    parser.add_argument("--timeout", type=float, default=120, help="seconds a user waits for its figure")
    parser.add_argument("--target", type=float, default=10, help="seconds per first figure the server must hold")
    parser.add_argument("--browser-nice", type=int, default=19, choices=range(0, 20), metavar="0-19",
                        help="niceness of the browsers (19: the server first, as when they run elsewhere)")
    parser.add_argument("--client", choices=["browser", "protocol"], default="browser",
                        help="browser: headless Chromium (what a user sees, drawing included, on these cores); "
                             "protocol: a session over the server's websocket without a browser (the server's part "
                             "alone, as when a class's browsers run on their own machines)")
    parser.add_argument("--servers", choices=["fresh", "warm", "both"], default="fresh",
                        help="fresh: the users are the server's first visitors; warm: someone opened the home page "
                             "first (modules imported, model loaded), as a teacher does before class; or both")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    args = parser.parse_args()
    users = [int(u) for u in args.users.split(",")]
    views = [v.strip() for v in args.views.split(",") if v.strip()]
    check_views([args.view, *views])
    modes = ["same", "different"] if args.mode == "both" else [args.mode]
    record = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "started": datetime.now(timezone.utc)
              .isoformat(timespec="seconds"), "machine": {"cores": os.cpu_count(), "platform": platform.platform(),
              "memory_gib": round(psutil.virtual_memory().total / 2**30, 1)}, "load_before": load(),
              "target_seconds": args.target, "client": args.client,
              "browser_nice": args.browser_nice if args.client == "browser" else None, "rounds": []}
    servers = ["fresh", "warm"] if args.servers == "both" else [args.servers]
    for server in servers:
        for n in users:
            for mode in modes:
                r = round_of(n, mode, addresses(mode, n, args.view, views), args.timeout, args.browser_nice,
                             args.client, server)
                record["rounds"].append(r)
                print(f"{server} server, N={n} {mode}: slowest {r['slowest_seconds']} s, median "
                      f"{r['median_seconds']} s, {r['failures']} failure(s), server peak {r['peak_rss_mib']} MiB, "
                      f"server CPU {r['server_cpu_seconds']} of the machine's {r['machine_cpu_seconds']} s, last "
                      f"figure sent at {r['server_slowest_seconds']} s", flush=True)
    record["load_after"] = load()
    record["held_within"] = held_within(record["rounds"], args.target)
    record["server_held_within"] = held_within(record["rounds"], args.target, "server_slowest_seconds")
    if "warm" in servers:
        record["held_within_warm"] = held_within(record["rounds"], args.target, server="warm")
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"{record['held_within']} user(s) on the same view within {args.target:g} s on a fresh server"
          + (f", {record['held_within_warm']} on a warm one" if "warm" in servers else "") + f"; written {args.out}")


if __name__ == "__main__":
    main()
