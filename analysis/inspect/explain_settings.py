"""What a request to explain a similarity may set, and its limits: `Settings` (fields of `analysis.core.params.param`,
so the `explain` command's flags and their checks come from them) and the deletion curves' defaults. Kept apart from
`attribution` (torch) so the command line checks a request before any heavy import or model load, and the
faithfulness record reads its curves without torch.

    settings = check(Settings(steps=32))      # a UserError in one sentence past a limit, before any work
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.core.params import check as check_params
from analysis.core.params import param

STEPS = 16  # at most this many path nodes per text by default: the time budget's (docs/BUDGETS.md); more, a smaller gap
DIRECTIONS = 2  # the pair matrix in the plane of the two embedding changes: exact, two backward passes per node
BASELINES = ("mean", "pad")  # the same vector at every position: the mean token vector, or the padding token's
FRACTIONS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.6, 0.8, 1.0)  # of the words deleted or inserted; the first tenths decide most
RANDOMS = 2  # random permutations per pair in the deletion and insertion curves (each curve kept)
ORDERS = ("attribution", "attention", "random")  # the orders the words are deleted and inserted in
# a pair's gains (`faithfulness.Curves.gains`); > 0: the attribution order moves the interaction faster than the other
GAINS = ("deletion_vs_random", "insertion_vs_random", "deletion_vs_attention", "insertion_vs_attention")


@dataclass(frozen=True)
class Settings:
    """`attribution.explain_pair`'s choices (its keywords of the same names); a cached explanation is kept under them."""

    steps: int = param(STEPS, "at most this many path nodes per text; the adaptive rule stops earlier once the parts "
                              "add up (16 fits the time budget of docs/BUDGETS.md); more nodes, a smaller completeness "
                              "gap", min=3)
    baseline_kind: str = param("mean", "what every input vector starts from: the average token vector or the padding "
                                       "token's; the first position keeps its own (the attention sink)",
                               choices=BASELINES)
    directions: int = param(DIRECTIONS, "1 = token attributions only (fastest); 2 = and the pair matrix in the plane "
                                        "of the two embedding changes (exact); K > 2 = the full pair matrix estimated "
                                        "in K directions, with standard errors; 0 = the full matrix exactly (the "
                                        "embedding's width in backward passes per node)", min=0)
    seed: int = param(0, "seed of the random directions (directions > 2)", min=0)
    through_generation: bool = param(False, "soft tokens: differentiate through the generation (by default the "
                                            "generated inputs are held as inputs of their own, so they are "
                                            "attributed beside the words)")


DEFAULT = Settings()


def check_settings(steps: int, directions: int) -> None:
    """The limits that need no model: steps and output directions (an exact matrix is checked with the model)."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 3:
        raise UserError(f"Use at least 3 steps along the path (one Simpson panel), not {steps}.")
    budgets.check("explain_steps", steps, "the number of steps along the attribution path")
    if isinstance(directions, bool) or not isinstance(directions, int) or directions < 0:
        raise UserError("Give the output directions as 1 (token attributions only), 2 (and the pair matrix in the "
                        "plane of the two changes), more (the full matrix, estimated) or 0 (the full matrix, exact).")
    if directions > 2:
        budgets.check("explain_directions", directions, "output directions of the pair matrix")


def check(settings: Settings, name_of=lambda name: name) -> Settings:
    """`settings` when every field is valid and within the budgets, else one UserError (`name_of` names the field as
    the caller shows it: a flag)."""
    check_params(settings, name_of)
    check_settings(settings.steps, settings.directions)
    return settings
