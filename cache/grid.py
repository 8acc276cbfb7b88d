"""A benchmark grid (models x methods x tasks) through the cache, in this process or on Ray: one entry per cell,
the entries `bench_cell` and the Benchmark page read.

Locally each cell is `cache.compute.bench_cell`. On Ray (`analysis.sweep.ray_executor.score_grid_ray`) the driver
looks every cell up first, sends only the missing ones to actors that load each model once, and stores each result as
it comes back (`put_bench_cell`), so a grid stopped half-way resumes with either executor, and the rows are those a
local run computes (the workers embed every distinct text once, in the order the cache's corpus encoding does).

    cells = [GridCell("default", backbone, method, task) for method in methods for task in tasks]
    for score, meta, hit in cached_grid(default_store(), cells, n_boot=1000, executor="ray"):
        ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from analysis.core.errors import UserError
from analysis.sweep.ray_executor import score_grid_ray
from cache.compute import bench_cell, put_bench_cell, resolve_method, stored_bench_cell
from cache.progress import Progress


@dataclass(frozen=True)
class GridCell:
    model: str  # what a Ray worker loads (`load_backbone`'s name: built-in, folder, ...), or a picklable factory
    backbone: object  # the driver's copy of that model (its identity keys the cell; long-document tasks need it)
    method: object  # an `EmbeddingMethod`
    task: object  # an `analysis.eval.tasks.Task`


def cached_grid(store, cells: list[GridCell], *, n_boot: int, seed: int = 0, executor: str = "local",
                address: str | None = None, batch_size: int = 16, embed: Callable | None = None,
                progress: Progress | None = None) -> list[tuple]:
    """[(Score, meta, hit)] in the order of `cells`; meta has "encode_seconds".

    Args:
        store: a `cache.Store`, or None to compute everything and store nothing.
        executor: "local" (`bench_cell`, with `embed(backbone, side_method, texts) -> (emb, seconds)` when given) or
            "ray" (`address`: a running cluster; None starts a local one).
        progress: progress(done, total, message) after every cell (cells done and in all); locally also within a
            cell, with the cell's name before its own message: a wait for another process computing it, a streamed
            corpus's documents with the time left (and the embedding's own progress when `embed` is None).
    """
    if executor not in ("local", "ray"):
        raise UserError(f"Unknown executor {executor!r}: use local or ray.")
    out: list = [None] * len(cells)

    def tell(i: int, how: str):
        if progress is not None:
            done = sum(r is not None for r in out)
            c = cells[i]
            progress(done, len(cells), f"{c.method.name} on {c.task.name}: {out[i][0].metric} "
                                       f"{out[i][0].value:.4f} ({how})")

    if executor == "local":
        for i, c in enumerate(cells):
            through = None if embed is None else (lambda side, texts, b=c.backbone: embed(b, side, texts))
            out[i] = bench_cell(store, c.backbone, c.method, c.task, n_boot=n_boot, seed=seed, embed=through,
                                batch_size=batch_size, progress=_within(progress, i, len(cells), c))
            tell(i, "cached" if out[i][2] else "computed")
        return out

    jobs = []
    for i, c in enumerate(cells):
        found = stored_bench_cell(store, c.backbone, c.method, c.task, n_boot=n_boot, seed=seed) \
            if store is not None else None
        if found is not None:
            out[i] = (*found, True)
            tell(i, "cached")
        else:  # a layers=auto window is resolved here, through the store, and travels with the method
            jobs.append((i, c.model, c.backbone.identity, resolve_method(store, c.backbone, c.method), c.task, n_boot,
                         seed))

    def on_cell(i: int, arrays: dict, meta: dict):
        c = cells[i]
        out[i] = (put_bench_cell(store, c.backbone, c.method, c.task, arrays, meta, n_boot=n_boot, seed=seed), meta,
                  False)
        tell(i, f"computed on Ray in {meta['seconds']:.1f} s")

    if jobs:
        score_grid_ray(jobs, batch_size=batch_size, address=address, on_cell=on_cell)
    return out


def _within(progress: Progress | None, i: int, n: int, cell: GridCell) -> Progress | None:
    """The grid's progress inside cell `i` (the i cells before it done): its own message under the cell's name."""
    if progress is None:
        return None
    return lambda done, total, message: progress(i, n, f"{cell.method.name} on {cell.task.name}: {message}")
