"""The held-out STS-B pairs the STS experiments report on, and the tables they share: each configuration's
Spearman with its interval and per genre, and claims as paired differences overall and per genre.

    pairs, sample = report_pairs(500, seed=0)       # a genre-stratified sample of the report part (0: all 1,200)
    cos = cosines(compute, backbone, {"PromptEOL": get_method("prompteol")}, pairs)
    scores = score_table("scores", "Spearman on ...", pairs, cos, n_boot=1000)
    paired, verdicts = paired_table("paired", "...", pairs, cos, [("A", "B")], n_boot=1000)

The report part is the 1,200 STS-B dev pairs no trainer or setting was selected on (`samples.dev_split`); every
interval is a 95% percentile bootstrap over pairs, and a difference is paired (the same resampled pairs for both
sides, `analysis.eval.stats`), overall and per genre.
"""

from __future__ import annotations

import numpy as np

from analysis.data.datasets import stsb_dev_part
from analysis.data.samples import genre_counts, sample_pairs
from analysis.eval.stats import paired_difference, resample_indices, spearman_replicates
from analysis.experiments.machinery import cells
from analysis.experiments.machinery.records import Sample, Table


def report_pairs(sample: int, seed: int = 0, pool=None):
    """(pairs, Sample): `sample` pairs of `pool` (default: the STS-B dev report part) stratified by genre, or all
    of it when `sample` is 0."""
    pool = stsb_dev_part("report") if pool is None else pool
    pairs = sample_pairs(pool, sample, seed=seed) if sample else pool
    return pairs, Sample(n=len(pairs), of=len(pool), how="stratified by genre" if sample else "all of it",
                         seed=seed if sample else None, strata=genre_counts(pairs) or {})


def genre(name: str) -> str:
    """An STS-B genre without its file: "main-captions/MSRvid" -> "captions"."""
    return name.split("/")[0].removeprefix("main-")


def texts_of(pairs) -> list[str]:
    """Every distinct sentence of `pairs`, each embedded once."""
    from analysis.eval.sts import pair_index  # lazy: keeps scipy off the pages' and the command line's start

    return pair_index(pairs)[0]


def cosines(compute, backbone, methods: dict, pairs, progress=None) -> tuple[dict, dict]:
    """({label: (n_pairs,) cosine per pair}, {label: seconds or "cached"}) of each method, through `compute`."""
    # lazy: keeps scipy off the pages' and the command line's start
    from analysis.eval.sts import pair_cosines, pair_index

    texts, left, right = pair_index(pairs)
    out, took = {}, {}
    for i, (label, method) in enumerate(methods.items()):
        if progress is not None:
            progress(i, len(methods), f"{label}")
        encoded = compute.encode(backbone, method, texts)
        out[label] = pair_cosines(encoded.vectors, left, right)
        took[label] = "cached" if encoded.cached else round(encoded.seconds, 1)
    return out, took


def from_embeddings(embeddings: dict, pairs) -> dict:
    """{label: (n_pairs,) cosines} of embeddings of `texts_of(pairs)` (for configurations made outside `compute`)."""
    # lazy: keeps scipy off the pages' and the command line's start
    from analysis.eval.sts import pair_cosines, pair_index

    _, left, right = pair_index(pairs)
    return {label: pair_cosines(e, left, right) for label, e in embeddings.items()}


def score_table(name: str, title: str, pairs, cos: dict, *, n_boot: int, seed: int = 0, first: str = "configuration",
                notes: str = "") -> tuple[Table, dict]:
    """(table, {label: StsScore}): each configuration's Spearman, interval, and Spearman per genre."""
    from analysis.eval.sts import score_cosines  # lazy: keeps scipy off the pages' and the command line's start

    gold = np.asarray(pairs.scores)
    g = np.array([genre(x) for x in pairs.genres])
    genres = sorted(set(g))
    scores = {k: score_cosines(c, gold, n_boot=n_boot, seed=seed) for k, c in cos.items()}
    rows = [(k, round(s.spearman, 4), cells.interval(s.ci),
             *(round(score_cosines(cos[k][g == x], gold[g == x], n_boot=0).spearman, 4) for x in genres))
            for k, s in scores.items()]
    return Table(name, title, (first, "Spearman", "95% CI", *genres),
                 tuple(rows), notes), scores


def paired_table(name: str, title: str, pairs, cos: dict, claims: list[tuple[str, str]], *, n_boot: int,
                 seed: int = 0) -> tuple[Table, dict]:
    """(table, {(a, b): Paired overall}): A − B for every claim whose two sides were measured, overall and per
    genre, on the same resampled pairs for both sides; the overall p-value in its own column."""
    from analysis.eval.sts import spearman  # lazy: keeps scipy off the pages' and the command line's start

    gold = np.asarray(pairs.scores)
    g = np.array([genre(x) for x in pairs.genres])
    genres = sorted(set(g))
    rows, overall = [], {}
    for a, b in claims:
        if a not in cos or b not in cos:
            continue
        row = [f"{a} − {b}"]
        for subset in ["all", *genres]:
            m = np.ones(len(gold), bool) if subset == "all" else g == subset
            reps = spearman_replicates(np.stack([cos[a][m], cos[b][m]]), gold[m],
                                       resample_indices(int(m.sum()), n_boot, seed=seed))
            d = paired_difference(reps[0], reps[1], spearman(cos[a][m], gold[m]) - spearman(cos[b][m], gold[m]))
            row.append(cells.difference(d))
            if subset == "all":
                overall[a, b] = d
        row.append(cells.p_value(overall[a, b].p))
        rows.append(tuple(row))
    return Table(name, title, ("A − B", "all", *genres, "p (all)"), tuple(rows),
                 f"Paired percentile bootstrap over pairs ({n_boot} resamples, seed {seed}): the same resampled "
                 "pairs for both sides; p: two-sided bootstrap p-value of no difference."), overall


def verdict(meaning: str, a: str, b: str, d) -> str:
    """One finding for claim A > B from its paired difference `d`."""
    word = "holds" if d.ci[0] > 0 else "is reversed" if d.ci[1] < 0 else "is not shown"
    return (f"{meaning[0].upper()}{meaning[1:]}: {word} ({a} − {b} = {d.difference:+.3f}, paired 95% CI "
            f"[{d.ci[0]:+.3f}, {d.ci[1]:+.3f}], p = {d.p:.3g}).")
