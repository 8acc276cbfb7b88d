"""Hostile runs of the model report (issue 37): an output that cannot be written is found before any work, not
after minutes of it; a run leaves nothing in the user's home (matplotlib's font cache goes under the tool's cache).
What a report does when its budget runs out, when a method fails or with --n-boot 0 is tested with the report
itself (tests/test_report.py: a fake clock on a tiny model, the recommendation's rules on hand-made sections)."""

# ruff: noqa: F811 -- pytest fixtures imported from hostile.py are named again as test arguments
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hostile import REPO, cache_dir, refused, tiny_dir, warm_imports  # noqa: F401 -- fixtures

pytestmark = pytest.mark.usefixtures("warm_imports")


@pytest.mark.parametrize("out, words", [
    ("/proc/self/report.html", "cannot be written"),  # passes an access check (as root), refuses every new file
    ("/nonexistent/folder/report.html", "does not exist"),
    ("{tmp}/taken.html", "is a folder"),  # the .json beside it is a folder
])
def test_an_output_that_cannot_be_written_is_refused_before_any_work(capfd, cache_dir, tmp_path, out, words):
    (tmp_path / "taken.json").mkdir()
    message = refused(capfd, cache_dir, "report", "--model", "/nonexistent/model", "--data", "/nonexistent/pairs.csv",
                      "--out", out.format(tmp=tmp_path), seconds=10)
    assert words in message and "--out" in message and "pairs.csv" not in message  # before the data is read


def test_no_command_writes_matplotlib_files_into_the_home(tmp_path, tiny_dir):
    """skdim, behind the report's intrinsic-dimension trajectory, imports matplotlib, which writes a font cache and
    config on first import: under the tool's cache root, never into ~/.cache or ~/.config. The `id` command runs
    the same estimate as the report's first step, in a fresh process (a test process has imported it already)."""
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    env.update(HOME=str(home), EMBEDSCOPE_CACHE=str(cache))
    done = subprocess.run([sys.executable, "-m", "analysis", "id", "--data", "demo", "--model", tiny_dir, "--method",
                           "mean", "--bootstrap", "0"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(home.rglob("*")) == [], list(home.rglob("*"))[:5]
    assert list((cache / ".matplotlib").glob("fontlist-*.json")), "matplotlib's cache was not kept under the cache"
