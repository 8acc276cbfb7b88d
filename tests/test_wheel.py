"""The wheel is the whole product: built from a copy of the repository, installed into a fresh venv, it has every
package (the trainers, the lessons once were missing), every shipped weight (package data), the published records,
and `embedscope app` starts the app, which answers its health check.

The venv reuses the dependencies of the environment running the tests, so nothing is downloaded (see
`_venv_seeing_this_environment`); the test runs from a temporary folder and checks that `analysis` is imported from the
venv, not from this checkout."""

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOT_SOURCE = ("__pycache__", ".git", ".pytest_cache", ".benchmarks", ".venv", "build", "runs", "*.egg-info", "*.run")

LOAD_SHIPPED = """
import json, sys
from pathlib import Path
import analysis
from analysis.core.paths import ARTEFACTS, cache_root
from safetensors.torch import load_file

venv = Path(sys.argv[1]).resolve()
assert venv in Path(analysis.__file__).resolve().parents, analysis.__file__
assert venv in ARTEFACTS.resolve().parents, ARTEFACTS
assert venv not in cache_root().resolve().parents, cache_root()  # results never go into site-packages
found = {}
for manifest in sorted(ARTEFACTS.rglob("manifest.json")):  # every shipped weight: systems, ablations, baselines
    tensors = load_file(str(manifest.parent / "weights.safetensors"))
    assert tensors and all(t.numel() for t in tensors.values()), manifest
    found[manifest.parent.relative_to(ARTEFACTS).as_posix()] = len(tensors)
from analysis.experiments.machinery import records
import ui.lessons, ui.nav
assert venv in records.folder().resolve().parents, records.folder()
print(json.dumps({"analysis": analysis.__file__, "found": found, "records": sorted(records.read_all()),
                  "pages": len(ui.nav.page_files()), "lessons": len(ui.lessons.LESSONS)}))
"""


def _source_copy(dest: Path) -> Path:
    """The repository as a fresh clone has it: the files git tracks (as they are in the working tree), so neither
    cache/store nor anyone's unfinished new file goes in; outside a git checkout, every file but build leftovers."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True)
    if listed.returncode != 0:
        return Path(shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(*NOT_SOURCE, "store")))
    for name in filter(None, listed.stdout.split("\0")):
        if (REPO / name).is_file():  # a tracked file deleted in the working tree is not there
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


def _run(argv, cwd, **kw):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "EMBEDSCOPE_CACHE")}
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, **kw)
    assert done.returncode == 0, f"{argv[:3]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def _venv_seeing_this_environment(venv: Path) -> Path:
    """A new venv (its python returned) that sees, after its own site-packages, the site-packages of the interpreter
    running the tests, whichever way the suite was installed: a venv, the base Python, or `pip --user`.

    Not `--system-site-packages`: from inside a venv, that shows the *base* interpreter's packages, not the active
    environment's, so the test passed only where the base Python happened to have torch (#54). A .pth file's lines
    are appended to sys.path after the venv's own site-packages, so the wheel's copy of `analysis` wins; the .pth
    files in those folders are not run, so the editable install's finder never points back at this checkout."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=venv.parent)
    python = venv / "bin" / "python"
    own = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    cwd=venv.parent).strip())
    here = ([site.getusersitepackages()] if site.ENABLE_USER_SITE else []) + site.getsitepackages()
    (own / "tests-environment.pth").write_text("".join(f"{folder}\n" for folder in here))
    return python


def test_wheel_installs_and_runs_with_its_shipped_weights(tmp_path):
    src = _source_copy(tmp_path / "src")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
          "-w", str(tmp_path / "dist"), str(src)], cwd=tmp_path)
    wheel = next((tmp_path / "dist").glob("embedscope-*.whl"))
    venv = tmp_path / "venv"
    python, script = _venv_seeing_this_environment(venv), venv / "bin" / "embedscope"
    _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", "--quiet",
          "--disable-pip-version-check", str(wheel)], cwd=tmp_path)
    shipped = {p.parent.relative_to(src / "analysis" / "artefacts").as_posix()  # tracked ones: weights over the
               for p in (src / "analysis" / "artefacts").rglob("manifest.json")}  # size git ships stay out of it
    shutil.rmtree(src)  # nothing may come from the copy either

    work = tmp_path / "elsewhere"
    work.mkdir()
    assert "train" in _run([str(script), "--help"], cwd=work)
    assert "causal2vec" in _run([str(script), "train", "--help"], cwd=work)
    report = json.loads(_run([str(python), "-c", LOAD_SHIPPED, str(venv)], cwd=work).strip().splitlines()[-1])
    assert set(report["found"]) == shipped and "compression/smollm2-135m" in shipped, report
    assert report["records"] == sorted(p.stem for p in (REPO / "docs" / "results").glob("*.json"))
    assert report["pages"] == len(list((REPO / "pages").glob("*.py"))) and report["lessons"] > 0
    assert_the_app_starts(script, work)


def assert_the_app_starts(script: Path, work: Path) -> None:
    """`embedscope app` from the installed wheel answers Streamlit's health check and serves a page."""
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    server = subprocess.Popen([str(script), "app", "--", "--server.port", str(port), "--server.address", "127.0.0.1"],
                              cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline, answer = time.time() + 120, None
        while time.time() < deadline and server.poll() is None:
            try:
                answer = urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read()
                break
            except OSError:
                time.sleep(1)
        assert answer == b"ok", f"no health answer; the server said:\n{server.stdout.read() if server.poll() else ''}"
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read().decode()
        assert "<title>" in page.lower() or "<!doctype html>" in page.lower()
    finally:
        server.terminate()
        server.wait(timeout=30)
    with socket.socket() as s:  # stopping the command stopped the server: nothing answers on its port any more
        assert s.connect_ex(("127.0.0.1", port)) != 0, "the app's server outlived `embedscope app`"
