"""`python -m analysis warm [--model NAME | --all-models]`: precompute into the cache what every lesson step and
every page's default view needs, so each opens on its first figure without waiting."""

from __future__ import annotations

import json
import subprocess
import sys

from analysis.core.errors import UserError
from cli.commands._common import load_model

HELP = ("Precompute into the cache everything the lessons and every page's default view need (default model: "
        "about 3-4 min on two quiet CPU cores, it prints an estimate; --all-models: both built-in models, about 10 "
        "min more).")
BUILTIN = ("default", "gemma3-270m")


def add_arguments(parser) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--model", default="default",
                       help="the model to warm: default (SmolLM2-135M-Instruct) or gemma3-270m, or any model name "
                            "the app's sidebar accepts")
    which.add_argument("--all-models", action="store_true", help="both built-in models, one after the other")


def run(args) -> dict:
    models = list(BUILTIN) if args.all_models else [args.model]
    for name in models:
        load_model(name)  # a wrong name is one sentence now, not a failure on every page later
    # The app's pages and lessons define what they need; they are opened headless by ui.warm, in a child process
    # because the command line never imports Streamlit (tests/test_layers.py).
    done = subprocess.run([sys.executable, "-m", "ui.warm", *models], stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise UserError(f"Warming stopped with exit code {done.returncode}; the message above says why.")
    return json.loads(done.stdout.strip().splitlines()[-1])
