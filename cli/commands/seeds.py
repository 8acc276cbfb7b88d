"""`python -m analysis seeds`: regenerate the precomputed results shipped for the built-in models (`cache.seeds`).

A developer's command, run after editing code that a seeded result depends on (`tests/test_seeds.py` says when):
`warm` on the default model into an empty temporary cache (sharing the converted models), then its small entries
copied into `cache/seeds/`. Minutes on two cores.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from analysis.core.errors import UserError
from analysis.core.paths import cache_root
from cache.seeds import export

HELP = ("Regenerate cache/seeds/ (the precomputed first figures shipped for the default model): warm into an empty "
        "temporary cache, then copy its small entries; a few minutes on two CPU cores.")


def add_arguments(parser) -> None:
    parser.add_argument("--model", default="default", help="the built-in model to seed (default: default)")


def run(args) -> dict:
    with tempfile.TemporaryDirectory(prefix="embedscope-seeds-") as tmp:
        root = Path(tmp)
        models = cache_root() / "models"
        if models.is_dir():
            (root / "models").symlink_to(models)  # converted once already: not again
        env = {**os.environ, "EMBEDSCOPE_CACHE": str(root), "EMBEDSCOPE_SEEDS": "0"}  # compute, never copy seeds
        done = subprocess.run([sys.executable, "-m", "ui.warm", args.model], env=env, stdout=subprocess.PIPE,
                              text=True)
        if done.returncode != 0:
            raise UserError(f"Warming stopped with exit code {done.returncode}; the message above says why.")
        return export(root)
