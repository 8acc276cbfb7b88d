"""bfloat16 against float32, method by method, on one model: the evidence `--dtype auto` follows.

For every method at its defaults (and the trained ones shipped for the model): the time of bfloat16 against float32
in interleaved rounds of the same run, and the paired difference of their scores on the same held-out items, STS-B
Spearman (a genre-stratified sample of the dev report part) and SciFact nDCG@10 (a seeded nano set of the report
part's claims: queries embedded as queries). A method gets bfloat16 by default only when both differences' 95%
intervals lie within ±`precision.TOLERANCE`; the views that differentiate or trace are compared too (Jacobian
sensitivity's per-token norms, the attention mass on KV-Embedding's prefix, the intrinsic-dimension trajectory), and
a view whose result moves past its tolerance stays float32.

    python -m analysis measure dtype --model default        # docs/results/dtype_smollm2_135m.json
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core.params import param
from analysis.core.precision import TOLERANCE
from analysis.eval.score import compare
from analysis.core.timing import interleaved_rounds
from analysis.eval.tasks import Task, nano_task, load_task, score_task
from analysis.data.corpora import Pairs
from analysis.experiments import Measured
from analysis.experiments.machinery import cells, heldout_sts
from analysis.experiments.machinery.provenance import model_entry
from analysis.experiments.machinery.records import Table
from analysis.experiments.methods_models import frozen_label, methods_for
from analysis.experiments.dtype_views import compare_views
from analysis.experiments.claims.context import short_name

ID = "dtype"
TITLE = "bfloat16 against float32, method by method"
HELP = ("Time and scores of every method in bfloat16 against float32 on one model: interleaved timing rounds in the "
        "same run, the paired difference of STS-B Spearman and SciFact nDCG@10 on held-out items, and the views that "
        "differentiate or trace; the verdict per method is what --dtype auto uses.")
METHODS = ("last", "mean", "prompteol", "echo", "token_prepending", "htp", "kv_embedding", "soft_tokens",
           "causal2vec", "sentence_encoder")


@dataclass(frozen=True)
class Config:
    model: str = param("default", "model: a built-in name or a folder")
    sts_sample: int = param(300, "pairs of the STS-B dev report part, stratified by genre", min=20)
    queries: int = param(30, "SciFact report-part claims of the nano retrieval set (seeded)", min=5)
    distractors: int = param(50, "seeded distractor abstracts beside the claims' judged ones", min=0)
    timing_texts: int = param(64, "STS sentences timed in each round", min=8)
    rounds: int = param(3, "interleaved timing rounds", min=1, limit=20)
    seed: int = param(0, "seed of the samples and the bootstrap", min=0)
    n_boot: int = param(1000, "bootstrap resamples", min=0, limit=10_000)


def measure(config: Config, compute, progress) -> Measured:
    fp32 = compute.backbone(config.model)
    bf16 = compute.backbone_in(fp32, "bfloat16")
    pairs, sample = heldout_sts.report_pairs(config.sts_sample, config.seed)
    sts = Task(pairs.name, "sts", Pairs(pairs.name, pairs.left, pairs.right, pairs.scores))
    retrieval = nano_task(load_task("scifact-report"), config.queries, config.distractors, config.seed)
    methods, weights = methods_for(fp32, [m for m in METHODS if available(fp32, m)])
    # the frozen model's soft tokens where no adapter is shipped: so named in the table, while the verdict stays under
    # the method's name, which `precision.choose` reads
    shown = {"soft_tokens": frozen_label([model_key(fp32)])} if "soft_tokens" in methods and not weights else {}
    rows = []
    for i, (label, method) in enumerate(methods.items()):
        progress(i, len(methods), label)
        rows.append(method_row(compute, fp32, bf16, label, method, sts, retrieval, config))
    views = compare_views(compute, fp32, bf16, pairs)
    return Measured(data=f"STS-B dev report part ({len(pairs)} pairs) and {retrieval.name}", sample=sample,
                    models=[model_entry(fp32, weights)], tables=[methods_table(rows, shown), views_table(views)],
                    findings=findings(rows, views), extra={"verdicts": verdicts(rows, views)},
                    variant=model_key(fp32))


def available(backbone, name: str) -> bool:
    """Causal2Vec only where a bridge is shipped for the model (the frozen model has no contextual token)."""
    from analysis.methods.causal2vec import shipped_fits  # lazy: keeps torch off the pages' and the command line's start

    return name != "causal2vec" or shipped_fits(backbone)


def method_row(compute, fp32, bf16, label, method, sts, retrieval, config) -> dict:
    """One method's times and paired score differences in the two precisions."""
    def score(backbone, task):
        return score_task(task, lambda texts, role: compute.encode(backbone, method.as_role(role), texts).vectors,
                          n_boot=config.n_boot, seed=config.seed)

    scores = {(d, t.kind): score(b, t) for d, b in (("float32", fp32), ("bfloat16", bf16)) for t in (sts, retrieval)}
    diff = {kind: compare(scores["bfloat16", kind], scores["float32", kind], n_boot=config.n_boot, seed=config.seed)
            for kind in ("sts", "retrieval")}
    texts = sts.data.unique_texts()[: config.timing_texts]
    timing = compute.remember(
        {"dtype-timing": label, "models": [fp32.identity, bf16.identity], "method": method.name,
         "params": method.params, "texts": texts, "rounds": config.rounds},
        lambda: interleaved_rounds({d: (lambda b=b: method.encode(b, texts, batch_size=16))
                                    for d, b in (("float32", fp32), ("bfloat16", bf16))}, config.rounds),
        modules=(type(method).__module__, "analysis.eval.stats"))
    ratios = [b / f for f, b in zip(timing["float32"], timing["bfloat16"])]
    within = all(lo >= -TOLERANCE and hi <= TOLERANCE for lo, hi in (d.ci for d in diff.values()))
    return {"label": label, "scores": scores, "diff": diff, "ratio": float(np.median(ratios)),
            "ratio_range": [min(ratios), max(ratios)], "dtype": "bfloat16" if within else "float32"}


def model_key(backbone) -> str:
    return short_name(backbone.facts)


def methods_table(rows: list[dict], shown: dict | None = None) -> Table:
    return Table("methods", "bfloat16 against float32: time and the paired difference of scores",
                 ("method", "time bf16 / fp32", "rounds' range", "STS fp32", "STS bf16 minus fp32",
                  "nDCG@10 fp32", "nDCG@10 bf16 minus fp32", "auto runs it in"),
                 tuple(((shown or {}).get(r["label"], r["label"]), round(r["ratio"], 3), [round(x, 3) for x in r["ratio_range"]],
                        round(r["scores"]["float32", "sts"].value, 4), cells.difference(r["diff"]["sts"]),
                        round(r["scores"]["float32", "retrieval"].value, 4), cells.difference(r["diff"]["retrieval"]),
                        r["dtype"]) for r in rows),
                 notes=f"A method runs in bfloat16 under --dtype auto only when both differences' 95% intervals lie "
                       f"within ±{TOLERANCE} (paired bootstrap over pairs and queries).")


def views_table(views: dict) -> Table:
    return Table("views", "The views that differentiate or trace, bfloat16 against float32",
                 ("view", "what is compared", "agreement", "tolerance", "auto runs it in"),
                 tuple((name, v["what"], v["agreement"], v["tolerance"], v["dtype"]) for name, v in views.items()))


def moved(r: dict) -> str:
    """What the evidence says of a method's scores in bfloat16: "did not move" (both 95% intervals within
    ±TOLERANCE), "moved" (an interval wholly past it), or "not shown to stay within" (an interval reaches past it:
    the sample cannot tell, which keeps the method in float32 all the same)."""
    cis = [r["diff"][k].ci for k in ("sts", "retrieval")]
    if all(-TOLERANCE <= lo and hi <= TOLERANCE for lo, hi in cis):
        return "did not move its scores past"
    if any(lo > TOLERANCE or hi < -TOLERANCE for lo, hi in cis):
        return "moved a score past"
    return "was not shown to keep its scores within"


def verdicts(rows: list[dict], views: dict) -> dict:
    """{method or view: {"dtype", "reason"}}: what `precision.choose` reads."""
    out = {}
    for r in rows:
        sts, ret = (cells.difference(r["diff"][k]) for k in ("sts", "retrieval"))
        out[r["label"]] = {"dtype": r["dtype"], "reason": (
            f"{r['dtype']}: bfloat16 {moved(r)} ±{TOLERANCE} on this model (STS {sts}, nDCG@10 {ret}; "
            f"{r['ratio']:.2f}x the float32 time)")}
    for name, v in views.items():
        out[f"view:{name}"] = {"dtype": v["dtype"], "reason": f"{v['dtype']}: {v['what']}, {v['agreement']}"}
    return out


def findings(rows: list[dict], views: dict) -> list[str]:
    fast = [r for r in rows if r["dtype"] == "bfloat16"]
    said = []
    if fast:
        said.append(f"{len(fast)} of {len(rows)} methods run in bfloat16 under --dtype auto on this model, at "
                    f"{min(r['ratio'] for r in fast):.2f}-{max(r['ratio'] for r in fast):.2f}x the float32 time.")
    for word in ("moved a score past", "was not shown to keep its scores within"):
        these = [r["label"] for r in rows if r["dtype"] == "float32" and moved(r) == word]
        if these:
            why = ("a score moved past" if word.startswith("moved") else
                   "the sample did not show both scores within")
            said.append(f"Kept in float32 ({why} ±{TOLERANCE}): {', '.join(these)}.")
    kept_views = [n for n, v in views.items() if v["dtype"] == "float32"]
    said.append("Every view agrees within its tolerance." if not kept_views else
                f"Views kept in float32: {', '.join(kept_views)}.")
    return said
