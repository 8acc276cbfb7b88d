"""A layer sweep through the cache: one entry per cell, shared by `python -m analysis sweep` and the Layer explorer.

Each cell's score (Spearman on pairs, as `cache.compute.sts_score` stores one; nDCG@10 on a retrieval task) is stored
with `put_cell_score` (the keys the page has always used), as soon as the cell is done, whichever executor computed
it: a stopped sweep resumes where it stopped, locally or on Ray. The prompt-only reference comes free with the
sweep's prompt-only pass and is stored under its own method's key.

    run = cached_sweep(default_store(), backbone, pairs, windows.grid(30, range(1, 30, 4), [4], [1.0]))
    run = cached_sweep(store, backbone, load_task("nano:scifact-select"), cells)     # nDCG@10 per cell
    run.scores[cell], run.prompt_only, run.computed, run.cached
"""

from __future__ import annotations

import time
from typing import Callable

from analysis.core import budgets, precision
from analysis.core.errors import UserError
from analysis.methods import get_method
from analysis.sweep import runner, windows
from analysis.sweep.ray_executor import score_ray
from analysis.sweep.runner import SweepRun
from cache.compute import put_cell_score, stored_cell_score
from cache.progress import Progress, duration


def cached_sweep(store, backbone, data, cells, *, base: dict | None = None, executor: str = "local",
                 address: str | None = None, model=None, batch_size: int = 16, memory_mb: float | None = None,
                 progress: Progress | None = None,
                 should_stop: Callable[[], bool] | None = None) -> SweepRun:
    """Score `cells` (KV-Embedding windows) on `data`, reading and writing one store entry per cell.

    Args:
        store: a `cache.Store`, or None to compute everything and store nothing.
        data: labelled pairs (Spearman) or a retrieval task (nDCG@10: `analysis.sweep.runner.scorer`).
        base: KV-Embedding parameters shared by every cell (prompt, pooling, ...).
        executor: "local" (this process) or "ray" (`analysis.sweep.ray_executor`; `address` and `model` go there,
            `model` defaulting to the backbone's name).
        progress: progress(done, total, message) after every cell, cached ones included: the cell's label, its
            score, "cached" or its seconds, and the time left once a cell was computed.
    """
    if executor == "local":  # --dtype auto: KV-Embedding's dtype (a Ray worker loads its model in float32)
        backbone, _ = precision.for_method(backbone, "kv_embedding")
    began = time.perf_counter()
    base = dict(base or {})
    L = backbone.facts.n_layers
    cells = list(dict.fromkeys(cells))
    run = SweepRun()
    metric = runner.scorer(data).metric  # bad data fails here, in one sentence, before any work
    name = "rho" if metric == "Spearman" else metric

    def lookup(method):
        return stored_cell_score(store, backbone, data, method)

    def save(method, value, seconds):
        put_cell_score(store, backbone, data, method, value, seconds)

    reference = get_method("kv_embedding", layers="none", **base)
    run.prompt_only = lookup(reference)
    todo = []
    for cell in cells:
        value = lookup(windows.cell_method(cell, L, **base))
        if value is None:
            todo.append(cell)
        else:
            run.scores[cell] = value
            run.cached += 1
            if progress is not None:
                progress(run.cached, len(cells), f"{cell.label()}: {name}={value:.4f} (cached)")
    if not todo and run.prompt_only is not None:
        run.seconds = time.perf_counter() - began
        return run

    total_cost = runner.cost(todo, L)  # prompt-only forwards still to do; the ETA scales the measured rate
    budgets.check("sweep_text_forwards", runner.text_passes(todo, L, data),
                  f"the work of this sweep in text forwards ({total_cost:.1f} prompt-only passes over every text "
                  "still to do; choose fewer pairs, documents or cells)")
    run.floor = total_cost
    spent = {"cost": 0.0, "since": time.perf_counter()}

    def eta():
        if spent["cost"] <= 0:
            return None
        rate = (time.perf_counter() - spent["since"]) / spent["cost"]  # seconds per prompt-only forward
        return rate * max(total_cost - spent["cost"], 0.0)

    def on_prefix(value, seconds):
        run.prefix_seconds = seconds
        spent["cost"] += 1.0
        if run.prompt_only is None:
            save(reference, value, seconds)
        run.prompt_only = value

    def on_cell(result):
        run.scores[result.cell] = result.score
        run.computed += 1
        spent["cost"] += (L - result.cell.start) / L
        save(windows.cell_method(result.cell, L, **base), result.score, result.seconds)
        if progress is not None:
            left = eta()
            progress(run.cached + run.computed, len(cells), f"{result.cell.label()}: {name}={result.score:.4f} "
                     f"({result.seconds:.1f} s" + (f", about {duration(left)} left)" if left is not None else ")"))

    options = {"base": base, "batch_size": batch_size,
               "memory_mb": runner.MEMORY_MB if memory_mb is None else memory_mb}
    if executor not in ("local", "ray"):
        raise UserError(f"Unknown executor {executor!r}: use local or ray.")
    if executor == "local" or not todo:  # the prompt-only reference alone is one local pass
        runner.score_local(backbone, data, todo, on_prefix=on_prefix, on_cell=on_cell, should_stop=should_stop,
                          **options)
    else:
        score_ray(model if model is not None else backbone.facts.name, backbone.identity, data, todo,
                  address=address, on_prefix=on_prefix, on_cell=on_cell, **options)
    run.seconds = time.perf_counter() - began
    return run
