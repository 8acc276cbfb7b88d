"""The claims board's measurement helpers on known answers: timings with their rounds (a spread that straddles the
bar is "not resolved"; "measured here" only when this run timed it), HTP's Fig. 1 construction of long inputs and
its chance level, HTP's fixed-length blocks of the paper's Fig. 8 (off by default: today's output unchanged), and
where the Causal2Vec variant trained on its EOS readout ships."""

import numpy as np
import pytest

from analysis.data.corpora import Pairs
from analysis.experiments.claims import long_sts
from analysis.experiments.claims.timing import Timing
from analysis.experiments.machinery import verdicts


def test_a_timing_gives_a_ratio_per_round_and_says_where_it_comes_from():
    rounds = {"plain forward": [1.0, 1.0, 2.0], "KV": [1.3, 1.9, 3.0], "Echo": [2.0, 2.0, 4.0]}
    here = Timing(rounds, "2026-11-28T10:02:00+00:00", 1.9, True)
    mid, (lo, hi) = here.ratio("KV")
    assert mid == pytest.approx(1.5) and (lo, hi) == pytest.approx((1.3, 1.9))
    assert here.ratio("KV", "Echo")[0] == pytest.approx(0.75)
    assert here.source() == "measured here (3 interleaved rounds, 2026-11-28 10:02 UTC, load 1.9 before)"
    stored = Timing(rounds, "2026-11-27T08:00:00+00:00", 2.2, False)
    assert stored.source().startswith("read from the stored timing of 2026-11-27 08:00 UTC")
    # the rounds straddle 1.38 x 1.25 = 1.725: the branch a single median never reached
    assert verdicts.ratio(mid, claimed=1.38, spread=(lo, hi)).word == verdicts.UNRESOLVED
    assert verdicts.ratio(1.2, claimed=1.38, spread=(1.1, 1.3)).word == verdicts.HOLDS


def _pairs(n=60):
    scores = np.linspace(0, 5, n)
    return Pairs("toy", [f"left {i}." for i in range(n)], [f"right {i}." for i in range(n)], scores)


def test_long_items_join_pairs_of_one_gold_bin_and_average_their_scores():
    pairs = _pairs()
    items = long_sts.concatenated(pairs, k=4, n=30, seed=0)
    assert len(items.left) == 30 and items.name != pairs.name
    for left, right, gold in zip(items.left, items.right, items.scores):
        idx = [int(w.rstrip(".")) for w in left.split() if w.rstrip(".").isdigit()]
        assert len(idx) == 4 and right == " ".join(f"right {i}." for i in idx)  # the same pairs on both sides
        member = np.asarray(pairs.scores)[idx]
        assert member.max() - member.min() < long_sts.BIN and gold == pytest.approx(member.mean())
    again = long_sts.concatenated(pairs, k=4, n=30, seed=0)
    assert again.left == items.left  # seeded
    one = long_sts.concatenated(pairs, k=1, n=10, seed=0)
    assert one.left == pairs.left[:10]


def test_the_chance_band_and_the_gate():
    assert long_sts.chance_band(100) == pytest.approx(1.959964 / 99 ** 0.5)
    assert long_sts.above_chance({"a": 0.5, "b": 0.1}, 100) == ["b"]


def test_fixed_length_blocks_match_the_sentence_count_and_are_off_by_default():
    from analysis.core.partition import sentence_starts, token_blocks
    from analysis.methods.htp import HTPParams

    text = "One short sentence. Another one here. And a third to end."
    ends = np.cumsum([4] * 15)  # 15 tokens of 4 characters
    blocks = token_blocks(ends, text, "matched")
    assert len(sentence_starts(text)) == 3 and blocks.max() + 1 == 3  # 15 tokens // 3 sentences = 5 per block
    assert HTPParams().partition == "sentences"


def test_the_causal2vec_variant_trained_on_eos_ships_beside_the_system():
    from analysis.training.causal2vec import ship_place

    assert ship_place({"train_readout": "eos"}) == "ablations/eos-readout"
    assert ship_place({"train_readout": "concat"}) == ""
    assert ship_place({"control": "concat", "train_readout": "concat"}) == "ablations/concat"
