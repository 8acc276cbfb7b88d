"""Long-document retrieval, LongEmbed's way, for every training-free method on one model: nDCG@1 per document length
from 256 tokens up to the model's limit (4,096, and 8,192 where the model reads that far), with 95% intervals over
the queries of each length, and each method against the best at the longest length with a paired interval.

The documents are generated for the model's own tokenizer (`analysis.data.longdoc`: passkeys, or invented facts, in
a filler haystack; or SciFact abstracts around the relevant one), `per_length` of them per length, each with the one
query only it answers; the same needles at every length, so the curve compares like with like.

Cost (20 documents per length, eight methods, Echo's doubled text counted): about 2.7 M tokens to 8,192 and 0.9 M to
4,096 per kind; the longest documents cost more per token (attention grows with the length: about 2x at 8,192 on
SmolLM2, whose layers all attend globally; Gemma 3's sliding-window layers do not), so at SmolLM2's ~550 tokens/s
about 2.5 h to 8,192 and 1 h to 4,096 (`--max-length 4096`). Echo reads its text twice, so from 4,096 tokens on its
second copy is cut at the model's limit (8,192 on SmolLM2), as any text longer than the limit is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core.errors import UserError
from analysis.core.params import param
from analysis.data import longdoc
from analysis.eval.stats import paired_mean_difference
from analysis.eval.tasks import Task, score_task
from analysis.experiments import Measured
from analysis.experiments.machinery import cells
from analysis.experiments.machinery.provenance import model_entry
from analysis.experiments.machinery.records import Sample, Series, Table
from analysis.experiments.task_families import model_label
from analysis.weights.stand_in import FROZEN_SOFT_TOKENS

ID = "longdoc"
TITLE = "Long-document retrieval: nDCG@1 against document length"
HELP = ("LongEmbed's synthetic long-document retrieval (passkey, needle; or SciFact abstracts) generated for the "
        "model's tokenizer, every training-free method scored by nDCG@1 at each document length from 256 tokens to "
        "the model's limit (8,192 at most), with 95% intervals and paired differences to the best at the longest "
        "length.")
METHODS = ("last", "mean", "prompteol", "echo", "token_prepending", "htp", "kv_embedding", "soft_tokens")


@dataclass(frozen=True)
class Config:
    model: str = param("default", "the model (a built-in name or a folder)")
    kinds: tuple = param(("passkey",), "long-document tasks, comma-separated: passkey, needle, scifact")
    methods: tuple = param(METHODS, "training-free methods at their defaults, comma-separated (soft tokens on the "
                                     "frozen model)")
    per_length: int = param(20, "documents (and queries) per length", min=2, max=200)
    max_length: int = param(8192, "the longest document length measured (at most the model's limit)", min=256)
    seed: int = param(0, "seed of the documents and of the bootstrap", min=0)
    n_boot: int = param(1000, "bootstrap resamples", min=0, limit=10_000)


def measure(config: Config, compute, progress) -> Measured:
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start

    for kind in config.kinds:
        if kind not in longdoc.KINDS:
            raise UserError(f"--kinds: {kind!r:.40} is not a long-document task; use {', '.join(longdoc.KINDS)}.")
    backbone = compute.backbone(config.model)
    limit = min(config.max_length, backbone.facts.max_length)
    frozen = {"soft_tokens": {"adapter": "none"}}  # the frozen model's soft tokens, named so in every table
    methods = {(FROZEN_SOFT_TOKENS if m in frozen else m): get_method(m, **frozen.get(m, {})) for m in config.methods}
    methods = resolved(compute, backbone, methods)
    results, tables, series, sizes = {}, [], [], {}
    units = [(kind, label) for kind in config.kinds for label in methods]
    for i, (kind, label) in enumerate(units):
        if kind not in results:
            progress(i, len(units), f"writing the {kind} documents")
            data = longdoc.generate(kind, backbone.tokenizer, max_length=limit, n=config.per_length, seed=config.seed)
            results[kind] = {"task": Task(data.name, "longdoc", data), "scores": {}}
            sizes[kind] = {str(n): round(float(np.mean(t)), 1) for n, t in data.tokens.items()}
        progress(i, len(units), f"{label} on {kind}")
        m = methods[label]
        results[kind]["scores"][label] = score_task(
            results[kind]["task"], lambda texts, role, m=m: compute.encode(backbone, m.as_role(role), texts).vectors,
            n_boot=config.n_boot, seed=config.seed)
    progress(len(units), len(units), "tables")
    title = backbone.facts.title or backbone.facts.name
    findings = []
    for kind, r in results.items():
        lengths = sorted(r["task"].data.sets)
        tables.append(length_table(kind, r["scores"], lengths))
        tables.append(longest_table(kind, r["scores"], lengths[-1], config))
        series.append(curve(kind, r["scores"], lengths))
        findings += kind_findings(title, kind, r["scores"], lengths, config)
    first = next(iter(results.values()))["task"].data
    n_lengths = len(first.sets)
    return Measured(
        data=f"Long documents generated for {title}'s tokenizer (analysis.data.longdoc): {', '.join(config.kinds)}",
        sample=Sample(n=config.per_length * n_lengths * len(results), how=f"{config.per_length} generated documents "
                      f"and queries per length, lengths {', '.join(f'{n:,}' for n in sorted(first.sets))} tokens "
                      f"(up to {limit:,}), per kind", seed=config.seed,
                      strata={kind: config.per_length * n_lengths for kind in results}),
        models=[model_entry(backbone)], tables=tables, series=series, findings=findings,
        variant=model_label(config.model), title=f"{TITLE}: {title}",
        extra={"mean_tokens": sizes, "limit": limit,
               "per_length": {kind: {k: s.detail["lengths"] for k, s in r["scores"].items()}
                              for kind, r in results.items()}})


def resolved(compute, backbone, methods: dict) -> dict:
    """KV-Embedding's `layers=auto` window resolved once through the `Compute` door (the cache's when measured by the
    command), so no encode computes it again."""
    needs = [k for k, m in methods.items() if getattr(m, "needs_window", lambda b: False)(backbone)]
    if not needs:
        return methods
    selection, _ = compute.window(backbone)
    return {k: (m.with_window(backbone, selection.layers) if k in needs else m) for k, m in methods.items()}


def at_length(score, length: int) -> np.ndarray:
    """The per-query nDCG@1 of one length (the Score's items whose id starts with that length)."""
    keep = [i for i, u in enumerate(score.ids) if u.split(":", 1)[0] == str(length)]
    return np.asarray(score.items, dtype=np.float64)[keep]


def length_table(kind: str, scores: dict, lengths: list[int]) -> Table:
    rows = []
    for label, s in scores.items():
        per = s.detail["lengths"]
        rows.append((label, *(round(per[str(n)]["nDCG@1"], 3) for n in lengths), round(s.value, 3),
                     cells.interval(s.ci)))
    return Table(f"ndcg_{kind}", f"{kind}: nDCG@1 per document length (tokens), and averaged over the lengths",
                 ("method", *(f"{n:,}" for n in lengths), "mean", "95% CI"), tuple(rows),
                 "95% percentile bootstrap over (length, query) items for the mean; per length, the series gives "
                 "the intervals over that length's queries.")


def longest_table(kind: str, scores: dict, length: int, config: Config) -> Table:
    """Each method at the longest length, and its paired difference to the best there (the same resampled queries)."""
    values = {k: at_length(s, length) for k, s in scores.items()}
    best = max(values, key=lambda k: values[k].mean())
    rows = []
    for label, v in values.items():
        if label == best:
            rows.append((label, round(float(v.mean()), 3), "best at this length", None))
            continue
        d = paired_mean_difference(v, values[best], config.n_boot, config.seed) if config.n_boot else None
        rows.append((label, round(float(v.mean()), 3), None if d is None else cells.difference(d),
                     None if d is None else cells.p_value(d.p)))
    return Table(f"longest_{kind}", f"{kind} at {length:,} tokens: nDCG@1 and the paired difference to the best",
                 ("method", "nDCG@1", "vs best (paired)", "p"), tuple(rows))


def curve(kind: str, scores: dict, lengths: list[int]) -> Series:
    lines = {k: [s.detail["lengths"][str(n)]["nDCG@1"] for n in lengths] for k, s in scores.items()}
    intervals = {k: [s.detail["lengths"][str(n)]["ci"] for n in lengths] for k, s in scores.items()}
    return Series(f"curve_{kind}", f"{kind}: nDCG@1 against document length", "document length (tokens)",
                  tuple(lengths), lines, intervals, "nDCG@1",
                  "LongEmbed's figure; 95% percentile bootstrap intervals over each length's queries.")


def kind_findings(title: str, kind: str, scores: dict, lengths: list[int], config: Config) -> list[str]:
    """The best at the shortest and at the longest length, and each method's drop from one to the other."""
    short, long = lengths[0], lengths[-1]
    first = {k: float(at_length(s, short).mean()) for k, s in scores.items()}
    last = {k: float(at_length(s, long).mean()) for k, s in scores.items()}
    best = max(last, key=last.get)
    chance = 1 / config.per_length
    out = [f"{title}, {kind}: at {long:,} tokens {best} is best (nDCG@1 {last[best]:.2f}; chance is about "
           f"{chance:.2f}); at {short:,} tokens {max(first, key=first.get)} is."]
    held = [k for k in scores if last[k] >= first[k] - 0.1]
    fell = sorted((k for k in scores if k not in held), key=lambda k: last[k] - first[k])
    if fell:
        out.append(f"{title}, {kind}: from {short:,} to {long:,} tokens nDCG@1 falls by more than 0.1 for "
                   + ", ".join(f"{k} ({first[k]:.2f} to {last[k]:.2f})" for k in fell)
                   + (f"; within 0.1 for {', '.join(held)}" if held else "") + ".")
    return out
