"""Samples that can support a number: seeded, stratified by genre where the data has one, never "the first N".

STS-B's files are sorted by genre (the first 500 dev pairs are all image captions), so a prefix measures one
genre only. `sample_pairs` draws a seeded sample whose genre shares follow the whole file's (proportional
allocation, largest remainders); `dev_split` cuts STS-B dev once into a selection part (checkpoints, settings)
and a disjoint report part, the same for every trainer, so no reported number was seen by selection.

    sel, rep = dev_split(stsb_pairs("dev"))          # 300 selection pairs, 1,200 report pairs, both stratified
    test = sample_pairs(rep, 500, seed=0)             # a genre-balanced 500 of the report part
    genre_counts(test)                                # {"main-captions": 175, "main-forums": 52, ...}
    chosen, report = select(texts, sample=200, seed=1)  # what the commands and pages use: pairs or texts
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from analysis.core.errors import UserError
from analysis.data.corpora import Pairs, Texts
from analysis.data.files import Beir

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


def subset(data, idx, name: str | None = None):
    """The pairs (or texts, or a retrieval set's queries) at `idx` (any order kept), genres (labels) included; a
    retrieval set keeps its whole corpus (the documents are the haystack)."""
    idx = [int(i) for i in idx]
    if isinstance(data, Beir):
        qids = list(data.queries)
        kept = [qids[i] for i in idx]
        return Beir(name or data.name, data.corpus, {q: data.queries[q] for q in kept},
                    {q: data.qrels[q] for q in kept})
    g = groups(data)
    picked = None if g is None else [g[i] for i in idx]
    if isinstance(data, Texts):
        return Texts(name or data.name, [data.texts[i] for i in idx], picked)
    return Pairs(name or data.name, [data.left[i] for i in idx], [data.right[i] for i in idx], data.scores[idx],
                 picked)


def groups(data) -> list[str] | None:
    """The strata of a data set: a pair set's genres, a text set's labels (STS-B's sentences carry their genre);
    None for a retrieval set (its queries are sampled at random)."""
    return data.genres if hasattr(data, "genres") else getattr(data, "labels", None)


def _how(data) -> str:
    if groups(data) is None:
        return "random"
    return "stratified by genre" if hasattr(data, "genres") else "stratified by label"


def sample_pairs(pairs, n: int, seed: int = 0):
    """A seeded sample of `n` pairs (or texts), stratified by genre (label) when there is one; all when n >= len."""
    if n >= len(pairs):
        return pairs
    return subset(pairs, sample_indices(len(pairs), groups(pairs), n, seed),
                  f"{pairs.name} ({n} {_how(pairs)}, seed {seed})")


def genre_counts(pairs) -> dict[str, int] | None:
    """{genre: pairs} (or {label: texts}) of what was scored (None when the data has no genres), sorted."""
    g = groups(pairs)
    return None if g is None else dict(sorted(Counter(g).items()))


def single_genre_warning(pairs, n: int) -> str | None:
    """A one-line warning when the first `n` pairs (texts) of a multi-genre file hold one genre only (STS-B is
    sorted by genre, and its sentences are labelled by genre)."""
    g = groups(pairs)
    if g is None or len(set(g)) < 2:
        return None
    head = set(g[:n])
    if len(head) == 1:
        unit = "pairs" if hasattr(pairs, "genres") else "texts"
        return (f"--limit {n} keeps the first {n} {unit}, all of genre '{next(iter(head))}' (the file is sorted "
                f"by genre); use --sample {n} for a genre-balanced sample.")
    return None


def select(data, *, sample: int | None = None, limit: int | None = None, seed: int = 0):
    """What a command or a page scores, and what to say about it: (chosen, report).

    `sample`: a seeded sample stratified by genre (`sample_pairs`), for numbers; `limit`: the first N, for a
    quick look (not representative of a sorted file); neither: everything. `report` = {"how", "n", "of",
    "seed" (None unless sampled), "genres" (`genre_counts` of the chosen), "warning" (`single_genre_warning`
    for a limit, else None), "rows" (the chosen items' positions in `data`, file order)}, ready for a command's
    JSON or a page's caption.
    """
    if sample is not None and limit is not None:
        raise UserError("Use --sample (a genre-balanced sample) or --limit (the first N), not both.")
    for value, flag in ((sample, "--sample"), (limit, "--limit")):
        if value is not None and value < 1:
            raise UserError(f"{flag} must be a positive number, got {value}.")
    warning, seed_used = None, None
    if sample is not None and sample < len(data):
        rows = sample_indices(len(data), groups(data), sample, seed)
        how, seed_used = _how(data), seed
        chosen = subset(data, rows, f"{data.name} ({sample} {how}, seed {seed})")
    elif limit is not None and limit < len(data):
        rows = range(limit)
        chosen, how, warning = subset(data, rows), f"first {limit}", single_genre_warning(data, limit)
    else:
        rows, chosen, how = range(len(data)), data, "all"
    return chosen, {"how": how, "n": len(chosen), "of": len(data), "seed": seed_used,
                    "genres": genre_counts(chosen), "warning": warning, "rows": [int(i) for i in rows]}


def caption(report: dict) -> str:
    """The report as one line for a page: '500 of 1,500 pairs, stratified by genre (seed 0): a 175, b 52, ...'."""
    seed = "" if report["seed"] is None else f" (seed {report['seed']})"
    genres = "" if not report["genres"] else ": " + ", ".join(f"{g} {k}" for g, k in report["genres"].items())
    return f"{report['n']:,} of {report['of']:,}, {report['how']}{seed}{genres}"


def fixed_split(n_items: int, strata: list[str] | None, n_select: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(selection rows, report rows): a seeded `n_select` items (stratified when `strata` are given) and the
    disjoint rest, both in file order. What every fixed selection/report cut of this project is made of."""
    if not 0 < n_select < n_items:
        raise UserError(f"The selection part must leave items to report on: 0 < {n_select} < {n_items}.")
    sel = sample_indices(n_items, strata, n_select, seed)
    return sel, np.setdiff1d(np.arange(n_items), sel)


def dev_split(dev, n_select: int = SELECTION_SIZE, seed: int = SPLIT_SEED):
    """(selection, report): a stratified `n_select` pairs of STS-B dev for every choice a trainer makes, and the
    disjoint rest on which final numbers are reported. Fixed by `seed`: every trainer, test and table uses it."""
    sel, rest = fixed_split(len(dev), dev.genres, n_select, seed)
    return (subset(dev, sel, f"{dev.name} selection ({len(sel)}, seed {seed})"),
            subset(dev, rest, f"{dev.name} report ({len(rest)}, seed {seed})"))


def nano_retrieval(beir, n_queries: int = 50, n_distractors: int = 1000, seed: int = 0):
    """A small retrieval set for interactive use: `n_queries` judged queries drawn at random (seeded), every
    document judged for them, and `n_distractors` other documents drawn at random from the rest of the corpus.

    Random distractors are easier than a full corpus (no near-misses unless chance brings them), so a nano score
    ranks methods for a quick look and is never reported as the set's score; records use the whole corpus.
    Documents keep the corpus's order.
    """
    if n_queries < 1 or n_distractors < 0:
        raise UserError(f"A nano set needs at least one query and no negative number of distractors, got "
                        f"{n_queries} and {n_distractors}.")
    qids = list(beir.queries)
    chosen = [qids[i] for i in sample_indices(len(qids), None, n_queries, seed)]
    judged = {d for q in chosen for d in beir.qrels[q]}
    others = [d for d in beir.corpus if d not in judged]
    extra = set()
    if others and n_distractors:
        extra = {others[i] for i in sample_indices(len(others), None, n_distractors, seed + 1)}
    docs = {d: t for d, t in beir.corpus.items() if d in judged or d in extra}
    return Beir(f"{beir.name} nano ({len(chosen)} queries, {len(docs):,} documents, seed {seed})", docs,
                {q: beir.queries[q] for q in chosen}, {q: beir.qrels[q] for q in chosen})
