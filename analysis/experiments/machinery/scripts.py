"""Measurements whose work lives in a script of the repository (`scripts/`): the app driven by headless browsers,
or a process whose peak memory must be its own. The library may not import the pages, and a peak resident set is
only a process's own, so such an experiment runs its script as a child process that writes one JSON file, and makes
the typed record from it.

    rows = run_script("load_test.py", ["--users", "1,4"], out_flag="--out")   # the script's JSON, parsed
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from analysis.core.errors import UserError
from analysis.core.paths import REPO

SCRIPTS = REPO / "scripts"


def run_script(name: str, args: list[str], *, out_flag: str = "--json") -> dict:
    """The JSON the script `name` wrote to the file named after `out_flag`; one sentence when it cannot run or
    fails (its last line of output named)."""
    script = SCRIPTS / name
    if not script.is_file():
        raise UserError(f"scripts/{name} is not here: this measurement runs from a checkout of the repository.")
    with tempfile.TemporaryDirectory(prefix="embedscope-script-") as tmp:
        out = Path(tmp) / "out.json"
        done = subprocess.run([sys.executable, str(script), *args, out_flag, str(out)], cwd=REPO,
                              capture_output=True, text=True)
        if done.returncode != 0 or not out.is_file():
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise UserError(f"scripts/{name} failed: {last[0]}")
        return json.loads(out.read_text(encoding="utf-8"))


def measured_by(rec) -> str:
    """"Measured by `command` (date, at commit, N cores, load before and after)": where a block's numbers come from."""
    m = rec.machine
    load = f", load {m.load_before[0]:.1f} before, {m.load_after[0]:.1f} after" if m and m.load_before else ""
    return (f"Measured by `{rec.command}` ({rec.date}, at {(m.git_commit if m else None) or rec.code_version}, "
            f"{m.cores if m else '?'} cores{load})")
