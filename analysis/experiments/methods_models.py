"""Every method on the built-in models, on held-out STS-B, each judged against the model's best decoder method with
a paired interval and the small sentence encoder alone (MiniLM) as the reference row.

Trained methods are read with the weights shipped for the model (GIRCSE's soft tokens fall back to the frozen model
where none is shipped, and the row says so); Causal2Vec has its own experiment (`causal2vec`), which compares its
readouts and controls on the same pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.params import param
from analysis.experiments import Measured
from analysis.experiments.machinery import cells, heldout_sts
from analysis.experiments.machinery.provenance import model_entry
from analysis.experiments.machinery.records import Table
from analysis.weights import stand_in
from analysis.weights.adapters import shipped_folder

ID = "methods_models"
TITLE = "Methods x models on held-out STS-B"
HELP = ("Every training-free method and GIRCSE's soft tokens on the built-in models, on a genre-stratified sample of "
        "the STS-B dev report part: Spearman with its 95% interval, the paired difference to the model's best "
        "decoder method with its p-value, and MiniLM alone as the reference.")
METHODS = ("last", "mean", "prompteol", "echo", "token_prepending", "htp", "kv_embedding", "soft_tokens",
           "sentence_encoder")
ENCODER = "sentence_encoder"  # not a decoder method: the reference a decoder method is measured against


@dataclass(frozen=True)
class Config:
    sample: int = param(500, "pairs of the STS-B dev report part, stratified by genre (0 = all 1,200)", min=0)
    seed: int = param(0, "seed of the sample and of the bootstrap", min=0)
    models: tuple = param(("default", "gemma3-270m"), "models, comma-separated (built-in names or folders)")
    methods: tuple = param(METHODS, "methods at their defaults, comma-separated")
    n_boot: int = param(1000, "bootstrap resamples", min=0, limit=10_000)


def methods_for(backbone, names) -> tuple[dict, dict]:
    """({name: method}, {name: shipped weights folder}) at the methods' defaults; soft tokens with the adapter
    shipped for this model, the frozen model where there is none."""
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start
    methods, weights = {}, {}
    for name in names:
        if name == "soft_tokens":
            folder = shipped_folder(backbone.facts)
            methods[name] = get_method(name, adapter="shipped" if folder else "none")
            if folder:
                weights["gircse (shipped)"] = folder
        else:
            methods[name] = get_method(name)
    return methods, weights


def frozen_label(models: list[str]) -> str:
    """The soft_tokens row's name when `models` have no shipped GIRCSE adapter: what ran is the frozen model's soft
    tokens, not GIRCSE, and a table must not let it pass for GIRCSE (the words every table uses: `stand_in`)."""
    return f"soft_tokens ({stand_in.frozen_label(models)})"


def measure(config: Config, compute, progress) -> Measured:
    from analysis.eval.sts import compare_cosines  # lazy: keeps scipy off the pages' and the command line's start
    pairs, sample = heldout_sts.report_pairs(config.sample, config.seed)
    results, models, frozen = {}, [], {}
    for i, name in enumerate(config.models):
        progress(i, len(config.models), f"loading {name}")
        backbone = compute.backbone(name)
        methods, weights = methods_for(backbone, config.methods)
        frozen[name] = "soft_tokens" in methods and not weights
        cos, _ = heldout_sts.cosines(compute, backbone, methods, pairs)
        decoder = [k for k in cos if k != ENCODER]
        rho = compare_cosines(cos, pairs.scores, n_boot=0)["methods"]
        best = max((r for r in rho if r["method"] in decoder), key=lambda r: r["spearman"])["method"]
        results[name] = {"title": backbone.facts.title or backbone.facts.name, "best": best,
                         **compare_cosines(cos, pairs.scores, n_boot=config.n_boot, seed=config.seed, versus=best)}
        models.append(model_entry(backbone, weights))
    progress(len(config.models), len(config.models), "tables")
    return Measured(
        data="STS-B dev, report part (stsb-dev-report: 1,200 pairs no trainer selected on)", sample=sample,
        models=models, tables=[scores_table(config, results, frozen)], findings=findings(results),
        extra={"compare": results})


def versus_best(result: dict) -> dict:
    """{method: difference row (method minus the best decoder method)}; the best itself maps to None."""
    out = {result["best"]: None}
    for d in result["differences"]:  # a = the best, b = the other
        out[d["b"]] = {"difference": -d["difference"], "ci": sorted(-x for x in d["ci"]), "p": d["p"]}
    return out


def scores_table(config: Config, results: dict, frozen: dict) -> Table:
    columns, rows = ["method"], []
    for name, r in results.items():
        columns += [r["title"], "95% CI", "vs best decoder (paired)", "p"]
    for method in config.methods:
        row = [frozen_label([k for k, v in frozen.items() if v]) if method == "soft_tokens" and any(frozen.values())
               else method]
        for r in results.values():
            score = next(x for x in r["methods"] if x["method"] == method)
            d = versus_best(r)[method]
            row += [round(score["spearman"], 4), cells.interval(score["ci"]),
                    "best decoder method" if d is None else
                    f"{d['difference']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]",
                    None if d is None else cells.p_value(d["p"])]
        rows.append(tuple(row))
    first = next(iter(results.values()))
    return Table("scores", "Spearman of cosine similarity with the gold scores (methods at their defaults; soft "
                           "tokens with the adapter shipped for the model; Causal2Vec: its own section)",
                 tuple(columns), tuple(rows), first["bootstrap"] + ".")


def findings(results: dict) -> list[str]:
    out = []
    for r in results.values():
        vs = versus_best(r)
        tied = [k for k, v in vs.items() if v is not None and k != ENCODER and v["ci"][0] <= 0 <= v["ci"][1]]
        text = f"{r['title']}: the best decoder method is {r['best']}"
        if tied:
            text += f"; not significantly different from it: {', '.join(tied)}"
        enc = vs.get(ENCODER)
        if enc is not None:
            text += (f"; the small sentence encoder alone is {enc['difference']:+.3f} "
                     f"{'above' if enc['difference'] > 0 else 'below'} it (paired 95% CI "
                     f"[{enc['ci'][0]:+.3f}, {enc['ci'][1]:+.3f}])")
        out.append(text + ".")
    return out


def headline(records: list) -> str:
    """The README's pointer to STS with its intervals and every method's paired difference to the best."""
    rec = records[0]
    return (f"STS with its intervals and the paired difference of every method to the best (`{rec.command}`): "
            "[docs/RESULTS.md](docs/RESULTS.md).\n\n")
