"""Where a training run writes, checked before the first step, so no run is lost at its end.

A run's folder (`--out`, default `<cache>/runs/<system>/<model>/latest`) holds the finished artefact
(weights.safetensors + manifest.json, written only when the run ends well) and `run/`: the log, the resumable
checkpoint and `run/best/`, the best weights so far with a manifest marked partial. A run that is killed, fails
or meets a non-finite loss leaves `run/best/` behind; it never leaves half-written or untrained weights as the
result. The repository's shipped artefacts are written only by `--ship`, after the run, by copying the result, or
by `python -m analysis ship <system> FOLDER` later (`systems.install`), which can first move the artefact it replaces
aside (`--move-current-to ablations/<name>`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from analysis.core.errors import UserError
from analysis.core.paths import ARTEFACTS
from analysis.training import ledger
from analysis.weights.artefacts import MANIFEST, model_folder_name, read_manifest, runs_root, shipped_dir

RUN, BEST = "run", "best"


def result_dir(system: str, facts, out: str = "") -> Path:
    """The run's folder: `out` when given, else <cache>/runs/<system>/<model>/latest (never inside the repository
    by default; the app's live runs sit beside `latest` under their own names)."""
    return Path(out).expanduser() if out else runs_root(system) / model_folder_name(facts) / "latest"


def prepare(folder: Path) -> Path:
    """Check, before any work, that `folder` can take the run: not a file, not inside the shipped artefacts,
    creatable and writable. Returns the resolved folder."""
    folder = folder.resolve()
    if folder.exists() and not folder.is_dir():
        raise UserError(f"--out names a file, not a folder: {folder}.")
    if folder == ARTEFACTS.resolve() or ARTEFACTS.resolve() in folder.parents:
        raise UserError("--out is inside the repository's shipped artefacts; train elsewhere and add --ship to "
                        "replace the shipped weights on purpose.")
    try:
        (folder / RUN).mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder / RUN, prefix=".write-check-"):
            pass
    except OSError as err:
        raise UserError(f"cannot write the run's folder {folder} ({err.strerror or err}): give --out a folder that "
                        "can be written.") from err
    return folder


def ship(result: Path, system: str, facts, place: str = "", move_current_to: str = "") -> Path:
    """Copy a finished artefact folder (every file at its top level) into the shipped artefacts, atomically.

    Args:
        facts: the model's facts, or its name as the run's manifest records it.
        place: a folder below the model's shipped folder ("" = that folder itself), where systems with several
            shipped artefacts keep the others (GIRCSE: baselines/causal-eos, ablations/<objective>).
        move_current_to: first move the artefact now at `place` to this folder below the model's shipped folder
            (e.g. "ablations/icr-mean"), so a retrained system keeps its predecessor; refused when nothing is
            there or the target already holds an artefact.

    Folders inside the replaced one (ablations/, baselines/) are kept; the ledger notes what shipped
    (`analysis.training.ledger`: its time and steps outlive weights kept out of git)."""
    root = shipped_dir(system, facts)
    dest = root / _relative(place, "place") if place else root
    if move_current_to:
        _move_current(dest, root / _relative(move_current_to, "--move-current-to"))
        ledger.note(root, move_current_to, read_manifest(root / move_current_to))
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        _copy_files(result, tmp)
        kept = {p.name: p for p in dest.iterdir() if p.is_dir()} if dest.is_dir() else {}  # e.g. ablations/
        old = dest.with_name(dest.name + f".old{os.getpid()}")
        if dest.exists():
            dest.rename(old)
        tmp.rename(dest)
        for name in kept:
            (old / name).rename(dest / name)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ledger.note(root, place, read_manifest(dest))
    return dest


def _relative(path: str, what: str) -> Path:
    """`path` as a folder below the model's shipped folder; absolute paths and '..' are refused."""
    rel = Path(path)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise UserError(f"{what} must be a folder below the model's shipped folder, such as ablations/icr-mean, "
                        f"not '{path}'.")
    return rel


def _move_current(current: Path, target: Path) -> Path:
    """Copy the artefact at `current` to `target` (checked: something to move, nothing to overwrite), through a
    temporary folder renamed at the end; the copy is whole before `ship` replaces `current`, so a failure between
    the two loses nothing."""
    if not (current / MANIFEST).is_file():
        raise UserError(f"There is no shipped artefact in {current} to move.")
    if target.exists() and any(target.iterdir()):
        raise UserError(f"{target} already holds files; choose another folder for the current artefact.")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        _copy_files(current, tmp)
        if target.exists():
            target.rmdir()  # empty, checked above
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _copy_files(src: Path, dst: Path) -> Path:
    """Copy the files at the top level of `src` (not its folders, not hidden temporary files) into `dst`."""
    for f in src.iterdir():
        if f.is_file() and not f.name.startswith("."):
            shutil.copy2(f, dst / f.name)
    return dst
