"""The model report's quality beyond STS: one small sample per task family the papers make their claims on, each
method's score with its interval and its paired difference to the family's best, and a recommendation per family and
overall that says where the families disagree.

Default samples (`SAMPLES`), small so that a report's budget reaches several methods on every family (a report is a
quick answer; the records, `python -m analysis measure task_families`, use the whole report parts). In plain forwards
of one STS sentence on SmolLM2, one method costs about 4,600 of them over the four samples (a few minutes):

| family | sample | its size |
|---|---|---|
| retrieval | SciFact's report part, nano: 20 seeded claims, their abstracts, 100 seeded distractors | ~40k tokens |
| classification | 1,200 of Banking77's report part stratified by intent, cut into MTEB's train and evaluation sides | ~1,200 texts |
| clustering | 500 of Banking77's report part stratified by intent, MTEB's protocol | ~6 per intent |
| longdoc | passkey at 256 and 512 tokens, 10 documents per length | the short end of LongEmbed |

The classification sample is MTEB's protocol on a subsample: its train side holds about 9 texts per intent, so its 10
experiments (8 per intent each) overlap more than on the whole report part and their spread says less.

A family whose data is not on this machine (SciFact or Banking77 not fetched) or that the model cannot read is
`skipped`, with the sentence that says why and how to get it: nothing a rerun would fill, so it leaves the report
complete. Each (method, task) is one unit of the clock budget (`clock.Budget`): methods go in the STS table's order,
best first and the reference row (MiniLM alone) second, each across every task (cheapest first), so a budget that runs
out leaves the weakest methods out, each named with why. Queries are embedded as queries, documents as documents
(`EmbeddingMethod.as_role`), through the report's `encode` hook, so a resumed report computes nothing twice.

Section JSON (`build.SECTION_KEYS["families"]`): tasks [{task, family, metric, unit, n, sample, best, bootstrap, rows
[{label, value, ci, difference_to_best, difference_ci, p, reference}]}], skipped {family: why}, n_boot, seed.
Recommendation (`recommend`): per_task {task: {family, best, not_different, reason}}, overall {best, ranks {label:
{family: rank}}, mean_rank {label: r}, disagree [families], reason}, reasons [sentences].
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from analysis.core.errors import UserError
from analysis.data import datasets, longdoc
from analysis.data.samples import select
from analysis.eval.score import best_of, compare_scores
from analysis.eval.tasks import Task, load_task, nano_task, score_task, select_task
from analysis.report.sections import NOT_DIFFERENT_P, REFERENCE_METHODS, failure

NAMES = {"sts": "STS", "probe": "probe", "retrieval": "retrieval", "classification": "classification",
         "clustering": "clustering", "longdoc": "long documents"}
FAMILIES = ("retrieval", "classification", "clustering", "longdoc")


@dataclass(frozen=True)
class Sample:
    family: str
    how: str  # the sample in words, for the report


SAMPLES = {
    "retrieval": Sample("retrieval", "SciFact report part, nano: 20 seeded claims, their abstracts, 100 distractors"),
    "classification": Sample("classification", "1,200 texts of Banking77's report part stratified by intent, MTEB's "
                                               "protocol on their train and evaluation sides"),
    "clustering": Sample("clustering", "500 texts of Banking77's report part stratified by intent, MTEB's protocol"),
    "longdoc": Sample("longdoc", "passkey documents of 256 and 512 tokens, 10 per length"),
}


def sample_task(family: str, backbone, seed: int = 0):
    """The default sample of `family` for this model (`SAMPLES`); UserError when its data is absent or the model
    cannot read it."""
    # lazy: keeps scipy, sklearn off the pages' and the command line's start
    from analysis.eval.classification import held_out
    if family == "retrieval":
        return nano_task(load_task("scifact-report"), 20, 100, seed)
    if family == "classification":
        texts, report = select(datasets.get("banking77-report").load(), sample=1200, seed=seed)
        return Task(f"Banking77 report ({report['n']:,} stratified by intent, seed {seed})", "classification",
                    held_out(texts))
    if family == "clustering":
        return select_task(load_task("clustering:banking77-report"), sample=500, seed=seed)[0]
    if family == "longdoc":
        data = longdoc.generate("passkey", backbone.tokenizer, max_length=backbone.facts.max_length,
                                lengths=[256, 512], n=10, seed=seed)
        return Task(data.name, "longdoc", data)
    raise UserError(f"Unknown task family {family!r}: use {', '.join(FAMILIES)}, or none.")


def default_tasks(backbone, families=FAMILIES, seed: int = 0) -> tuple[list, dict]:
    """(tasks, {family: why skipped}): each family's default sample, or the sentence saying why it cannot be had."""
    tasks, skipped = [], {}
    for family in families:
        try:
            tasks.append(sample_task(family, backbone, seed))
        except UserError as err:
            skipped[family] = str(err).rstrip(".")
    return tasks, skipped


def mean_tokens(texts: list[str], tokenizer, seed: int = 0) -> float:
    """Mean tokens of a seeded sample of up to 200 of `texts` (at least 1)."""
    rng = np.random.default_rng(seed)
    picked = [texts[i] for i in rng.choice(len(texts), min(200, len(texts)), replace=False)]
    ids = tokenizer(picked, add_special_tokens=False, verbose=False)["input_ids"]
    return max(float(np.mean([len(x) for x in ids])), 1.0)


def forwards(task, tokenizer, sts_tokens: float, seed: int = 0) -> float:
    """What scoring `task` costs one method, in plain forwards of one text of the STS sample (`sts_tokens` tokens on
    average): the texts it embeds times their mean tokens over the STS texts'."""
    return task.n_texts() * mean_tokens(task.texts(), tokenizer, seed) / sts_tokens


def order(quality: dict, methods: dict) -> list[str]:
    """The labels in the order families measure them: the STS table's best first, the reference row next, then by
    STS Spearman."""
    rows = {r["label"]: r for r in quality.get("methods", []) if r["label"] in methods}
    value = lambda k: -math.inf if not _finite(rows[k]["spearman"]) else rows[k]["spearman"]  # noqa: E731
    ranked = sorted(rows, key=value, reverse=True)
    refs = [k for k in ranked if rows[k].get("reference")]
    decoder = [k for k in ranked if k not in refs]
    return decoder[:1] + refs + decoder[1:]


def measure(tasks: list, methods: dict, labels: list[str], encode, *, n_boot: int, seed: int, stop=None,
            progress=None, done=None) -> tuple[dict, dict]:
    """(section, {"task: label": why not measured}): every method of `labels` (in that order) on every task.

    `encode(method, texts) -> analysis.compute.Encoded` embeds (the report's door to the cache; a side's method comes from
    `as_role`); `stop(task, label) -> reason or None` before each unit: a reason leaves that unit out (a cheaper
    later one may still fit); `done(task, label, seconds, computed)` after each unit (the clock's drift: only computed
    units count).
    """
    scores: dict = {t.name: {} for t in tasks}
    missing = {}
    for label in labels:
        method = methods[label]
        for task in tasks:
            unit = f"{task.name}: {label}"
            why = stop(task, label) if stop is not None else None
            if why:
                missing[unit] = why
                continue
            if progress is not None:
                progress(unit)
            computed = []

            def embed(texts, role, m=method, computed=computed):
                encoded = encode(m.as_role(role), texts)
                computed.append(not encoded.cached)
                return encoded.vectors

            began = time.perf_counter()
            try:
                scores[task.name][label] = score_task(task, embed, n_boot=n_boot, seed=seed)
            except Exception as err:  # noqa: BLE001 -- one unit's failure must not lose the others
                missing[unit] = failure(err)
                continue
            if done is not None:
                done(task, label, time.perf_counter() - began, any(computed))
    out = []
    for task in tasks:
        measured = scores[task.name]
        references = {k for k in measured if methods[k].name in REFERENCE_METHODS}
        if not set(measured) - references:
            continue
        best = best_of({k: s for k, s in measured.items() if k not in references})
        table = compare_scores(measured, n_boot=n_boot, seed=seed, versus=best)
        versus = {d["b"]: d for d in table["differences"]}
        rows = []
        for k, s in measured.items():
            d = versus.get(k)
            tested = d is not None and n_boot > 0
            rows.append({"label": k, "value": s.value, "ci": list(s.ci),
                         "difference_to_best": None if d is None else -d["difference"],
                         "difference_ci": [-d["ci"][1], -d["ci"][0]] if tested else None,
                         "p": d["p"] if tested else None, "reference": k in references})
        first = next(iter(measured.values()))
        out.append({"task": task.name, "family": task.kind, "metric": first.metric, "unit": first.unit,
                    "n": first.n, "best": best, "bootstrap": table["bootstrap"], "rows": rows})
    return {"tasks": out, "n_boot": n_boot, "seed": seed}, missing


def recommend(quality: dict | None, section: dict | None, missing: dict | None = None) -> dict:
    """The answer per family and overall (see the module), from the measured sections only."""
    missing = missing or {}
    out = {"per_task": {}, "overall": None, "reasons": []}
    tasks = (section or {}).get("tasks") or []
    for t in tasks:
        out["per_task"][t["task"]] = per_task(t)
        out["reasons"].append(out["per_task"][t["task"]]["reason"])
    for family, why in ((section or {}).get("skipped") or {}).items():
        out["reasons"].append(f"{NAMES.get(family, family).capitalize()}: not measured ({why}).")
    if not tasks:
        why = missing.get("families") or "no task family was measured"
        out["reasons"].append(f"Per task family: unknown, since {str(why).rstrip('.')}.")
        return out
    out["overall"] = overall(quality, tasks)
    out["reasons"].append(out["overall"]["reason"])
    return out


def per_task(t: dict) -> dict:
    rows = {r["label"]: r for r in t["rows"] if not r["reference"]}
    best = t["best"]
    tied = [k for k, r in rows.items() if k != best and r["p"] is not None and r["p"] >= NOT_DIFFERENT_P]
    b = rows[best]
    text = (f"{NAMES.get(t['family'], t['family']).capitalize()} ({_task(t)}, {t['n']} {t['unit']}): {best} is best "
            f"({t['metric']} {b['value']:.3f}{_interval(b['ci'])})")
    if len(rows) > 1:
        tested = any(r["p"] is not None for k, r in rows.items() if k != best)
        text += ("; not significantly different from it: " + (", ".join(tied) or "none") if tested else
                 "; no paired test was run")
    ref = next((r for r in t["rows"] if r["reference"]), None)
    if ref is not None and ref["difference_to_best"] is not None:
        verdict = "" if ref["p"] is None else (" (tied)" if ref["p"] >= NOT_DIFFERENT_P else
                                               " (above)" if ref["difference_to_best"] > 0 else " (below)")
        text += f"; MiniLM alone {ref['value']:.3f}, {ref['difference_to_best']:+.3f}{verdict}"
    return {"family": t["family"], "best": best, "not_different": tied, "reason": text + "."}


def overall(quality: dict | None, tasks: list[dict]) -> dict:
    """Each decoder method's rank in every family it was measured in (STS included; ties share a rank), the best mean
    rank among the methods measured in all of them, and the families whose best differs from that method."""
    from scipy.stats import rankdata  # lazy: keeps scipy off the pages' and the command line's start

    values: dict = {}
    sts = [r for r in (quality or {}).get("methods", []) if not r.get("reference") and _finite(r["spearman"])]
    if sts:
        values["STS"] = {r["label"]: r["spearman"] for r in sts}
    for t in tasks:
        values[f"{NAMES.get(t['family'], t['family'])} ({_task(t)})"] = {
            r["label"]: r["value"] for r in t["rows"] if not r["reference"] and _finite(r["value"])}
    ranks: dict = {}
    for family, v in values.items():
        labels = list(v)
        for label, rank in zip(labels, rankdata([-v[k] for k in labels], method="average")):
            ranks.setdefault(label, {})[family] = float(rank)
    everywhere = [k for k, r in ranks.items() if len(r) == len(values)]
    if not everywhere:
        return {"best": None, "ranks": ranks, "mean_rank": {}, "disagree": [],
                "reason": "Overall: unknown, since no method was measured in every family."}
    mean = {k: float(np.mean(list(ranks[k].values()))) for k in everywhere}
    best = min(mean, key=mean.get)
    tops = {family: min(v, key=lambda k: -v[k]) for family, v in values.items()}
    disagree = [f for f, top in tops.items() if top != best]
    text = (f"Overall: {best} has the best mean rank ({mean[best]:.1f}) over the {len(values)} families of "
            f"{len(everywhere)} methods measured in all of them")
    if disagree:
        text += "; the families disagree: " + "; ".join(
            f"{f} ranks {tops[f]} first ({best} is {_ordinal(ranks[best][f])} there)" for f in disagree)
    else:
        text += "; every family ranks it first"
    return {"best": best, "ranks": ranks, "mean_rank": mean, "disagree": disagree, "reason": text + "."}


def _task(t: dict) -> str:
    """A task's name without its family's, which the sentence already says ("Long documents: Passkey ...")."""
    family = NAMES.get(t["family"], t["family"])
    return t["task"][len(family) + 2:] if t["task"].lower().startswith(family.lower() + ": ") else t["task"]


def _ordinal(rank: float) -> str:
    if rank != int(rank):
        return f"tied at {rank:g}"
    n = int(rank)
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _interval(ci) -> str:
    lo, hi = ci
    return f", 95% interval [{lo:.3f}, {hi:.3f}]" if _finite(lo) and _finite(hi) else ""


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)
