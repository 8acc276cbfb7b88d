"""What a record says about where its numbers came from: the command, the models and weights, the machine.

    command("gircse", config)          # "python -m analysis measure gircse --sample 300": derived, never typed
    model_entry(backbone, {"shipped": folder})   # Model(name, identity, {"shipped": sha256})
    weights_folder("compression", facts, "people5")   # a run name, "shipped", a repository path or a folder
    Clock()                            # wall time and the load average before and after

Weights are named in commands the way a reader can use them on another machine: "shipped" (the repository's own),
a path inside the repository (a shipped ablation), or the name of a training run in this machine's cache
(`<cache>/runs/<system>/<model>/<name>`, where `python -m analysis train <system> --out` puts it). A folder
elsewhere is accepted and shown by its name only: records never carry a path of this machine.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path

from analysis.core.errors import UserError
from analysis.core.options import flags
from analysis.core.paths import REPO, file_sha256
from analysis.experiments.machinery.records import Machine, Model
from analysis.weights.artefacts import MANIFEST, WEIGHTS, model_folder_name, runs_root, shipped_dir

MEASURE = "python -m analysis measure"


def command(experiment_id: str, config) -> str:
    """The command that reproduces a measurement: the experiment's id and its non-default settings."""
    return " ".join([MEASURE, experiment_id, *flags(config)])


def weights_folder(system: str, facts, spec: str) -> Path:
    """The folder `spec` names for trained system `system` on the model of `facts`: "shipped" (or
    "shipped/<place>", e.g. "shipped/ablations/single-person"), a folder relative to the repository, a run name
    under `<cache>/runs/<system>/<model>/`, or any folder. One sentence when none holds a manifest."""
    base, _, place = spec.partition("/")
    candidates = []
    if base == "shipped":
        candidates.append(shipped_dir(system, facts) / place)
    else:
        candidates += [REPO / spec, runs_root(system) / model_folder_name(facts) / spec, Path(spec).expanduser()]
    for folder in candidates:
        if (folder / MANIFEST).is_file():
            return folder
    raise UserError(f"No {system} weights at {spec!r}: give 'shipped', 'shipped/<place>', a run name under "
                    f"{runs_root(system) / model_folder_name(facts)} or a folder with a manifest.json.")


def shown_weights(spec: str) -> str:
    """`spec` as a record shows it: as given, unless it is a folder outside the repository (then its name)."""
    path = Path(spec).expanduser()
    if not path.is_absolute():
        return spec
    resolved = path.resolve()
    return resolved.relative_to(REPO).as_posix() if REPO in resolved.parents else resolved.name


def weights_digest(folder: Path) -> str:
    """The SHA-256 of an artefact's weights file (read from the file itself, not trusted from its manifest)."""
    return file_sha256(Path(folder) / WEIGHTS)


def model_entry(backbone, weights: dict | None = None) -> Model:
    """The model a record measured, with the digests of the trained weights used on it ({shown name: folder})."""
    return Model(name=backbone.facts.name, identity=backbone.identity,
                 weights={label: weights_digest(folder) for label, folder in (weights or {}).items()})


class Clock:
    """A measurement's date, wall time and the machine's load at its start and end (a measurement under load is
    slower, not wrong: the record says how busy the machine was)."""

    def __init__(self):
        self.date = datetime.date.today().isoformat()
        self.load_before = _load()
        self._began = time.perf_counter()

    def seconds(self) -> float:
        return round(time.perf_counter() - self._began, 1)

    def machine(self) -> Machine:
        import torch  # lazy: keeps torch off the pages' and the command line's start

        return Machine(cores=os.cpu_count(), torch=torch.__version__, threads=torch.get_num_threads(),
                       python=platform.python_version(), load_before=self.load_before, load_after=_load(),
                       transformers=_version("transformers"), mteb=_version("mteb"), git_commit=checkout_commit())


def _version(package: str) -> str | None:
    """An installed package's version without importing it (None when it is not installed)."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def checkout_commit(root: Path = REPO) -> str | None:
    """The commit of the checkout the code runs from, "+modified" when a tracked file differs from it; None when
    the code is not in a git checkout (a wheel) or git is missing."""
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+modified" if dirty else head


def _load() -> tuple:
    return tuple(round(x, 2) for x in os.getloadavg())
