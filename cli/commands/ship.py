"""`python -m analysis ship <system> FOLDER`: ship a finished training run into analysis/artefacts/ after the fact.

    python -m analysis ship gircse ~/runs/gircse-icr --move-current-to ablations/icr-mean
    python -m analysis ship gircse ~/runs/causal-eos        # its manifest says causal-eos: baselines/causal-eos/

What `train <system> --ship` does at the end of a run, for a run trained without it (a long run is best judged
before it replaces the shipped weights). See analysis.training.systems.install.
"""

from __future__ import annotations

from analysis.training.systems import SYSTEMS, install

HELP = ("Copy a finished training run's folder (its --out) into the repository's shipped artefacts, where `train "
        "--ship` would have put it (GIRCSE: the ICR adapter replaces adapter=shipped, --objective causal-eos goes to "
        "baselines/causal-eos, other objectives to ablations/<objective>); --move-current-to first keeps the "
        "artefact it replaces in a folder below the model's shipped folder.")


def add_arguments(parser) -> None:
    parser.add_argument("system", choices=sorted(SYSTEMS), help="the trained system")
    parser.add_argument("folder", help="the run's folder (train --out), holding weights.safetensors + manifest.json")
    parser.add_argument("--move-current-to", default="", metavar="SUBFOLDER",
                        help="move the artefact now in the run's place to this folder below the model's shipped "
                             "folder first, e.g. ablations/icr-mean (refused if it already holds files)")


def run(args) -> dict:
    return install(args.system, args.folder, move_current_to=args.move_current_to)
