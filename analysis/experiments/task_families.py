"""Every method on one model across the task families the papers make their claims on, each judged against the best
decoder method of that family with a paired interval, MiniLM alone as the reference row, and where the rankings
differ from STS's.

Families (the report parts only; nothing here was selected on):
* retrieval: a seeded sub-corpus of SciFact's report part: `queries` seeded claims, every abstract judged for them, and
  `distractors` seeded other abstracts; nDCG@10 per claim (MTEB's protocol), queries embedded as each method embeds
  queries;
* classification: Banking77's report part, MTEB's protocol (10 experiments of 8 undersampled train texts per intent,
  logistic regression), its evaluation side a seeded sample of `classification_eval` texts stratified by intent;
* clustering: Banking77's report part, MTEB's protocol (2,048 texts, 10 mini-batch k-means fits, V-measure);
* STS: the STS-B dev report part, `sts_sample` pairs stratified by genre, as `methods_models` measures it.

Size. The defaults are sized so one model's record takes about an hour at SmolLM2's ~550 tokens/s: 2.24 M tokens
over the eight decoder methods, templates included (`extra["planned_tokens"]`, counted with the model's tokenizer; an
abstract is ~327 tokens, a Banking77 text ~14, an STS-B sentence ~15): retrieval 0.90 M (100 claims, the 105 abstracts
judged for them, 150 distractors), MTEB's classification 0.79 M (its train side draws ~3,500 texts whatever the
evaluation side), clustering 0.36 M (about half of its 2,048 texts come from the cache, embedded for classification),
STS 0.18 M. Gemma 3 270M has about the same tokens and ran about 1.2x slower per token on a 4,096-token document.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core.params import param
from analysis.data.corpora import Pairs
from analysis.eval.score import best_of, compare_scores
from analysis.eval.tasks import Task, load_task, nano_task, score_task, select_task
from analysis.experiments import Measured
from analysis.experiments.machinery import cells, heldout_sts
from analysis.experiments.machinery.provenance import model_entry
from analysis.experiments.machinery.records import Sample, Table
from analysis.experiments.machinery.render import table_markdown
from analysis.experiments.methods_models import ENCODER, METHODS, frozen_label, methods_for
from analysis.models.backbone import builtin

ID = "task_families"
TITLE = "Methods across task families: retrieval, classification, clustering and STS"
HELP = ("Every method on one model on SciFact retrieval (a seeded sub-corpus of the report part), Banking77 "
        "classification and clustering (MTEB's protocols, report part) and held-out STS-B: each family's main metric "
        "with its 95% interval, the paired difference to the family's best decoder method, MiniLM alone as the "
        "reference row, and where the rankings differ from STS's. About an hour on SmolLM2.")
FAMILIES = ("retrieval", "classification", "clustering", "sts")
NAMES = {"retrieval": "retrieval", "classification": "classification", "clustering": "clustering", "sts": "STS"}


@dataclass(frozen=True)
class Config:
    model: str = param("default", "the model (a built-in name or a folder)")
    methods: tuple = param(METHODS, "methods at their defaults, comma-separated (soft tokens with the adapter shipped "
                                     "for the model; sentence_encoder is the reference row)")
    queries: int = param(100, "SciFact report-part claims, seeded (0 = all 509)", min=0)
    distractors: int = param(150, "SciFact report-part abstracts judged for none of the claims, seeded", min=0)
    classification_eval: int = param(1000, "Banking77 evaluation texts, stratified by intent (0 = all 3,080)", min=0)
    sts_sample: int = param(500, "STS-B dev report-part pairs, stratified by genre (0 = all 1,200)", min=0)
    seed: int = param(0, "seed of every sample and of the bootstrap", min=0)
    n_boot: int = param(1000, "bootstrap resamples", min=0, limit=10_000)


def family_tasks(config: Config) -> dict:
    """{family: (Task, how it was sampled)} for the retrieval, classification and clustering families."""
    scifact = load_task("scifact-report")
    n_claims = len(scifact.data.queries)
    retrieval = nano_task(scifact, config.queries or n_claims, config.distractors, config.seed)
    banking = load_task("banking77-report")
    classification = select_task(banking, sample=config.classification_eval or None, seed=config.seed)[0]
    clustering = load_task("clustering:banking77-report")
    return {"retrieval": (retrieval, f"{len(retrieval.data.queries)} of {n_claims} claims (seeded), their "
                                     f"{len(retrieval.data.corpus) - config.distractors} judged abstracts and "
                                     f"{config.distractors} seeded distractors"),
            "classification": (classification, f"{len(classification.data.test):,} evaluation texts stratified by "
                                               "intent; MTEB's undersampled train side"),
            "clustering": (clustering, "MTEB's draw of 2,048 texts, 10 k-means fits")}


def measure(config: Config, compute, progress) -> Measured:
    pairs, sts_sample = heldout_sts.report_pairs(config.sts_sample, config.seed)
    tasks = {**family_tasks(config), "sts": (Task(pairs.name, "sts", Pairs(pairs.name, pairs.left, pairs.right,
                                                                         pairs.scores)),
                                             f"{len(pairs)} pairs stratified by genre")}
    backbone = compute.backbone(config.model)
    methods, weights = methods_for(backbone, config.methods)
    if "soft_tokens" in methods and not weights:  # the frozen model's soft tokens: named so in every table
        methods = {(frozen_label([config.model]) if k == "soft_tokens" else k): m for k, m in methods.items()}
    methods = ready(compute, backbone, methods, pairs)
    scores: dict = {f: {} for f in FAMILIES}
    units = [(f, label) for label in methods for f in FAMILIES]
    for i, (family, label) in enumerate(units):
        progress(i, len(units), f"{label} on {NAMES[family]}")
        m = methods[label]
        scores[family][label] = score_task(
            tasks[family][0], lambda texts, role, m=m: compute.encode(backbone, m.as_role(role), texts).vectors,
            n_boot=config.n_boot, seed=config.seed)
    progress(len(units), len(units), "tables")
    compared = {f: versus_best(scores[f], config) for f in FAMILIES}
    title = backbone.facts.title or backbone.facts.name
    sample = Sample(n=sum(next(iter(scores[f].values())).n for f in FAMILIES),
                    how="; ".join(f"{NAMES[f]}: {tasks[f][1]}" for f in FAMILIES), seed=config.seed,
                    strata={NAMES[f]: next(iter(scores[f].values())).n for f in FAMILIES})
    return Measured(
        data="Report parts only: SciFact train claims (scifact-report), Banking77 train (banking77-report), STS-B dev "
             "(stsb-dev-report); none was used to select anything",
        sample=sample, models=[model_entry(backbone, weights)],
        tables=[scores_table(scores, compared), ranks_table(scores), samples_table(tasks, scores)],
        findings=findings(title, scores, compared), variant=model_label(config.model),
        title=f"{TITLE}: {title}",
        extra={"compare": compared, "planned_tokens": planned_tokens(backbone, methods, tasks),
               "metrics": {f: {k: s.metrics for k, s in scores[f].items()} for f in FAMILIES}})


def model_label(name: str) -> str:
    """The model as a record's id names it: a built-in model by its short name ("default" is "smollm2-135m"), any
    other by its folder's or repository's last part."""
    found = builtin(name)
    return found.short if found is not None else name.rstrip("/").split("/")[-1]


def ready(compute, backbone, methods: dict, pairs) -> dict:
    """The methods with KV-Embedding's `layers=auto` window resolved once (through the `Compute` door: the cache's, when
    measured by the command), so no encode computes it again."""
    needs = [k for k, m in methods.items() if getattr(m, "needs_window", lambda b: False)(backbone)]
    if not needs:
        return methods
    selection, _ = compute.window(backbone)
    return {k: (m.with_window(backbone, selection.layers) if k in needs else m) for k, m in methods.items()}


def versus_best(scores: dict, config: Config) -> dict:
    """`compare_scores` of one family against its best decoder method (MiniLM alone is compared, never the best)."""
    best = best_of({k: s for k, s in scores.items() if k != ENCODER})
    return {**compare_scores(scores, n_boot=config.n_boot, seed=config.seed, versus=best), "best": best}


def differences(compared: dict) -> dict:
    """{method: {difference, ci, p} (method minus the best)}; the best maps to None."""
    out = {compared["best"]: None}
    for d in compared["differences"]:
        out[d["b"]] = {"difference": -d["difference"], "ci": sorted(-x for x in d["ci"]), "p": d["p"]}
    return out


def scores_table(scores: dict, compared: dict) -> Table:
    columns = ["method"]
    for f in FAMILIES:
        metric = next(iter(scores[f].values())).metric
        columns += [f"{NAMES[f]} {metric}", f"{NAMES[f]} 95% CI", f"{NAMES[f]} vs best decoder (paired)",
                    f"{NAMES[f]} p"]
    rows = []
    for label in scores["sts"]:
        row = [label + (" (reference: MiniLM alone)" if label == ENCODER else "")]
        for f in FAMILIES:
            s, d = scores[f][label], differences(compared[f]).get(label)
            row += [round(s.value, 4), cells.interval(s.ci),
                    "best decoder method" if d is None else
                    f"{d['difference']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]",
                    None if d is None else cells.p_value(d["p"])]
        rows.append(tuple(row))
    return Table("scores", "Each family's main metric with its 95% interval, and the paired difference to the family's "
                           "best decoder method (the same resampled queries, texts, experiments or pairs for both)",
                 tuple(columns), tuple(rows),
                 "Intervals: percentile bootstrap over the family's units (claims, evaluation texts, the 10 clustering "
                 "experiments, pairs); p: two-sided paired bootstrap p-value of no difference.")


def ranks(scores: dict) -> dict:
    """{family: {decoder method: rank}} (1 = best; ties share the mean rank)."""
    from scipy.stats import rankdata  # lazy: keeps scipy off the pages' and the command line's start

    out = {}
    for f in FAMILIES:
        labels = [k for k in scores[f] if k != ENCODER]
        values = [-scores[f][k].value if np.isfinite(scores[f][k].value) else np.inf for k in labels]
        out[f] = dict(zip(labels, (float(r) for r in rankdata(values, method="average"))))
    return out


def ranks_table(scores: dict) -> Table:
    r = ranks(scores)
    labels = list(r["sts"])
    rows = [(k, *(r[f][k] for f in FAMILIES), round(float(np.mean([r[f][k] for f in FAMILIES])), 2)) for k in labels]
    return Table("ranks", "Rank of each decoder method in each family (1 = best)",
                 ("method", *(NAMES[f] for f in FAMILIES), "mean rank"), tuple(sorted(rows, key=lambda x: x[-1])),
                 digits={NAMES[f]: 1 for f in FAMILIES})


def samples_table(tasks: dict, scores: dict) -> Table:
    rows = []
    for f in FAMILIES:
        s = next(iter(scores[f].values()))
        rows.append((NAMES[f], tasks[f][0].name, s.metric, s.n, s.unit, tasks[f][1]))
    return Table("samples", "What each family was measured on", ("family", "task", "metric", "units", "unit", "sample"),
                 tuple(rows))


def findings(title: str, scores: dict, compared: dict) -> list[str]:
    """Per family: its best decoder method, whether STS's best holds there, how far the ranking agrees with STS's
    (Spearman over the decoder methods) and who moves most; and MiniLM alone against each family's best."""
    from scipy.stats import spearmanr  # lazy: keeps scipy off the pages' and the command line's start

    r = ranks(scores)
    sts_best = compared["sts"]["best"]
    out = [f"{title}: on STS the best decoder method is {sts_best}."]
    for f in ("retrieval", "classification", "clustering"):
        best = compared[f]["best"]
        d = differences(compared[f]).get(sts_best)
        labels = list(r["sts"])
        rho = spearmanr([r["sts"][k] for k in labels], [r[f][k] for k in labels]).statistic if len(labels) > 2 \
            else float("nan")
        moved = sorted(labels, key=lambda k: -abs(r[f][k] - r["sts"][k]))[0]
        text = f"{title}, {NAMES[f]}: the best decoder method is {best}"
        if best == sts_best:
            text += ", as on STS"
        elif d is not None:
            word = "significantly below it" if d["ci"][1] < 0 else "not significantly different from it"
            text += (f", not STS's best: {sts_best} is {d['difference']:+.3f} (paired 95% CI [{d['ci'][0]:+.3f}, "
                     f"{d['ci'][1]:+.3f}]), {word}")
        text += (f"; the ranking agrees with STS's by Spearman {rho:.2f}" if np.isfinite(rho) else "")
        if r[f][moved] != r["sts"][moved]:
            text += f"; {moved} moves most (rank {r['sts'][moved]:g} on STS, {r[f][moved]:g} here)"
        out.append(text + ".")
    for f in FAMILIES:
        enc = differences(compared[f]).get(ENCODER)
        if enc is not None:
            where = "above" if enc["ci"][0] > 0 else "below" if enc["ci"][1] < 0 else "not significantly different from"
            out.append(f"{title}, {NAMES[f]}: MiniLM alone is {enc['difference']:+.3f} against the best decoder "
                       f"method (paired 95% CI [{enc['ci'][0]:+.3f}, {enc['ci'][1]:+.3f}]): {where} it.")
    return out


def planned_tokens(backbone, methods: dict, tasks: dict) -> dict:
    """{family: tokens every decoder method together runs on its texts (templates included)}: what the record's
    size was chosen by (sentence_encoder, which does not run the decoder, not counted)."""
    out = {}
    for f, (task, _) in tasks.items():
        texts = task.texts()
        rng = np.random.default_rng(0)
        picked = [texts[i] for i in rng.choice(len(texts), min(200, len(texts)), replace=False)]
        total = 0.0
        for label, m in methods.items():
            if label == ENCODER:
                continue
            per_text = np.mean([len(e.ids) for e in m.prepare(backbone, picked)])
            total += per_text * task.n_texts()
        out[NAMES[f]] = int(total)
    return out


def headline(records: list) -> str:
    """The README's table per model: each method's main metric per family with its rank among the decoder methods,
    so a reader sees at once where STS's ranking does not carry over (intervals and paired differences in
    RESULTS.md)."""
    out = ""
    for r in records:
        if not (r.has_table("scores") and r.has_table("ranks")):
            continue
        scores, ranks = r.table("scores"), r.table("ranks")
        families = ranks.columns[1:-1]
        main = [c for c in scores.columns[1:] if c.split(" ")[0] in families and " " in c
                and not c.endswith(("CI", "(paired)", " p"))]
        rank_of = {row[0]: row[1:-1] for row in ranks.rows}
        rows = []
        for row in scores.rows:
            value = dict(zip(scores.columns, row))
            places = rank_of.get(row[0])
            rows.append((row[0], *(f"{value[c]:.3f}" + (f" ({places[i]:g})" if places else "")
                                   for i, c in enumerate(main))))
        out += table_markdown(Table("families", f"{r.title}: each family's main metric (rank among the decoder "
                                                "methods)", ("method", *main), tuple(rows))) \
            + f"\n\n{r.data}; `{r.command}`, {r.date}; intervals and paired differences in RESULTS.md.\n\n"
    return out
