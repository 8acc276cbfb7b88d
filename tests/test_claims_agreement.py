"""Compare models, per claim: whether two models' verdicts agree, disagree (holds on one, reversed on the other),
differ only in certainty, or cannot be compared because a model could not judge the claim."""

import pytest

from analysis.experiments.machinery.verdicts import CANNOT, HOLDS, NOT_MEASURED, REVERSED, UNRESOLVED, agreement
from ui.claims import agreement_counts, side_by_side


@pytest.mark.parametrize("words, said", [
    ([HOLDS, HOLDS], "agree"), ([REVERSED, REVERSED], "agree"), ([UNRESOLVED, UNRESOLVED], "agree"),
    ([HOLDS, REVERSED], "disagree"), ([HOLDS, UNRESOLVED], "differ in certainty"),
    ([HOLDS, CANNOT], "not comparable"), ([NOT_MEASURED, HOLDS], "not comparable"), ([HOLDS, None], "not comparable"),
    ([HOLDS], "not comparable"),
])
def test_agreement(words, said):
    assert agreement(words) == said


def _board(*words):
    claims = [{"id": f"c{i}", "paper": "p", "says": f"claim {i}", "verdict": {"word": w, "number": ""}}
              for i, w in enumerate(words)]
    return {"papers": {"p": {"title": "A paper"}}, "claims": claims}


def test_the_side_by_side_table_says_per_claim_and_in_one_line_where_the_models_agree():
    table = side_by_side({"A": _board(HOLDS, HOLDS, CANNOT), "B": _board(HOLDS, REVERSED, HOLDS)})
    assert list(table["models"]) == ["agree", "disagree", "not comparable"]
    assert agreement_counts(table) == "1 agree; 1 disagree; 1 not comparable"
    assert set(side_by_side({"A": _board(HOLDS)})["models"]) == {""}  # one model: nothing to compare
