"""Is an attribution faithful? Deletion and insertion curves of a pair's similarity, against random order and against
the order of the attention the readout pays.

An attribution ranks the two texts' words (`attribution.Explanation`: a_i and b_j share one scale, both sum to the
interaction, so A's and B's words are ranked together). Deletion replaces the top-ranked fraction f of the words with
the baseline vector (the explanation's own: same length, same positions, no re-tokenisation) and re-scores the pair
with the real method (soft tokens are generated again from the changed prompt); insertion starts from every word at
the baseline and puts the top-ranked fraction back. The score re-computed is what the attributions add up to, the
interaction I = (g(A') - g(Ã)) . (g(B') - g(B̃)); the cosine is kept too (`Curves.cosine`), but with every word
deleted both texts are nearly their baselines and their cosine climbs towards 1, so its curve is not what a deletion
test can read. Only the user's words move: the method's prompt and added
tokens stay what the method made, and the first position stays where the explanation held it. A faithful
attribution makes the deletion curve fall faster and the insertion curve rise faster than

* random order: the mean of `randoms` seeded permutations (each curve is kept, so the spread is known);
* attention order: words ranked by the attention the readout's positions pay them (`attention_weights`: every
  decoder layer up to the readout and every head averaged, the rows the readout reads weighted as it weighs them),
  the explanation a reader of attention maps would give.

The areas (trapezoid over f in [0, 1], in units of the interaction) and the gains per pair,

    deletion gain = area(deletion, other order) - area(deletion, attribution)      (> 0: the attribution is better)
    insertion gain = area(insertion, attribution) - area(insertion, other order)

are returned for each pair, so an experiment can bootstrap them over pairs (`experiments.explain_faithfulness`).

    ex = explain_pair(backbone, method, a, b, directions=1)
    c = pair_curves(backbone, method, ex)     # c.deletion["attribution"] (F,), c.gains["deletion_vs_random"], ...
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from analysis.core.forward import attention_backend
from analysis.inspect.attribution import Prepared, baseline, embed_rows, explain_pair, grad_mode, prepare
from analysis.inspect.explain_settings import FRACTIONS, ORDERS, RANDOMS
from analysis.methods.soft_tokens import GENERATED



@dataclass
class Curves:
    """One pair's deletion and insertion curves under each order, with the areas and the gains."""

    fractions: np.ndarray  # (F,)
    words: int  # words ranked (both texts)
    deletion: dict  # order -> (F,) interaction after deleting the top fraction (random: the mean over permutations)
    insertion: dict  # order -> (F,) interaction after inserting the top fraction into the all-baseline words
    random_deletion: np.ndarray  # (R, F) each permutation's curve
    random_insertion: np.ndarray  # (R, F)
    areas: dict = field(default_factory=dict)  # "deletion/<order>", "insertion/<order>" -> area
    gains: dict = field(default_factory=dict)  # "deletion_vs_random", ... (> 0: the attribution is better)
    cosine: dict = field(default_factory=dict)  # "deletion"/"insertion" -> order -> (F,) the method's cosine

    def to_json(self) -> dict:
        """Plain JSON: what `Compute.remember` keeps (`analysis.inspect.explain`) and the `explain` command prints."""
        def lists(d: dict) -> dict:
            return {o: np.asarray(v).tolist() for o, v in d.items()}

        return {"fractions": self.fractions.tolist(), "words": self.words, "deletion": lists(self.deletion),
                "insertion": lists(self.insertion), "random_deletion": self.random_deletion.tolist(),
                "random_insertion": self.random_insertion.tolist(), "areas": dict(self.areas),
                "gains": dict(self.gains), "cosine": {c: lists(d) for c, d in self.cosine.items()}}

    @classmethod
    def from_json(cls, value: dict) -> Curves:
        """The curves `to_json` wrote."""
        def arrays(d: dict) -> dict:
            return {o: np.asarray(v, dtype=np.float64) for o, v in d.items()}

        return cls(np.asarray(value["fractions"], dtype=np.float64), int(value["words"]), arrays(value["deletion"]),
                   arrays(value["insertion"]), np.asarray(value["random_deletion"], dtype=np.float64),
                   np.asarray(value["random_insertion"], dtype=np.float64), dict(value["areas"]),
                   dict(value["gains"]), {c: arrays(d) for c, d in value["cosine"].items()})

    @property
    def span(self) -> float:
        """The interaction with every word against with none: how much the words move it at all."""
        return float(self.deletion["attribution"][0] - self.deletion["attribution"][-1])


def _area(y: np.ndarray, x: np.ndarray) -> float:
    return float(np.sum((y[1:] + y[:-1]) * np.diff(x)) / 2)


def attention_weights(prep: Prepared) -> np.ndarray:
    """(P,) the attention each input position receives from the positions the readout reads, averaged over heads
    and over every decoder layer up to the readout (the encoder's six layers for MiniLM); soft-token steps get 0."""
    if prep.encoder:
        return _encoder_attention(prep)
    method, runner = prep.method, prep.runner
    batch = method.collate(runner, prep.items, "right")
    eager = contextlib.nullcontext() if method.needs_eager else attention_backend(runner, "eager")
    with grad_mode(False), runner.lock, eager:
        cap = method.forward(runner, batch, [prep.layer], attention=True)
    S = batch.input_ids.shape[1]
    layers = sorted(k for k in cap.attention if k < max(prep.layer, 1))
    att = torch.stack([cap.attention[k][0].float().mean(0)[:, -S:] for k in layers]).mean(0)  # (S, S)
    w = _readout_rows(method, batch, S)  # (S,)
    received = (w / w.sum()) @ att  # (S,)
    keep = batch.segments[0] != GENERATED  # the first call's positions, in order
    out = np.zeros(len(prep.tokens))
    out[: int(keep.sum())] = received[keep].numpy()
    return out


def _readout_rows(method, batch, S: int) -> torch.Tensor:
    """(S,) how much the readout weighs each position's state: the readout applied to the identity (every readout
    here is linear in the states: a position, a mean, their average, a concatenation of positions)."""
    try:
        out = method.readout(torch.eye(S)[None], batch)[0]  # (D',)
    except (RuntimeError, ValueError, AttributeError, TypeError):  # a readout that needs more than the states
        out = torch.zeros(S)
        out[batch.last_index[0]] = 1.0
    out = out.reshape(-1, S).abs().sum(0) if out.numel() % S == 0 else out[:S].abs()
    return out.float()


def _encoder_attention(prep: Prepared) -> np.ndarray:
    enc = prep.runner
    with grad_mode(False), enc.lock:
        previous = enc.model.config._attn_implementation
        enc.model.set_attn_implementation("eager")
        try:
            res = enc.model(**prep.items[0], output_attentions=True)
        finally:
            enc.model.set_attn_implementation(previous)
    att = torch.stack([a[0].mean(0) for a in res.attentions]).mean(0)  # (T, T)
    return att.mean(0).numpy()  # the mean readout reads every row alike


def _orders(sides: list, scores: list[np.ndarray], randoms: int, seed: int) -> dict:
    """order -> list of rankings, each a list of (side, position) best first."""
    words = [(s, i) for s, side in enumerate(sides) for i in side]
    def rank(key: str) -> list:
        value = np.array([scores[s][key][i] for s, i in words])
        return [words[j] for j in np.argsort(-value, kind="stable")]

    rng = np.random.default_rng(seed)
    return {"attribution": [rank("attribution")], "attention": [rank("attention")],
            "random": [[words[j] for j in rng.permutation(len(words))] for _ in range(randoms)]}


def pair_curves(backbone, method, ex, *, fractions=FRACTIONS, randoms: int = RANDOMS, seed: int = 0,
                hold_first: bool = True, through_generation: bool = False) -> Curves:
    """Deletion and insertion curves of `ex` (an `attribution.Explanation` of this method on this model)."""
    fractions = np.asarray(fractions, dtype=float)
    preps = [prepare(backbone, method, s.text, through_generation=through_generation) for s in ex.sides()]
    bases = [baseline(p, ex.baseline, hold_first) for p in preps]
    words = [[i for i, (k, h) in enumerate(zip(s.kinds, s.held)) if k == "text" and not h] for s in ex.sides()]
    scores = [{"attribution": s.attribution, "attention": attention_weights(p)} for s, p in zip(ex.sides(), preps)]
    orders = _orders(words, scores, randoms, seed)
    n = sum(len(w) for w in words)
    masks: dict = {}  # (deleted A positions, deleted B positions) as tuples of bools -> variant index
    plan = {}  # (order, r, curve, f index) -> variant index
    for order, rankings in orders.items():
        for r, ranking in enumerate(rankings):
            for j, f in enumerate(fractions):
                top = set(ranking[: int(round(f * n))])
                for curve, deleted in (("deletion", top), ("insertion", set(ranking) - top)):
                    key = tuple(tuple((s, i) in deleted for i in range(len(p.tokens))) for s, p in enumerate(preps))
                    plan[order, r, curve, j] = masks.setdefault(key, len(masks))
    interaction, cos = _score_variants(preps, bases, list(masks))
    out = _assemble(fractions, n, orders, plan, interaction)
    out.cosine = {c: {o: np.mean([[cos[plan[o, r, c, j]] for j in range(len(fractions))]
                                  for r in range(len(rk))], axis=0) for o, rk in orders.items()}
                  for c in ("deletion", "insertion")}
    return out


def _score_variants(preps, bases, masks) -> tuple[np.ndarray, np.ndarray]:
    """((V,) interaction, (V,) cosine) of the pair for each variant: the deleted positions of each text at their
    baseline. The interaction (g(A') - g(Ã)) . (g(B') - g(B̃)) is what the attributions add up to; the cosine is
    what the method reports (with every word deleted both texts are nearly the baseline, and it climbs to about 1)."""
    g, g0 = [], []
    for s, (p, r) in enumerate(zip(preps, bases)):
        m = torch.tensor([v[s] for v in masks])  # (V, P)
        X = torch.where(m[:, :, None], r[None], p.x[None])  # (V, P, d)
        rows = max(1, 2048 // X.shape[1])
        with grad_mode(False):
            g.append(torch.cat([embed_rows(p, X[i:i + rows], generated=False) for i in range(0, len(X), rows)]))
            g0.append(embed_rows(p, r[None])[0])
    interaction = ((g[0] - g0[0]) * (g[1] - g0[1])).sum(-1)
    return interaction.double().numpy(), (g[0] * g[1]).sum(-1).double().numpy()


def _assemble(fractions, n: int, orders: dict, plan: dict, cos: np.ndarray) -> Curves:
    curve = {c: {o: np.array([[cos[plan[o, r, c, j]] for j in range(len(fractions))] for r in range(len(rk))])
                 for o, rk in orders.items()} for c in ("deletion", "insertion")}
    out = Curves(fractions, n, {o: v.mean(0) for o, v in curve["deletion"].items()},
                 {o: v.mean(0) for o, v in curve["insertion"].items()}, curve["deletion"]["random"],
                 curve["insertion"]["random"])
    for c in ("deletion", "insertion"):
        for o in ORDERS:
            out.areas[f"{c}/{o}"] = _area(getattr(out, c)[o], fractions)
    for other in ("random", "attention"):
        out.gains[f"deletion_vs_{other}"] = out.areas[f"deletion/{other}"] - out.areas["deletion/attribution"]
        out.gains[f"insertion_vs_{other}"] = out.areas["insertion/attribution"] - out.areas[f"insertion/{other}"]
    return out


# ---- one pair of the faithfulness record (`experiments.explain_faithfulness`) ---------------------------------
def pair_record(backbone, method, text_a: str, text_b: str, *, steps: int, randoms: int = RANDOMS, seed: int = 0,
                fractions=FRACTIONS) -> dict:
    """One pair's numbers as JSON: the gains and areas, the span (how much the words move the interaction), the
    mean curves per order, the completeness gap and the nodes used, and the seconds it took (token attributions
    only: `directions=1`, the cheapest explanation that ranks the words)."""
    began = time.perf_counter()
    ex = explain_pair(backbone, method, text_a, text_b, steps=steps, directions=1)
    c = pair_curves(backbone, method, ex, fractions=fractions, randoms=randoms, seed=seed)
    return {"gains": c.gains, "areas": c.areas, "span": c.span, "words": c.words, "score": ex.score,
            "interaction": ex.interaction, "gap": ex.gap["relative"], "nodes": list(ex.nodes),
            "deletion": {o: c.deletion[o].tolist() for o in ORDERS},
            "insertion": {o: c.insertion[o].tolist() for o in ORDERS},
            "seconds": time.perf_counter() - began}
