"""KV-Embedding's layer map on the built-in models: where the intrinsic-dimension window ranks among every window.

Each model's map is a grid of re-routing windows (start x width x bias) scored on one genre-stratified sample of
the STS-B dev report part at the prefix-reuse floor (the prompt-only pass once, then only layers s..L-1 per cell),
every cell through the `Compute` door (the cache: an interrupted map resumes where it stopped). The default grid is the
model report's finest (`analysis.report.plan.ladder`: a start every second decoder layer, the paper's Eq. 4 width
floor(0.1 L) + 1 and twice it, biases 0, 1, 3), so after a model report whose budget held that grid every cell is
read, not computed. The ID window is scored at the paper's bias 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.compute import KV_BASE
from analysis.core.params import param
from analysis.experiments import Measured
from analysis.experiments.machinery import heldout_sts
from analysis.experiments.machinery.provenance import model_entry
from analysis.experiments.machinery.records import Table
from analysis.report.sections import layer_map
from analysis.sweep.windows import Cell, grid, paper_width

ID = "layer_map"
TITLE = "KV-Embedding's layer map: does the intrinsic-dimension rule pick good layers?"
HELP = ("KV-Embedding's re-routing windows (start x width x bias) scored on held-out STS-B per model, and where "
        "the window the intrinsic-dimension rule picks ranks among them.")


@dataclass(frozen=True)
class Config:
    sample: int = param(200, "pairs of the STS-B dev report part, stratified by genre (0 = all 1,200)", min=0)
    seed: int = param(0, "seed of the sample", min=0)
    models: tuple = param(("default", "gemma3-270m"), "models, comma-separated")
    start_every: int = param(2, "a window starts at every N-th decoder layer from 1", min=1)
    biases: tuple = param(("0", "1", "3"), "re-routing biases, comma-separated")


def cells_for(n_layers: int, config: Config) -> list:
    w = paper_width(n_layers)
    return grid(n_layers, range(1, n_layers, config.start_every), sorted({w, min(2 * w, n_layers)}),
                [float(b) for b in config.biases])


def measure(config: Config, compute, progress) -> Measured:
    from analysis.eval.sts import spearman  # lazy: keeps scipy off the pages' and the command line's start
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start
    pairs, sample = heldout_sts.report_pairs(config.sample, config.seed)
    maps, models = {}, []
    for name in config.models:
        backbone = compute.backbone(name)
        L = backbone.facts.n_layers
        selection, _ = compute.window(backbone)
        id_cell = Cell(selection.start, len(selection.layers), 1.0) if selection.layers else None
        cells = cells_for(L, config)
        work = list(dict.fromkeys(cells + ([id_cell] if id_cell is not None else [])))
        run = compute.sweep(backbone, pairs, work,
                            lambda n, total, info, name=name: progress(n, total, f"{name}: {info['cell']}"))
        cos, _ = heldout_sts.cosines(compute, backbone, {"PromptEOL": get_method("prompteol")}, pairs)
        maps[backbone.facts.title or name] = {
            **layer_map(cells, run.scores, L, selection, id_cell, run.prompt_only), "L": L,
            "promptEOL": float(spearman(cos["PromptEOL"], pairs.scores)), "computed": run.computed,
            "cached": run.cached, "selection": selection.as_dict()}
        models.append(model_entry(backbone))
    return Measured(data="STS-B dev, report part (stsb-dev-report)", sample=sample, models=models,
                    tables=tables(maps), findings=findings(maps), extra={"maps": maps, "base": KV_BASE})


def _span(layers) -> str:
    return f"{layers[0]}-{layers[-1]}" if layers else "none"


def tables(maps: dict) -> list[Table]:
    summary, top = [], []
    for title, m in maps.items():
        idw, best, n = m["id_window"] or {}, m["best"], len(m["cells"])
        summary.append((title, n, round(m["prompt_only"], 4), round(m["promptEOL"], 4), _span(idw.get("layers")),
                        None if idw.get("spearman") is None else round(idw["spearman"], 4),
                        f"{idw['rank_among_cells']} of {n}" if idw.get("rank_among_cells") else None,
                        f"{_span(best['layers'])} b={best['bias']:g}", round(best["spearman"], 4),
                        f"{m['computed']} / {m['cached']}"))
        for row in sorted(m["cells"], key=lambda x: -x["spearman"])[:5]:
            top.append((title, _span(row["layers"]), row["width"], row["bias"], round(row["spearman"], 4)))
    return [Table("maps", "The map per model (the ID window is scored at the paper's bias 1)",
                  ("model", "cells", "prompt only", "PromptEOL", "ID window", "ID window Spearman", "ID rank",
                   "best cell", "best Spearman", "cells computed / from the cache"), tuple(summary)),
            Table("best_cells", "The five best cells per model", ("model", "layers", "width", "bias", "Spearman"),
                  tuple(top), digits={"bias": 0})]


def findings(maps: dict) -> list[str]:
    out = []
    for title, m in maps.items():
        idw, best, n = m["id_window"] or {}, m["best"], len(m["cells"])
        if idw.get("spearman") is None:
            out.append(f"{title}: the ID rule picks no window on this model.")
            continue
        where = "in the top tenth" if idw["rank_among_cells"] <= max(1, n // 10) else "far from the best"
        out.append(f"{title}: the ID window ranks {idw['rank_among_cells']} of {n} cells ({where}; "
                   f"{idw['spearman']:.3f} against the best cell's {best['spearman']:.3f}, prompt only "
                   f"{m['prompt_only']:.3f}, PromptEOL {m['promptEOL']:.3f}).")
    return out
