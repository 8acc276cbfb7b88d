"""`python -m analysis seeds`: regenerate the precomputed results shipped for the built-in models (`cache.seeds`).

A developer's command, run after editing code that a seeded result depends on (`tests/test_seeds.py` says when):
`warm` on the default model into an empty temporary cache (sharing the converted models), then its small entries
copied into `cache/seeds/`. Minutes on two cores.

`--dtype auto` runs each method in the precision its model's dtype record allows where the CPU has bfloat16 units,
and float32 where it has none, and the cache keys of the two differ. So warm runs once as this machine's auto would
and once as a machine without bfloat16 units (`EMBEDSCOPE_BF16=0`): a first visit is seeded on either machine, and a
result whose precision is float32 on both is stored once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from analysis.core.errors import UserError
from analysis.core.paths import cache_root
from analysis.core.precision import FORCE
from cache.seeds import export

HELP = ("Regenerate cache/seeds/ (the precomputed first figures shipped for the default model): warm into an empty "
        "temporary cache, as a machine with bfloat16 units and as one without, then copy its small entries; minutes "
        "on two CPU cores.")
MACHINES = ({}, {FORCE: "0"})  # this machine's auto, then a machine without bfloat16 units


def add_arguments(parser) -> None:
    parser.add_argument("--model", default="default", help="the built-in model to seed (default: default)")


def run(args) -> dict:
    with tempfile.TemporaryDirectory(prefix="embedscope-seeds-") as tmp:
        root = Path(tmp)
        models = cache_root() / "models"
        if models.is_dir():
            (root / "models").symlink_to(models)  # converted once already: not again
        for machine in MACHINES:
            env = {**os.environ, "EMBEDSCOPE_CACHE": str(root), "EMBEDSCOPE_SEEDS": "0", **machine}  # never copy seeds
            if not machine:
                env.pop(FORCE, None)
            done = subprocess.run([sys.executable, "-m", "ui.warm", args.model], env=env, stdout=subprocess.PIPE,
                                  text=True)
            if done.returncode != 0:
                raise UserError(f"Warming stopped with exit code {done.returncode}; the message above says why.")
        return export(root)
