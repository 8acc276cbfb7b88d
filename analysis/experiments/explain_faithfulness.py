"""Is the pair attribution faithful? For every method on one model, deletion and insertion curves of held-out STS-B
pairs in attribution order against random order and against attention order (`analysis.inspect.faithfulness`), the
areas between them averaged over pairs with 95% bootstrap intervals, and a verdict per method: better than the other
order, worse, or no better.

    python -m analysis measure explain_faithfulness --model default     # docs/results/explain_faithfulness_*.json

Data: a seeded sample of the STS-B dev report part stratified by genre (selection never saw it). Every method at its
defaults; soft tokens with the adapter shipped for the model (the frozen model where none is, and the row says so);
Causal2Vec with its shipped bridge, its seeded untrained bridge where none was trained for the model (said in the
row). Per pair: token attributions (`directions=1`, `steps` path nodes at most per text; the completeness gap is in the
cost table), then the curves.

Size, estimated before any record (2026-11-27, SmolLM2, two cores shared with other jobs, load 4.5-7.4): one pair
("A man is erasing a chalk board." against "The man is erasing the chalk board.") took the ten methods 1,294 s at
16 path nodes, soft tokens 623 s of it (they generate for every path row and every deleted variant), while plain
forward passes ran at 114 tokens/s (a quiet machine runs them about five times faster). At 9 nodes (the first grid
only: the words' order needs no more) that is about 2.5 to 3 minutes a pair on a quiet machine, so the default 20
pairs take about an hour per model; `extra["seconds_per_pair"]` records what each method took. Each pair's numbers
are kept through `compute.remember`, so an interrupted run resumes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core.params import param
from analysis.eval.stats import percentile_ci, resample_indices
from analysis.experiments import Measured
from analysis.experiments.machinery import cells, heldout_sts
from analysis.experiments.machinery.provenance import model_entry
from analysis.experiments.machinery.records import Series, Table
from analysis.experiments.methods_models import methods_for as shipped
from analysis.experiments.task_families import model_label, ready
from analysis.inspect.explain_settings import FRACTIONS, GAINS, ORDERS

ID = "explain_faithfulness"
TITLE = "Is the pair attribution faithful? Deletion and insertion against random and attention order"
HELP = ("Every method on one model: words deleted (or inserted) in attribution order against random order and "
        "attention order on a genre-stratified sample of held-out STS-B pairs; the mean area between the curves with "
        "its 95% bootstrap interval and a verdict per method. About an hour on SmolLM2.")
METHODS = ("last", "mean", "prompteol", "echo", "token_prepending", "htp", "kv_embedding", "soft_tokens",
           "causal2vec", "sentence_encoder")
GAIN_NAMES = {"deletion_vs_random": "deletion vs random", "insertion_vs_random": "insertion vs random",
              "deletion_vs_attention": "deletion vs attention", "insertion_vs_attention": "insertion vs attention"}


@dataclass(frozen=True)
class Config:
    model: str = param("default", "the model (a built-in name or a folder)")
    methods: tuple = param(METHODS, "methods at their defaults, comma-separated")
    sample: int = param(20, "STS-B dev report-part pairs, stratified by genre (0 = all 1,200)", min=0)
    seed: int = param(0, "seed of the sample, the random orders and the bootstrap", min=0)
    steps: int = param(9, "path nodes per text at most (9: the adaptive rule's first grid, enough to rank the words)",
                       min=3, limit=64)
    randoms: int = param(2, "random orders per pair", min=1, max=16)
    n_boot: int = param(1000, "bootstrap resamples", min=0, limit=10_000)


def methods_for(backbone, names) -> tuple[dict, dict]:
    """({row label: method}, {shown name: shipped weights folder}): the defaults, with soft tokens' adapter and
    Causal2Vec's bridge falling back to the frozen model and the untrained bridge where none is shipped."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods import get_method
    from analysis.methods.causal2vec import shipped_fits
    from analysis.methods.causal2vec import shipped_folder as c2v_folder

    methods, weights = shipped(backbone, [n for n in names if n != "causal2vec"])
    if "soft_tokens" in methods and not weights:  # only the soft tokens' adapter is in `weights` so far
        methods["soft_tokens (frozen: no adapter shipped)"] = methods.pop("soft_tokens")
    if "causal2vec" in names:
        if shipped_fits(backbone):
            methods["causal2vec"] = get_method("causal2vec")
            weights["causal2vec (shipped)"] = c2v_folder(backbone)
        else:
            methods["causal2vec (untrained bridge: none shipped)"] = get_method("causal2vec", bridge="untrained")
    order = {n: i for i, n in enumerate(names)}
    return dict(sorted(methods.items(), key=lambda kv: order.get(kv[1].name, 99))), weights


def measure(config: Config, compute, progress) -> Measured:
    from analysis.inspect import faithfulness as F  # lazy: keeps torch off the pages' and the command line's start

    pairs, sample = heldout_sts.report_pairs(config.sample, config.seed)
    backbone = compute.backbone(config.model)
    methods, weights = methods_for(backbone, config.methods)
    methods = ready(compute, backbone, methods, pairs)  # KV-Embedding's layers=auto window, through the door
    records: dict = {label: [] for label in methods}
    units = [(label, i) for label in methods for i in range(len(pairs))]
    for n, (label, i) in enumerate(units):
        progress(n, len(units), f"{label}: pair {i + 1} of {len(pairs)}")
        m, a, b = methods[label], pairs.left[i], pairs.right[i]
        parts = {"experiment": ID, "model": backbone.identity, "method": m.name, "params": m.params, "a": a, "b": b,
                 "steps": config.steps, "randoms": config.randoms, "seed": config.seed}
        records[label].append(compute.remember(parts, lambda m=m, a=a, b=b: F.pair_record(
            backbone, m, a, b, steps=config.steps, randoms=config.randoms, seed=config.seed),
            modules=(type(m).__module__, "analysis.inspect.attribution", F.__name__)))
    progress(len(units), len(units), "tables")
    summary = {label: summarise(r, n_boot=config.n_boot, seed=config.seed) for label, r in records.items()}
    title = backbone.facts.title or backbone.facts.name
    return Measured(
        data="STS-B dev, report part (stsb-dev-report: 1,200 pairs no trainer or setting selected on)", sample=sample,
        models=[model_entry(backbone, weights)], tables=[gains_table(summary, config), cost_table(summary)],
        series=curve_series(records, FRACTIONS), findings=findings(title, summary), variant=model_label(config.model),
        title=f"{TITLE}: {title}",
        extra={"summary": summary, "seconds_per_pair": {k: v["seconds_median"] for k, v in summary.items()}})


def summarise(records: list[dict], *, n_boot: int, seed: int = 0) -> dict:
    """Over pairs: each gain's mean with its 95% percentile-bootstrap interval, the same divided by the mean span (a
    ratio of means, resampled jointly: comparable across methods whose interactions differ in size), the share of
    pairs where the attribution order wins, and a verdict per gain: "better" (interval above 0), "worse" (below)
    or "no better" (it holds 0)."""
    span = np.array([r["span"] for r in records], dtype=float)
    idx = resample_indices(len(records), n_boot, seed=seed)  # (B, n): the same pairs for every gain
    out = {"pairs": len(records), "span": float(span.mean()),
           "gap_median": float(np.median([r["gap"] for r in records])),
           "seconds_median": float(np.median([r["seconds"] for r in records]))}
    for g in GAINS:
        v = np.array([r["gains"][g] for r in records], dtype=float)
        ci = percentile_ci(v[idx].mean(1)) if n_boot else (float("nan"), float("nan"))
        ratio = v.mean() / span.mean() if span.mean() else float("nan")
        with np.errstate(invalid="ignore", divide="ignore"):
            rci = percentile_ci(v[idx].mean(1) / span[idx].mean(1)) if n_boot else (float("nan"), float("nan"))
        verdict = "better" if ci[0] > 0 else "worse" if ci[1] < 0 else "no better"
        out[g] = {"mean": float(v.mean()), "ci": list(ci), "relative": float(ratio), "relative_ci": list(rci),
                  "wins": float((v > 0).mean()), "verdict": verdict}
    return out


def mean_curves(records: list[dict]) -> dict:
    """{"deletion"/"insertion": {order: (F,) mean over pairs}} for a record's series."""
    return {c: {o: np.mean([r[c][o] for r in records], axis=0).tolist() for o in ORDERS}
            for c in ("deletion", "insertion")}


def gains_table(summary: dict, config: Config) -> Table:
    columns = ["method"]
    for g, name in GAIN_NAMES.items():
        columns += [name, f"{name} 95% CI", f"{name} / span", f"{name}: pairs won"]
    rows = []
    for label, s in summary.items():
        row = [label]
        for g in GAIN_NAMES:
            row += [round(s[g]["mean"], 4), cells.interval(s[g]["ci"]), round(s[g]["relative"], 3),
                    round(s[g]["wins"], 3)]
        rows.append(tuple(row))
    return Table("gains", "Area between the curves, attribution order against random and attention order (mean over "
                          "pairs; > 0: the attribution order moves the interaction faster)", tuple(columns),
                 tuple(rows), f"Deletion gain = area(other order) - area(attribution order) under the deletion curve "
                              f"of the interaction; insertion gain = area(attribution) - area(other). 95% percentile "
                              f"bootstrap over pairs ({config.n_boot} resamples); '/ span': divided by the mean "
                              f"interaction with every word against none (a ratio of means, resampled jointly).")


def cost_table(summary: dict) -> Table:
    rows = tuple((label, s["pairs"], round(s["span"], 4), round(s["gap_median"], 4), round(s["seconds_median"], 2))
                 for label, s in summary.items())
    return Table("cost", "What each method's explanations cost and how well they add up",
                 ("method", "pairs", "mean span", "median completeness gap (relative)", "median seconds per pair"),
                 rows)


def curve_series(records: dict, fractions) -> list:
    out = []
    for curve in ("deletion", "insertion"):
        lines = {}
        for label, r in records.items():
            means = mean_curves(r)[curve]
            lines.update({f"{label}, {o} order": means[o] for o in means})
        out.append(Series(curve, f"Mean {curve} curve of the interaction per method and order",
                          "fraction of the words moved", tuple(float(f) for f in fractions), lines,
                          y="interaction"))
    return out


def findings(title: str, summary: dict) -> list[str]:
    """One sentence per method: against random order, then against attention order (deletion)."""
    out = []
    for label, s in summary.items():
        parts = []
        for other in ("random", "attention"):
            d = s[f"deletion_vs_{other}"]
            word = {"better": "does better than", "worse": "does worse than", "no better": "does no better than"}
            parts.append(f"{word[d['verdict']]} {other} order ({d['mean']:+.3f} [{d['ci'][0]:+.3f}, "
                         f"{d['ci'][1]:+.3f}])")
        out.append(f"{title}, {label}: on deletion the attribution order {parts[0]} and {parts[1]}, over "
                   f"{s['pairs']} pairs.")
    return out


def headline(records: list) -> str:
    """The README's line: per model, for how many methods the attribution order beats random and attention order
    on deletion (intervals, insertion and every method in RESULTS.md)."""
    said = []
    for r in records:
        summary = r.extra.get("summary", {})
        if not summary:
            continue
        better = {o: sum(s[f"deletion_vs_{o}"]["verdict"] == "better" for s in summary.values())
                  for o in ("random", "attention")}
        pairs = max(s["pairs"] for s in summary.values())
        name = r.models[0].name if r.models else r.id
        said.append(f"{name}: {better['random']} of {len(summary)} methods beat random order and {better['attention']} "
                    f"attention order ({pairs} pairs, `{r.command}`)")
    if not said:
        return ""
    return ("**Is the pair attribution faithful?** Deleting words in attribution order lowers the similarity faster "
            "than other orders for: " + "; ".join(said) + ".\n\n")

