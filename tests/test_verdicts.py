"""The verdict rules on known answers: synthetic numbers in, the word fixed before measuring out."""

import math

import pytest

from analysis.experiments.machinery import verdicts as v


def test_a_paired_difference_that_excludes_zero_holds_or_is_reversed():
    assert v.paired(0.03, (0.01, 0.05), 500).word == v.HOLDS
    assert v.paired(-0.03, (-0.05, -0.01), 500).word == v.REVERSED
    assert v.paired(-0.03, (-0.05, -0.01), 500, direction=-1).word == v.HOLDS  # claimed to fall
    assert v.paired(0.03, (0.01, 0.05), 500).number == "+0.030 [+0.010, +0.050]"


def test_an_unresolved_difference_says_how_many_more_items_would_resolve_it():
    # half-width 0.02 at n = 100 and an effect of 0.01: n' = 100 * (0.02 / 0.01)^2 = 400, so 300 more
    got = v.paired(0.01, (-0.01, 0.03), 100, unit="pairs")
    assert got.word == v.UNRESOLVED and "about 300 more pairs" in got.detail
    assert v.more_items(100, 0.02, 0.01) == 300
    assert v.more_items(100, 0.02, 0.0) is None
    assert "effect is zero" in v.paired(0.0, (-0.01, 0.01), 100).detail


def test_no_interval_is_never_a_verdict_of_significance():
    got = v.paired(0.05, (math.nan, math.nan), 50)
    assert got.word == v.UNRESOLVED and "no interval" in got.detail


def test_a_claim_of_several_comparisons_needs_all_of_them():
    h, r, u = v.paired(0.1, (0.05, 0.15), 10), v.paired(-0.1, (-0.15, -0.05), 10), v.paired(0.0, (-1, 1), 10)
    assert v.all_of([h, h], ["a", "b"]).word == v.HOLDS
    assert v.all_of([h, u], ["a", "b"]).word == v.UNRESOLVED
    assert v.all_of([h, r], ["a", "b"]).word == v.REVERSED
    assert v.all_of([h, r], ["vs 0", "vs 3"]).number.startswith("vs 0: +0.100")


def test_rates_on_different_items_use_newcombe_from_wilson():
    # 83/100 against 16/100: Wilson [0.744, 0.891] and [0.101, 0.245] give Newcombe's [+54.9, +75.5] points by hand
    got = v.rate_difference(83, 100, 16, 100)
    assert got.word == v.HOLDS and got.number == "+67.0 points [+55.0, +75.5]" and "Newcombe" in got.detail
    assert v.rate_difference(10, 20, 9, 20).word == v.UNRESOLVED


def test_a_rate_against_a_bar():
    assert v.above_bar(199, 200, 0.95).word == v.HOLDS
    assert v.above_bar(10, 200, 0.5).word == v.REVERSED
    assert v.above_bar(96, 100, 0.95).word == v.UNRESOLVED


@pytest.mark.parametrize("position, cells, gap, word", [
    (1, 40, 0.0, v.HOLDS), (10, 40, 0.05, v.HOLDS), (11, 40, 0.005, v.HOLDS),  # top quarter, or within 0.01
    (15, 40, 0.03, v.UNRESOLVED), (30, 40, 0.05, v.REVERSED), (73, 84, 0.1, v.REVERSED)])
def test_a_ranking_claim_says_the_rank_and_the_gap(position, cells, gap, word):
    got = v.rank(position, cells, gap)
    assert got.word == word and f"rank {position} of {cells}" in got.number


def test_a_cost_claim_is_about_at_most_the_claimed_ratio():
    assert v.ratio(1.3, claimed=1.4).word == v.HOLDS
    assert v.ratio(0.9, claimed=1.4).word == v.HOLDS  # cheaper than claimed still holds
    assert v.ratio(2.5, claimed=1.4).word == v.REVERSED
    assert v.ratio(1.7, claimed=1.4, spread=(1.6, 1.9)).word == v.UNRESOLVED  # straddles 1.75


def test_cannot_run_and_not_measured_say_why():
    assert v.cannot_run("a 7B model").as_json() == {"word": v.CANNOT, "number": "", "detail": "a 7B model"}
    assert v.not_measured("the budget ran out").word == v.NOT_MEASURED


def test_non_inferiority_can_hold_fail_and_stay_open():
    assert v.non_inferior(-0.004, (-0.008, 0.001), 500, margin=0.01).word == v.HOLDS  # a tie, as the paper's
    assert v.non_inferior(-0.05, (-0.07, -0.03), 500, margin=0.01).word == v.REVERSED  # worse by more than the margin
    got = v.non_inferior(-0.01, (-0.03, 0.01), 500, margin=0.01)
    assert got.word == v.UNRESOLVED and "margin -0.01" in got.number
    # "no gain" (gircse-contrastive): K=0 minus K=5 not below -margin; a clear gain from generating reverses it
    assert v.non_inferior(0.2, (0.15, 0.25), 500, margin=0.01).word == v.HOLDS
    assert v.non_inferior(-0.05, (-0.08, -0.02), 500, margin=0.01).word == v.REVERSED


def test_a_rate_difference_with_a_margin_is_a_non_inferiority():
    assert v.rate_difference(400, 400, 398, 400, margin=0.03).word == v.HOLDS
    assert v.rate_difference(100, 100, 199, 200, margin=0.03).word == v.UNRESOLVED  # Wilson at n = 100 reaches 96.3%
    assert v.rate_difference(50, 100, 90, 100, margin=0.03).word == v.REVERSED
    assert v.rate_difference(26, 50, 27, 50, margin=0.05).word == v.UNRESOLVED


def test_equivalence_within_a_band():
    assert v.equivalent(0.004, (-0.006, 0.012), 500, margin=0.02).word == v.HOLDS
    assert v.equivalent(-0.06, (-0.08, -0.04), 500, margin=0.02).word == v.REVERSED
    assert v.equivalent(-0.015, (-0.03, 0.0), 500, margin=0.02).word == v.UNRESOLVED


def test_a_cost_under_a_bar_and_its_straddling_rounds():
    assert v.below(0.4, bar=1.0, spread=(0.35, 0.45)).word == v.HOLDS
    assert v.below(1.3, bar=1.0, spread=(1.1, 1.4)).word == v.REVERSED
    got = v.below(0.98, bar=1.0, spread=(0.9, 1.05))
    assert got.word == v.UNRESOLVED and "straddle" in got.detail
    assert v.ratio(1.756, claimed=1.4, spread=(1.70, 1.81)).word == v.UNRESOLVED  # 1.756 against 1.75: not "reversed"


def test_an_exact_count_against_a_bar():
    assert v.at_most(1.0, bar=2, what="extra tokens").word == v.HOLDS
    assert v.at_most(12.5, bar=2, what="extra tokens").word == v.REVERSED
