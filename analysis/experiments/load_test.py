"""Many users at once on one server: N headless browsers open the app together, on one lesson step (a class) and on
different views, each timed to its first figure while the server's memory is sampled. docs/BUDGETS.md's load table
is rendered from this record, with the number of users one default server holds within the target.

The browsers are `scripts/load_test.py` (it knows the pages, which this library may not import), run by
`machinery.scripts`; each round is a new `streamlit run app.py` on a fresh cache holding the converted models and
the shipped seeds, as a class meets it.

    python -m analysis measure load_test                                 # N = 1, 4, 8, 16, both modes (~15 min)
    python -m analysis measure load_test --client protocol               # the server's part alone, no browsers
    python -m analysis measure load_test --users 1,2 --modes same        # a smoke run
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from analysis.core.errors import UserError
from analysis.core.params import param
from analysis.experiments import Measured
from analysis.experiments.machinery.records import Model, Sample, Table
from analysis.experiments.machinery.render import table_markdown
from analysis.experiments.machinery.scripts import measured_by, run_script

ID = "load_test"
TITLE = "Many users at once on one server: seconds to the first figure and the server's memory"
HELP = ("N headless browsers at once against one fresh `streamlit run app.py`, all on one lesson step (same) and "
        "on different views (different): each user's seconds to the first figure, failures, the server's peak "
        "memory, and the largest N whose users on the same view all drew within the target.")
BLOCK = "load-test"  # the docs/BUDGETS.md block this record fills
DIGITS = {"slowest s": 1, "median s": 1, "sent: slowest s": 1, "sent: median s": 1, "server peak MiB": 0,
          "server CPU s": 0, "machine CPU s": 0, "server start s": 1}


@dataclass(frozen=True)
class Config:
    users: str = param("1,4,8,16", "numbers of browsers at once, comma-separated (each at most 32)")
    modes: str = param("both", "same: every user on one lesson step; different: six views in turn; or both",
                       choices=("same", "different", "both"))
    timeout: float = param(180.0, "seconds a user waits for its figure", min=10, limit=900)
    target: float = param(10.0, "seconds per first figure the server must hold", min=1, limit=120)
    client: str = param("browser", "browser: headless Chromium on these cores (what a user sees, drawing included); "
                                    "protocol: sessions over the server's websocket without a browser (the server's "
                                    "part alone, as when a class's browsers run on their own machines)",
                        choices=("browser", "protocol"))
    servers: str = param("fresh", "fresh: the users are a new server's first visitors; warm: someone opened the home "
                                  "page first (modules imported, model loaded), as a teacher does before class; or "
                                  "both", choices=("fresh", "warm", "both"))
    browser_nice: int = param(19, "niceness of the browsers, which share the server's cores here (19: the server's "
                                  "work first, as when a class's browsers run on their own machines; 0: as equals)",
                              min=0, max=19)


def users(text: str) -> list[int]:
    try:
        found = [int(u) for u in text.split(",") if u.strip()]
    except ValueError:
        found = []
    if not found or not all(1 <= n <= 32 for n in found):
        raise UserError(f"--users takes numbers from 1 to 32 separated by commas, not {text!r}.")
    return found


def measure(config: Config, compute, progress) -> Measured:
    counts = users(config.users)
    progress(0, 1, f"{len(counts)} round(s) of users at once ({config.modes}, {config.servers} server)")
    out = run_script("load_test.py", ["--users", ",".join(map(str, counts)), "--mode", config.modes,
                                      "--timeout", str(config.timeout), "--target", str(config.target),
                                      "--browser-nice", str(config.browser_nice), "--client", config.client,
                                      "--servers", config.servers],
                     out_flag="--out")
    progress(1, 1, "done")
    rows = tuple((r["users"], r["mode"], r.get("server", "fresh"), r["slowest_seconds"], r["median_seconds"],
                  r["server_slowest_seconds"], r["server_median_seconds"], r["failures"], r["peak_rss_mib"],
                  r["server_cpu_seconds"], r["machine_cpu_seconds"], r["server_start_seconds"]) for r in out["rounds"])
    users_are = (f"headless Chromium on the same two cores at nice {config.browser_nice}" if config.client == "browser"
                 else "protocol clients (Streamlit's websocket messages a browser sends on opening an address, no "
                      "drawing) in one process on the same cores")
    return Measured(data=f"the app on a fresh cache per round (converted models and shipped seeds), {users_are}",
                    sample=Sample(n=sum(counts) * (2 if config.modes == "both" else 1)
                                  * (2 if config.servers == "both" else 1), how="every user of every round"),
                    models=[Model(name="default", identity=None)],
                    tables=[Table("rounds", "Seconds to the first figure per round, and the server's memory",
                                  ("users", "mode", "server", "slowest s", "median s", "sent: slowest s",
                                   "sent: median s", "failures", "server peak MiB", "server CPU s", "machine CPU s",
                                   "server start s"),
                                  rows, digits=DIGITS,
                                  notes="slowest and median: seconds until a browser showed its figure; sent: until "
                                        "the server sent it (the server's part of the wait); CPU seconds over the "
                                        "round, the server's (process and children) and the whole machine's: the "
                                        "difference is the browsers' (and anything else's).")],
                    findings=findings(out, config.target), extra=out,
                    variant="" if config.client == "browser" else config.client)  # load_test_protocol.json beside


def findings(out: dict, target: float) -> list[str]:
    protocol = out.get("client") == "protocol"
    each = "each sent its figure" if protocol else "each drawing"
    held = out["held_within"]
    said = [f"One default server, new, held {held} user(s) on the same lesson step, {each} within {target:g} s."
            if held else f"No round of users on the same lesson step of a new server was held, {each} within "
            f"{target:g} s."]
    if "held_within_warm" in out:
        warm = out["held_within_warm"]
        said.append(f"With the home page opened first (a warm server) it held {warm} user(s) on one step within "
                    f"{target:g} s." if warm else f"A warm server (the home page opened first) held no round of users "
                    f"on one step within {target:g} s.")
    if "server_held_within" in out and not protocol:
        sent = out["server_held_within"]
        said.append(f"The server sent every figure within {target:g} s to {sent} user(s) on one step (a session "
                    "starts once its browser has loaded the page, here on the same cores)." if sent else
                    f"The server did not send every figure within {target:g} s in any round on one step (a session "
                    "starts once its browser has loaded the page, here on the same cores).")
    spread = [r for r in out["rounds"] if r["mode"] == "different" and r.get("slowest_seconds") is not None]
    if spread:
        worst = max(spread, key=lambda r: r["slowest_seconds"])
        user = max((u for u in worst["results"] if u.get("seconds") is not None), key=lambda u: u["seconds"])
        said.append(f"On different views the slowest user waited {user['seconds']:.0f} s, on {user['view']} "
                    f"({worst['users']} users, {worst.get('server', 'fresh')} server).")
    peak = max((r["peak_rss_mib"] or 0 for r in out["rounds"]), default=0)
    said.append(f"The server's memory peaked at {peak:,.0f} MiB over all rounds (one model in memory however many "
                "sessions).")
    largest = max(out["rounds"], key=lambda r: (r["users"], r["mode"] == "same"))
    if largest.get("machine_cpu_seconds"):
        share = largest["server_cpu_seconds"] / largest["machine_cpu_seconds"]
        said.append(f"With {largest['users']} users ({largest['mode']} view) the server used {share:.0%} of the "
                    + ("machine's CPU seconds, the protocol clients and anything else the rest." if protocol else
                       f"machine's CPU seconds and the browsers, on the same two cores at nice "
                       f"{out.get('browser_nice', 0)}, the rest: the times are upper bounds for browsers on their "
                       "own machines."))
    return said


def block(records: list) -> str:
    """docs/BUDGETS.md's load tables: the latest full record (N = 1, 4, 8, 16, both modes) with browsers, and the
    latest with protocol clients (the server's part alone), each with its command, date, commit and load."""
    parts = []
    for client, what in (("browser", "Headless browsers on the server's cores"),
                         ("protocol", "Protocol clients, no browser (the server's part alone)")):
        full = [r for r in records if r.config.get("modes") == "both" and r.config.get("client", "browser") == client]
        if full:
            rec = max(full, key=lambda r: r.date)
            table = table_markdown(dataclasses.replace(rec.table("rounds"), title="", notes="", digits=DIGITS))
            parts.append(f"**{what}.** {measured_by(rec)}: {' '.join(rec.findings)}\n\n{table}")
    return "\n\n".join(parts) or "(not measured yet: `python -m analysis measure load_test`)"
