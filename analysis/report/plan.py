"""What a model report will compute within its time budget, and what that is estimated to cost, before any work.

The unit of cost is one plain forward of one text of the sample, timed on this machine at the start of the run
(`calibrate`: texts from across the sample, the median of a few passes, so one disturbed pass does not set it):
every section's estimate is a number of such forwards times the measured seconds. The quality table is what a
report is for, so a budget that cannot hold it is refused in one sentence; the layer map is sized to the time the
estimate leaves, from the finest grid down to a coarse one. Nothing else is left out for time here: the estimate
is a guide shown before the run, and the budget is enforced by the clock while it runs (`clock`), unit by unit,
so a machine slower than its probe ends the run early with what is missing named, never late. Only what cannot
run at all (a layer map past the per-request limits) is left out here, with its reason.

    plan = make_plan(backbone, methods, n_texts=980, budget_minutes=30, seconds_per_text=0.02)
    plan.estimate   # {"quality": s, "cost": s, "mechanism": s, "layers": s}; plan.skipped: {section: reason}
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.methods import get_method
from analysis.sweep import runner, windows

SECTIONS = ("quality", "cost", "families", "layers", "mechanism", "recommendation")

# Forwards per text relative to the plain forward; rough on purpose (the estimate is a guide shown before the
# run), each from what the method adds to the sequence or the passes it makes.
RELATIVE_COST = {
    "last": 1.0, "mean": 1.0,  # the plain forward itself
    "prompteol": 1.3, "kv_embedding": 1.3, "token_prepending": 1.3,  # a prompt of about the text's length around it
    "htp": 1.5,  # the prompt plus one placeholder per sentence block
    "echo": 2.3,  # the text twice inside the prompt: attention grows with the square of the length
    "soft_tokens": 4.0,  # K = 5 generation steps after the prompt, each a (cached) forward of one position
    "causal2vec": 1.5,  # the prompt plus a MiniLM pass for the contextual token
    "sentence_encoder": 0.3,  # MiniLM alone (the reference row): 22M parameters, no decoder at all
}
TIMING_TEXTS = 16  # texts each method is timed on: enough for a stable median, small next to the sample
TIMING_REPEATS = 3  # interleaved rounds; the median of three is robust to one disturbed round
MECHANISM_TEXTS = 8  # texts whose attention maps are averaged (eager attention: slow, memory-hungry)
SOFT_PAIRS = 64  # pairs of the soft-token K curve: a curve, not a headline number
SOFT_KS = (0, 1, 2, 3, 5, 8)  # K = 0 (no generation) up to past GIRCSE's default of 5
ID_TEXT_FORWARDS = 362 * 2.0  # the `layers=auto` trajectory: 362 texts, the 50 Lee documents among them long


def ladder(n_layers: int) -> list[tuple[list[int], list[int], list[float]]]:
    """Layer-map grids from the finest to the coarsest: (starts, widths, biases). Each step halves the work
    roughly; the coarsest still spans the depth (a start every quarter) at Eq. 4's width and the paper's bias (both
    as this project read the paper)."""
    L, w = n_layers, windows.paper_width(n_layers)
    every = lambda step: list(range(1, L, max(1, step)))  # noqa: E731 - decoder layers 1.., as the sweep command
    return [(every(2), sorted({w, min(2 * w, L)}), [0.0, 1.0, 3.0]),
            (every(3), [w], [1.0, 3.0]),
            (every(4), [w], [1.0]),
            (every(max(1, L // 4)), [w], [1.0])]


@dataclass
class Plan:
    methods: dict  # label -> configured EmbeddingMethod (the quality table's rows)
    cells: list  # the layer map's `windows.Cell`s (the ID window's cell is added once the window is known)
    soft_curve: bool  # a shipped soft-token adapter exists: draw its K curve
    seconds_per_text: float  # one plain forward of one text, measured
    budget_seconds: float
    estimate: dict = field(default_factory=dict)  # section -> seconds
    skipped: dict = field(default_factory=dict)  # section -> the reason it is left out
    trained: set = field(default_factory=set)  # labels of methods with trained weights
    tasks: list = field(default_factory=list)  # probe and retrieval `eval.tasks.Task`s scored beside STS
    families: list = field(default_factory=list)  # the task families' samples (`report.families`), after the cost
    family_forwards: dict = field(default_factory=dict)  # task name -> plain forwards of one STS text, one method
    families_skipped: dict = field(default_factory=dict)  # family -> why it has no sample here

    def family_seconds(self, task, method) -> float:
        """One (method, family task) unit's estimated seconds."""
        return RELATIVE_COST.get(method.name, 2.0) * self.family_forwards.get(task.name, 0.0) * self.seconds_per_text

    def cell_seconds(self) -> float:
        """One layer-map cell's estimated seconds (the map's prompt-only pass counted as one more cell)."""
        return self.estimate.get("layers", 0.0) / (len(self.cells) + 1)

    def as_dict(self) -> dict:
        return {"methods": list(self.methods), "trained": sorted(self.trained), "cells": len(self.cells),
                "tasks": [t.name for t in self.tasks],
                "families": [t.name for t in self.families], "families_skipped": dict(self.families_skipped),
                "soft_curve": self.soft_curve,
                "seconds_per_text": self.seconds_per_text, "budget_seconds": self.budget_seconds,
                "estimate_seconds": {k: round(v, 1) for k, v in self.estimate.items()},
                "estimate_total_seconds": round(sum(self.estimate.values()), 1), "skipped": dict(self.skipped)}


def calibrate(backbone, texts: list[str], batch_size: int = 16) -> float:
    """Seconds of one plain forward of one text (`last`): TIMING_TEXTS texts spread over `texts` (a sorted sample's
    first texts may all be short), timed TIMING_REPEATS times after one warm-up pass (the first call pays for lazy
    initialisation); the median pass, so one pass disturbed by another job does not set the estimate."""
    idx = np.unique(np.linspace(0, len(texts) - 1, min(TIMING_TEXTS, len(texts))).astype(int))
    probe = [texts[i] for i in idx]
    method = get_method("last")
    method.encode(backbone, probe[:2], batch_size=batch_size)
    passes = []
    for _ in range(TIMING_REPEATS):
        began = time.perf_counter()
        method.encode(backbone, probe, batch_size=batch_size)
        passes.append(time.perf_counter() - began)
    return max(float(np.median(passes)) / max(len(probe), 1), 1e-6)


def method_seconds(method, n_texts: int, seconds_per_text: float) -> float:
    """One method's estimated seconds over `n_texts` texts."""
    return RELATIVE_COST.get(method.name, 2.0) * n_texts * seconds_per_text


def prefix_mass_seconds(seconds_per_text: float) -> float:
    return MECHANISM_TEXTS * 3.0 * seconds_per_text  # eager attention: about 3 forwards


def soft_curve_seconds(n_pairs: int, seconds_per_text: float) -> float:
    return 2 * min(SOFT_PAIRS, n_pairs) * RELATIVE_COST["soft_tokens"] * max(SOFT_KS) / 5 * seconds_per_text  # K to 8


def quality_forwards(methods: dict, n_texts: int) -> float:
    """The quality table in plain forwards of one text: every method over the sample's texts and the tasks'
    (`n_texts` counts both), plus the ID trajectory behind KV-Embedding's `layers=auto` window."""
    work = sum(RELATIVE_COST.get(m.name, 2.0) for m in methods.values()) * n_texts
    return work + (ID_TEXT_FORWARDS if any(m.name == "kv_embedding" for m in methods.values()) else 0.0)


def make_plan(backbone, methods: dict, *, n_texts: int, n_pairs: int, budget_minutes: float,
              seconds_per_text: float, soft_curve: bool, tasks: list = (), families: list = (),
              family_forwards: dict | None = None, families_skipped: dict | None = None) -> Plan:
    """Fit the sections into `budget_minutes` (see the module docstring). Raises UserError when even the quality
    table does not fit. The task families' samples (`families`, each costing `family_forwards[task name]` plain
    forwards per method) are estimated but never required to fit: the clock measures them unit by unit."""
    if not (math.isfinite(budget_minutes) and budget_minutes > 0):
        raise UserError(f"--budget-minutes must be a positive number of minutes, not {budget_minutes}.")
    budget = budget_minutes * 60.0
    L = backbone.facts.n_layers
    plan = Plan(methods, [], soft_curve, seconds_per_text, budget, tasks=list(tasks), families=list(families),
                family_forwards=dict(family_forwards or {}), families_skipped=dict(families_skipped or {}))
    task_texts = sum(t.n_texts() for t in plan.tasks)
    plan.estimate["quality"] = quality_forwards(methods, n_texts + task_texts) * seconds_per_text
    if plan.estimate["quality"] > budget:
        need = math.ceil(plan.estimate["quality"] / 60.0)
        raise UserError(f"A budget of {budget_minutes:g} min is too small for even the quality table (about {need} "
                        f"min for {len(methods)} methods on {n_texts + task_texts} texts here); give --budget-minutes "
                        f"{need} or more, or a smaller --sample.")
    left = budget - plan.estimate["quality"]
    timing = (1 + sum(RELATIVE_COST.get(m.name, 2.0) for m in methods.values())) * TIMING_TEXTS * TIMING_REPEATS
    plan.estimate["cost"] = timing * seconds_per_text
    plan.estimate["mechanism"] = prefix_mass_seconds(seconds_per_text) + (
        soft_curve_seconds(n_pairs, seconds_per_text) if soft_curve else 0.0)
    plan.estimate["families"] = sum(plan.family_seconds(t, m) for t in plan.families for m in methods.values())
    left -= plan.estimate["cost"] + plan.estimate["mechanism"] + plan.estimate["families"]
    fitting = []  # grids within the per-request limits, finest first
    for starts, widths, biases in ladder(L):
        try:
            cells = windows.grid(L, starts, widths, biases)
        except UserError:  # more cells than one request may hold (`core.budgets`): a coarser grid
            continue
        if (len(cells) + 1 <= budgets.limit("grid_cells")  # + 1: the ID window's own cell
                and runner.cost(cells, L) * n_texts <= budgets.limit("sweep_text_forwards")):
            fitting.append((cells, runner.cost(cells, L) * n_texts * RELATIVE_COST["kv_embedding"] * seconds_per_text))
    if not fitting:
        plan.skipped["layers"] = ("even the coarsest layer map (a start every quarter of the depth) is past the "
                                  "per-request limits (--no-budgets lifts them)")
        return plan
    # the finest grid the estimate says fits; else the coarsest, which the clock stops where the time runs out (its
    # finished cells stay in the cache, so the same command run again goes on from there)
    plan.cells, plan.estimate["layers"] = next(((c, t) for c, t in fitting if t <= left), fitting[-1])
    return plan
