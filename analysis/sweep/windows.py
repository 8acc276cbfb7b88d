"""Layer-selection explorer: score KV-Embedding's re-routing windows (start x width x bias) on labelled pairs.

Does the intrinsic-dimension minimum pick the best layers for a new model? A sweep answers it directly: every
cell is KV-Embedding with the re-routing set "decoder layers start .. start+width-1" (clipped to the last
decoder layer) and one bias, scored by the Spearman correlation of cosine similarities with the gold scores.

Layer axis: a cell's `start` is a decoder-layer index, which is also the hidden-state index of that layer's
input (decoder layer l reads hidden state l), so the sweep and the ID trajectory share one axis.

Cells are scored at the cost floor by `analysis.sweep.runner` (one prompt-only forward, then each cell from its
start layer); `cache.sweep.cached_sweep` stores one entry per cell, so a stopped sweep resumes where it stopped.

    cells = grid(L, starts=range(1, L, 3), widths=[4], biases=[1.0])
    rho = spearman_of(backbone, cell_method(cells[0], L), pairs)   # one cell the plain way: a full encode
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core import budgets
from analysis.core.errors import UserError


@dataclass(frozen=True)
class Cell:
    start: int  # first decoder layer re-routed
    width: int  # number of consecutive decoder layers
    bias: float
    rerotate: bool = False

    def layers(self, n_layers: int) -> tuple[int, ...]:
        return tuple(range(self.start, min(self.start + self.width, n_layers)))

    def label(self) -> str:
        return f"{self.start}+{self.width} b={self.bias:g}{' rot' if self.rerotate else ''}"


def paper_width(n_layers: int) -> int:
    """Layers in the window of the paper's Eq. 4 (as this project read it), l*..l*+floor(0.1 L): floor(0.1 L) + 1
    (the windows it reports are wider, 7-10 layers: `analysis.inspect.intrinsic_dim.window_width`)."""
    return int(np.floor(0.1 * n_layers)) + 1


def grid(n_layers: int, starts, widths, biases, rerotate=(False,)) -> list[Cell]:
    """Every combination, in start-major order; cells whose clipped layer set repeats another are dropped."""
    starts, widths = sorted({int(s) for s in starts}), sorted({int(w) for w in widths})
    biases, rerotate = list(dict.fromkeys(float(b) for b in biases)), list(dict.fromkeys(bool(r) for r in rerotate))
    if not starts or not widths or not biases:
        raise UserError("The sweep needs at least one start layer, one width and one bias.")
    if starts[0] < 0 or starts[-1] >= n_layers:
        raise UserError(f"Start layers must be decoder layers 0..{n_layers - 1}.")
    if widths[0] < 1:
        raise UserError("Widths must be at least 1 layer.")
    # counted before the cells are built: a width past the last layer adds no cell (it clips to the same set)
    distinct = sum(len({min(w, n_layers - s) for w in widths}) for s in starts) * len(biases) * len(rerotate)
    budgets.check("grid_cells", distinct, "the number of sweep cells (each embeds every text of the pairs)")
    cells, seen = [], set()
    for s in starts:
        for w in widths:
            for b in biases:
                for r in rerotate:
                    c = Cell(s, w, b, r)
                    key = (c.layers(n_layers), c.bias, c.rerotate)
                    if key not in seen:
                        seen.add(key)
                        cells.append(c)
    return cells


def cell_method(cell: Cell, n_layers: int, **base):
    """The KV-Embedding instance a cell scores (base: prompt, template, pooling, n ...)."""
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start

    layers = ",".join(str(l) for l in cell.layers(n_layers))
    return get_method("kv_embedding", layers=layers, bias=cell.bias, rerotate=cell.rerotate, **base)


def spearman_of(backbone, method, pairs, progress=None, batch_size: int = 16) -> float:
    """Spearman of cosine similarity vs gold over `pairs` (each distinct text encoded once)."""
    from analysis.eval.sts import sts_spearman  # lazy: keeps scipy off the pages' and the command line's start

    return float(sts_spearman(backbone, method, pairs, batch_size=batch_size, progress=progress)["spearman"])


def summary(rows: list[dict], n_layers: int, id_layers: tuple[int, ...] | None, id_score: float | None,
            references: dict[str, float]) -> dict:
    """The explorer's answer: best cell vs the ID window vs the references (e.g. prompt-only, PromptEOL)."""
    if not rows:
        return {"best": None, "id_window": None, "references": references}
    best = max(rows, key=lambda r: -np.inf if np.isnan(r["spearman"]) else r["spearman"])
    ranked = sorted((r["spearman"] for r in rows if not np.isnan(r["spearman"])), reverse=True)
    out = {"best": {**best, "layers": list(Cell(best["start"], best["width"], best["bias"],
                                                 best["rerotate"]).layers(n_layers))},
           "references": references, "cells": len(rows)}
    if id_layers:
        rank = 1 + sum(v > id_score for v in ranked) if id_score is not None else None
        out["id_window"] = {"layers": list(id_layers), "spearman": id_score, "rank_among_cells": rank,
                            "gap_to_best": None if id_score is None else best["spearman"] - id_score}
    return out
