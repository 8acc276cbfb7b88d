"""Samples that can support a number: seeded, stratified by genre where the data has one, never "the first N".

STS-B's files are sorted by genre (the first 500 dev pairs are all image captions), so a prefix measures one
genre only. `sample_pairs` draws a seeded sample whose genre shares follow the whole file's (proportional
allocation, largest remainders); `dev_split` cuts STS-B dev once into a selection part (checkpoints, settings)
and a disjoint report part, the same for every trainer, so no reported number was seen by selection.

    sel, rep = dev_split(stsb_pairs("dev"))          # 300 selection pairs, 1,200 report pairs, both stratified
    test = sample_pairs(rep, 500, seed=0)             # a genre-balanced 500 of the report part
    genre_counts(test)                                # {"main-captions": 175, "main-forums": 52, ...}
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from analysis.core.errors import UserError

SELECTION_SIZE = 300  # STS-B dev pairs every trainer selects on (20% of 1,500); the other 1,200 are reported on
SPLIT_SEED = 20261124  # fixed once: changing it would move pairs between selection and report


def stratified_indices(groups: list[str], n: int, seed: int) -> np.ndarray:
    """Indices of a seeded sample of `n` items, stratified by `groups` .

    Each group gets n x its share of the items, rounded by largest remainders (ties by group name), so a
    sample's genre mix is the file's. Within a group the items are a seeded permutation's first k. Returned in
    file order, so a sample of a sample is still readable top to bottom.
    """
    total = len(groups)
    if n < 1:
        raise UserError(f"A sample needs at least one item, got {n}.")
    if n >= total:
        return np.arange(total)
    rng = np.random.default_rng(seed)
    members: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    names = sorted(members)
    exact = np.array([n * len(members[g]) / total for g in names])
    take = np.floor(exact).astype(int)
    order = sorted(range(len(names)), key=lambda j: (-(exact[j] - take[j]), names[j]))
    for j in order[: n - int(take.sum())]:
        take[j] += 1
    chosen = []
    for g, k in zip(names, take):
        idx = np.array(members[g])
        chosen.extend(idx[rng.permutation(len(idx))[:k]].tolist())
    return np.array(sorted(chosen))


def sample_indices(n_items: int, groups: list[str] | None, n: int, seed: int) -> np.ndarray:
    """`stratified_indices` when the items have groups, else a plain seeded random sample (file order)."""
    if groups is not None:
        return stratified_indices(groups, n, seed)
    if n < 1:
        raise UserError(f"A sample needs at least one item, got {n}.")
    if n >= n_items:
        return np.arange(n_items)
    return np.sort(np.random.default_rng(seed).permutation(n_items)[:n])


def subset(pairs, idx, name: str | None = None):
    """The pairs at `idx` (any order kept), genres included."""
    from analysis.data.corpora import Pairs

    idx = [int(i) for i in idx]
    return Pairs(name or pairs.name, [pairs.left[i] for i in idx], [pairs.right[i] for i in idx],
                 pairs.scores[idx], None if pairs.genres is None else [pairs.genres[i] for i in idx])


def sample_pairs(pairs, n: int, seed: int = 0):
    """A seeded sample of `n` pairs, stratified by genre when the pairs have genres; all pairs when n >= len."""
    if n >= len(pairs):
        return pairs
    how = "stratified by genre" if pairs.genres is not None else "random"
    return subset(pairs, sample_indices(len(pairs), pairs.genres, n, seed),
                  f"{pairs.name} ({n} {how}, seed {seed})")


def genre_counts(pairs) -> dict[str, int] | None:
    """{genre: pairs} of what was scored (None when the data has no genres), sorted by genre."""
    if pairs.genres is None:
        return None
    return dict(sorted(Counter(pairs.genres).items()))


def single_genre_warning(pairs, n: int) -> str | None:
    """A one-line warning when the first `n` pairs of a multi-genre file hold one genre only (STS-B is sorted)."""
    if pairs.genres is None or len(set(pairs.genres)) < 2:
        return None
    head = set(pairs.genres[:n])
    if len(head) == 1:
        return (f"--limit {n} keeps the first {n} pairs, all of genre '{next(iter(head))}' (the file is sorted by "
                f"genre); use --sample {n} for a genre-balanced sample.")
    return None


def dev_split(dev, n_select: int = SELECTION_SIZE, seed: int = SPLIT_SEED):
    """(selection, report): a stratified `n_select` pairs of STS-B dev for every choice a trainer makes, and the
    disjoint rest on which final numbers are reported. Fixed by `seed`: every trainer, test and table uses it."""
    if not 0 < n_select < len(dev):
        raise UserError(f"The selection part must leave pairs to report on: 0 < {n_select} < {len(dev)}.")
    sel = sample_indices(len(dev), dev.genres, n_select, seed)
    rest = np.setdiff1d(np.arange(len(dev)), sel)
    return (subset(dev, sel, f"{dev.name} selection ({len(sel)}, seed {seed})"),
            subset(dev, rest, f"{dev.name} report ({len(rest)}, seed {seed})"))
