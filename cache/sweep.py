"""A layer sweep through the cache: one entry per cell, shared by `python -m analysis sweep` and the Layer explorer.

Each cell's Spearman score is stored under `cache.keys.sts_score_parts` in the `STS_SCORE` namespace (the keys the
page has always used), as soon as the cell is done, whichever executor computed it: a stopped sweep resumes
where it stopped, locally or on Ray. The prompt-only reference comes free with the sweep's prompt-only pass and
is stored under its own method's key.

    run = cached_sweep(default_store(), backbone, pairs, windows.grid(30, range(1, 30, 4), [4], [1.0]))
    run.scores[cell], run.prompt_only, run.computed, run.cached
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from cache.keys import STS_SCORE, make_key, sts_score_parts


@dataclass
class SweepRun:
    scores: dict = field(default_factory=dict)  # Cell -> Spearman
    prompt_only: float | None = None
    computed: int = 0  # cells computed by this call
    cached: int = 0  # cells found in the store
    seconds: float = 0.0  # wall time of this call
    prefix_seconds: float | None = None  # the prompt-only pass (None: not run)
    floor: float = 0.0  # cost floor of the computed part, in prompt-only forwards


def cached_sweep(store, backbone, pairs, cells, *, base: dict | None = None, executor: str = "local",
                 address: str | None = None, model=None, batch_size: int = 16, memory_mb: float | None = None,
                 progress: Callable[[int, int, dict], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> SweepRun:
    """Score `cells` (KV-Embedding windows) on `pairs`, reading and writing one store entry per cell.

    Args:
        store: a `cache.Store`, or None to compute everything and store nothing.
        base: KV-Embedding parameters shared by every cell (prompt, pooling, ...).
        executor: "local" (this process) or "ray" (`analysis.sweep.ray_executor`; `address` and `model` go there,
            `model` defaulting to the backbone's name).
        progress: progress(done, total, info) after every cell, cached ones included; info has "cell" (label),
            "spearman", "cached", "seconds" and "eta_seconds" (None until one cell was computed).
    """
    from analysis.sweep import windows
    from analysis.sweep import runner
    from analysis.core.errors import UserError
    from analysis.methods import get_method

    began = time.perf_counter()
    base = dict(base or {})
    L = backbone.facts.n_layers
    cells = list(dict.fromkeys(cells))
    run = SweepRun()

    def key(method):
        return make_key(sts_score_parts(backbone, pairs, method))

    def lookup(method):
        if store is None:
            return None
        entry = store.get(key(method), STS_SCORE)
        return None if entry is None else float(entry.arrays["spearman"][0])

    def save(method, rho, seconds):
        if store is not None:
            store.put(key(method), {"spearman": np.array([rho])}, {"seconds": seconds},
                      parts=sts_score_parts(backbone, pairs, method), namespace=STS_SCORE)

    reference = get_method("kv_embedding", layers="none", **base)
    run.prompt_only = lookup(reference)
    todo = []
    for cell in cells:
        rho = lookup(windows.cell_method(cell, L, **base))
        if rho is None:
            todo.append(cell)
        else:
            run.scores[cell] = rho
            run.cached += 1
            if progress is not None:
                progress(run.cached, len(cells), {"cell": cell.label(), "spearman": rho, "cached": True,
                                                  "seconds": 0.0, "eta_seconds": None})
    if not todo and run.prompt_only is not None:
        run.seconds = time.perf_counter() - began
        return run

    total_cost = runner.cost(todo, L)  # prompt-only forwards still to do; the ETA scales the measured rate
    from analysis.core import budgets

    budgets.check("sweep_text_forwards", runner.text_passes(todo, L, pairs),
                  f"the work of this sweep in text forwards ({total_cost:.1f} prompt-only passes over every text "
                  "still to do; choose fewer pairs or cells)")
    run.floor = total_cost
    spent = {"cost": 0.0, "since": time.perf_counter()}

    def eta():
        if spent["cost"] <= 0:
            return None
        rate = (time.perf_counter() - spent["since"]) / spent["cost"]  # seconds per prompt-only forward
        return rate * max(total_cost - spent["cost"], 0.0)

    def on_prefix(rho, seconds):
        run.prefix_seconds = seconds
        spent["cost"] += 1.0
        if run.prompt_only is None:
            save(reference, rho, seconds)
        run.prompt_only = rho

    def on_cell(result):
        run.scores[result.cell] = result.spearman
        run.computed += 1
        spent["cost"] += (L - result.cell.start) / L
        save(windows.cell_method(result.cell, L, **base), result.spearman, result.seconds)
        if progress is not None:
            progress(run.cached + run.computed, len(cells), {
                "cell": result.cell.label(), "spearman": result.spearman, "cached": False,
                "seconds": result.seconds, "eta_seconds": eta()})

    options = {"base": base, "batch_size": batch_size,
               "memory_mb": runner.MEMORY_MB if memory_mb is None else memory_mb}
    if executor not in ("local", "ray"):
        raise UserError(f"Unknown executor {executor!r}: use local or ray.")
    if executor == "local" or not todo:  # the prompt-only reference alone is one local pass
        runner.score_local(backbone, pairs, todo, on_prefix=on_prefix, on_cell=on_cell, should_stop=should_stop,
                          **options)
    else:
        from analysis.sweep.ray_executor import score_ray

        runner.pair_scorer(pairs)  # bad pairs fail here, in one sentence, before a cluster starts
        score_ray(model if model is not None else backbone.facts.name, backbone.identity, pairs, todo,
                  address=address, on_prefix=on_prefix, on_cell=on_cell, **options)
    run.seconds = time.perf_counter() - began
    return run
