"""Long inputs that a 135-270M model still reads above chance: HTP's Fig. 1 construction, STS pairs concatenated.

HTP (§3.1, Fig. 1) builds long-context STS items "by concatenating sentences with similar human-annotated scores"
and does not say how; this project's construction (`concatenated`) is its own: the held-out STS-B pairs are binned by
gold score (half-point bins), each item draws k pairs of one bin (seeded), joins their left sentences into one text
and their right sentences into another, and takes the mean of their scores as its gold. k = 1 is plain STS; k = 8 and
32 give inputs of about a hundred and four hundred tokens. Spearman per length, like the STS claims; the chance level
is rho = 0 with the permutation band +-1.96 / sqrt(n - 1), shown beside every number, and a claim is judged only at
lengths where every compared method is above that band (`above_chance`).

    items = concatenated(pairs, k=8, n=100, seed=0)     # a `Pairs` of n long items
    chance_band(100)                                    # 0.197

The passkey documents the board used before are not judged: most methods sit at chance on them (nDCG@1 0.05-0.10
at 4,096 tokens on SmolLM2), and neither paper uses passkey retrieval.
"""

from __future__ import annotations

import math

import numpy as np

from analysis.data.corpora import Pairs
from analysis.experiments.machinery.verdicts import UNRESOLVED, Verdict, paired

BIN = 0.5  # gold-score bin width: pairs joined into one item differ by at most this much


def concatenated(pairs: Pairs, k: int, n: int, seed: int) -> Pairs:
    """n items of k pairs each from one gold-score bin; k = 1 gives the pairs themselves (the first n, all when
    n >= len)."""
    scores = np.asarray(pairs.scores, dtype=float)
    if k == 1:
        keep = list(range(min(n, len(scores))))
        return Pairs(f"{pairs.name} (k=1)", [pairs.left[i] for i in keep], [pairs.right[i] for i in keep],
                     scores[keep])
    rng = np.random.default_rng([seed, k])
    bins = np.floor(scores / BIN).astype(int)
    members = {b: np.flatnonzero(bins == b) for b in np.unique(bins)}
    sizes = np.array([len(members[b]) for b in members], dtype=float)
    chosen = rng.choice(list(members), size=n, p=sizes / sizes.sum())  # (n,) a bin per item, as many as it holds
    left, right, gold = [], [], []
    for b in chosen:
        pool = members[b]
        idx = rng.choice(pool, size=k, replace=len(pool) < k)  # (k,) pairs of one bin
        left.append(" ".join(pairs.left[i] for i in idx))
        right.append(" ".join(pairs.right[i] for i in idx))
        gold.append(float(scores[idx].mean()))
    return Pairs(f"{pairs.name} (k={k}, concatenated)", left, right, np.asarray(gold))


def chance_band(n: int) -> float:
    """Half-width of the 95% band of Spearman's rho on n items with no association (the permutation null's normal
    approximation)."""
    return 1.959964 / math.sqrt(max(n - 1, 1))


def above_chance(rhos: dict, n: int) -> list[str]:
    """Labels whose Spearman is inside the chance band (empty: every method is above chance)."""
    band = chance_band(n)
    return [label for label, rho in rhos.items() if not (rho > band)]


# ---- measurements on a `Context` (`claims.context`) ---------------------------------------------------------------
def tokens_per_text(ctx, k: int) -> int:
    """Mean tokens of one side of a long item at k (what "length" means on the board)."""
    items = ctx.long_items(k)
    if ("long tokens", k) not in ctx.memo:
        ctx.memo["long tokens", k] = round(float(np.mean(ctx.tokens(items.left + items.right))))
    return ctx.memo["long tokens", k]


def units(ctx, methods, ks=None) -> list:
    return [ctx.sts_unit(m, ctx.long_items(k)) for m in methods for k in (ks or ctx.long_lengths())]


def label(ctx, k: int) -> str:
    return f"k={k} (~{tokens_per_text(ctx, k)} tokens)"


def rhos(ctx, labelled: dict, ks) -> dict:
    """{"<method> at k=8 (~110 tokens)": Spearman} and the chance band per length, as the board's values show."""
    out = {}
    for k in ks:
        items = ctx.long_items(k)
        for name, method in labelled.items():
            out[f"{name} at {label(ctx, k)}"] = round(ctx.spearman(method, items), 4)
        out[f"chance at {label(ctx, k)}"] = f"|rho| < {chance_band(len(items.scores)):.3f}"
    return out


def at_chance(ctx, labelled: dict, ks):
    """A "not resolved" verdict naming the methods at chance when any compared method is inside the chance band at
    a judged length, else None: a long-input verdict never rests on noise."""
    found = []
    for k in ks:
        items = ctx.long_items(k)
        low = above_chance({name: ctx.spearman(m, items) for name, m in labelled.items()}, len(items.scores))
        found += [f"{name} at {label(ctx, k)}" for name in low]
    if not found:
        return None
    band = chance_band(ctx.settings.long_n)
    return Verdict(UNRESOLVED, "at chance", f"not judged: {', '.join(found)} within the chance band (|rho| < "
                                            f"{band:.3f} on {ctx.settings.long_n} items)")


def difference(ctx, a, b, k: int, *, direction: int = 1):
    """`verdicts.paired` of Spearman A - B on the long items at k."""
    items = ctx.long_items(k)
    d = ctx.sts_difference(a, b, items)
    return paired(d.difference, d.ci, len(items.scores), direction=direction, unit=f"items at {label(ctx, k)}")


def growth(ctx, a, b, short: int, longest: int, *, direction: int = 1):
    """`verdicts.paired` of (A - B at `long`) minus (A - B at `short`): the gap grows (direction 1) or shrinks (-1)
    with length; the two lengths' items are resampled independently."""
    near, far = ctx.long_items(short), ctx.long_items(longest)
    d = ctx.combination([(1.0, a, far), (-1.0, b, far), (-1.0, a, near), (1.0, b, near)])
    return paired(d.difference, d.ci, len(far.scores), direction=direction,
                  unit=f"items per length ({label(ctx, longest)} against {label(ctx, short)})",
                  interval="95% interval of independent bootstraps")
