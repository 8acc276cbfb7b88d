"""The model report's sections as steps (`build` runs them in its order): each measures through the report's
`Compute` door (`analysis.compute`, so an application serves it from its cache), starts each unit of its work only when the budget's clock says it
still fits (`clock.Budget`), and records in the report's `missing` what it left out and why: a method that failed,
the methods the time did not reach, the cells of the layer map still to compute. A step returns its section, or
None when nothing of it was measured.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from analysis.core.errors import UserError
from analysis.data.corpora import Pairs
from analysis.report import families, sections
from analysis.report import plan as planning
from analysis.sweep.windows import Cell


class Steps:
    """The steps of one run: `quality`, `cost`, `families`, `mechanism`, `layers`, each a method returning its
    section."""

    def __init__(self, backbone, pairs, plan, compute, report, budget, tell, *, seed, n_boot, batch_size):
        self.backbone, self.pairs, self.plan, self.compute, self.report = backbone, pairs, plan, compute, report
        self.budget, self.tell, self.seed, self.n_boot, self.batch_size = budget, tell, seed, n_boot, batch_size
        self.spt = plan.seconds_per_text

    def encode(self, method, texts):
        """`Compute.encode` that tells the budget how long each computed (not cached) call took against its
        estimate."""
        encoded = self.compute.encode(self.backbone, method, texts)
        if not encoded.cached:
            self.budget.measured(planning.method_seconds(method, len(texts), self.spt), encoded.seconds)
        return encoded

    def asked(self, section: str) -> bool:
        """Whether this run has the section at all: the task families only when some were asked for."""
        return section != "families" or bool(self.plan.families or self.plan.families_skipped)

    def first_unit(self, section: str) -> float:
        """Estimated seconds of a section's first unit: what must fit for the section to start at all."""
        if section == "quality":
            return 0.0  # the plan refused a budget the quality table does not fit; the methods are checked one by one
        if section == "layers":
            return 2 * self.plan.cell_seconds()  # the map's prompt-only pass and one cell
        if section == "mechanism":
            return planning.prefix_mass_seconds(self.spt) if self._kv() is not None else self._soft_seconds()
        if section == "families":  # the cheapest unit: a family that cannot start one has nothing to show
            units = [self.plan.family_seconds(t, m) for t in self.plan.families for m in self.plan.methods.values()]
            return min(units, default=0.0)
        return self.plan.estimate.get(section, 0.0)

    def quality(self) -> dict | None:
        """The quality table. KV-Embedding's window comes first (the method needs it), so the layers section's
        trajectory is filled in here and every method of the plan is made ready to run (`_ready`)."""
        plan, report = self.plan, self.report
        self.tell("quality", "ID trajectory (KV-Embedding's layers=auto)")
        try:
            sel, ids = self.compute.window(self.backbone)
        except UserError as err:  # too few defined ID estimates on this model: the report goes on without KV-Embedding
            reason = f"KV-Embedding's window cannot be chosen on this model: {str(err).rstrip('.')}"
            plan.skipped["layers"] = report["missing"]["layers"] = reason
            plan.methods = {k: m for k, m in plan.methods.items() if m.name != "kv_embedding"}
        else:
            report["layers"] = {"id_trajectory": ids, "selection": sel.as_dict(),
                                "rule_windows": sections.rule_windows(ids, self.backbone.facts.n_layers),
                                "map": None, "computed": 0, "cached": 0}  # the map is added by the layers step
            plan.methods = {k: _ready(self.backbone, m, sel) for k, m in plan.methods.items()}
        order = list(plan.methods)
        n_texts = len(self.pairs.unique_texts())
        table = sections.quality(
            self.pairs, plan.methods, self.encode, n_boot=self.n_boot, seed=self.seed, trained=plan.trained,
            progress=lambda label: self.tell("quality", f"quality: {label}", order.index(label) / len(order)),
            stop=lambda label: self.budget.stop_reason(planning.method_seconds(plan.methods[label], n_texts, self.spt)))
        measured = {r["label"]: plan.methods[r["label"]] for r in table["methods"]}
        table["tasks"] = []
        if measured and plan.tasks:
            self.tell("quality", "quality: " + ", ".join(t.name for t in plan.tasks), 0.9)
            table["tasks"], left_out = sections.tasks(
                plan.tasks, measured, self.encode, n_boot=self.n_boot, seed=self.seed,
                stop=lambda task, label: self.budget.stop_reason(
                    planning.method_seconds(measured[label], task.n_texts(), self.spt)))
            table["not_measured"].update(left_out)
        if table["not_measured"]:
            report["missing"]["quality"] = left_out_summary(table["not_measured"], len(order))
        return table if measured else None

    def cost(self) -> dict:
        measured = {r["label"] for r in (self.report["quality"] or {}).get("methods", [])}
        methods = {k: m for k, m in self.plan.methods.items() if k in measured}  # what the table could compare
        texts = self.pairs.unique_texts()[:planning.TIMING_TEXTS]
        began = time.perf_counter()
        table, failed = sections.cost(self.backbone, methods, texts, repeats=planning.TIMING_REPEATS,
                                      batch_size=self.batch_size, should_stop=self.budget.stop_reason)  # once past it
        self.budget.measured(self.plan.estimate["cost"], time.perf_counter() - began)
        if failed:
            self.report["missing"]["cost"] = "; ".join(f"{k} {v}" for k, v in failed.items())
        return table

    def families(self) -> dict | None:
        """Every method the quality table measured, on each task family's sample (`report.families`), unit by unit
        under the clock, the STS table's best first. None when no family was asked for."""
        plan, quality = self.plan, self.report["quality"]
        if not plan.families:
            return {"tasks": [], "skipped": dict(plan.families_skipped), "n_boot": self.n_boot, "seed": self.seed} \
                if plan.families_skipped else None
        measured = {r["label"]: plan.methods[r["label"]] for r in (quality or {}).get("methods", [])}
        if not measured:
            raise sections.Stopped("no method was measured on STS, so none is measured per family either")

        def done(task, label, seconds, computed):
            if computed:
                self.budget.measured(plan.family_seconds(task, measured[label]), seconds)

        cheapest_first = sorted(plan.families, key=lambda t: plan.family_forwards.get(t.name, 0.0))
        section, left_out = families.measure(
            cheapest_first, measured, families.order(quality, measured), self.encode, n_boot=self.n_boot,
            seed=self.seed, done=done, progress=lambda unit: self.tell("families", f"families: {unit}"),
            stop=lambda task, label: self.budget.stop_reason(plan.family_seconds(task, measured[label])))
        section["skipped"] = dict(plan.families_skipped)
        if left_out:
            self.report["missing"]["families"] = left_out_summary(left_out, len(measured))
        return section

    def mechanism(self) -> dict:
        kv, out, left_out = self._kv(), {"prefix_mass": None, "soft_tokens": None}, {}
        parts = {}
        if kv is not None:
            parts["prefix mass"] = ("prefix_mass", planning.prefix_mass_seconds(self.spt), lambda: sections.prefix_mass(
                self.backbone, kv, self.pairs.unique_texts()[:planning.MECHANISM_TEXTS]))
        if self.plan.soft_curve:
            pairs = self.pairs
            idx = np.unique(np.linspace(0, len(pairs) - 1, min(planning.SOFT_PAIRS, len(pairs))).astype(int))
            few = Pairs(pairs.name, [pairs.left[i] for i in idx], [pairs.right[i] for i in idx], pairs.scores[idx])
            parts["soft-token K curve"] = ("soft_tokens", self._soft_seconds(), lambda: sections.soft_curve(
                self.compute.soft_curve(self.backbone, few, list(planning.SOFT_KS))))
        for name, (key, estimate, measure) in parts.items():
            why = self.budget.stop_reason(estimate)
            if why:
                left_out[name] = why
                continue
            began = time.perf_counter()
            try:
                out[key] = measure()
            except Exception as err:  # noqa: BLE001 -- one summary's failure must not lose the other
                left_out[name] = sections.failure(err)
            else:
                self.budget.measured(estimate, time.perf_counter() - began)
        if left_out:
            self.report["missing"]["mechanism"] = "; ".join(f"{k}: {v}" for k, v in left_out.items())
        return out if any(v is not None for v in out.values()) or not parts else None

    def layers(self) -> dict:
        layers = self.report["layers"]  # the trajectory, from the quality step
        if layers is None:
            raise sections.Stopped("the ID trajectory was not computed (the quality section did not get that far)")
        L = self.backbone.facts.n_layers
        sel = SimpleNamespace(**layers["selection"])
        sel.layers = tuple(sel.layers)
        id_cell = Cell(sel.start, len(sel.layers), 1.0) if sel.layers else None  # the paper's bias
        work = list(dict.fromkeys(self.plan.cells + ([id_cell] if id_cell is not None else [])))
        per_cell = self.plan.cell_seconds()
        last = {"why": None}  # the stop's reason, asked before every cell

        def on_cell(n, total, info):
            if not info.get("cached", True):
                self.budget.measured(per_cell, info.get("seconds", 0.0))
            self.tell("layers", f"layer map: cell {n}/{total} ({info['cell']})", n / max(total, 1))

        def stop():
            last["why"] = self.budget.stop_reason(per_cell)
            return last["why"]

        run = self.compute.sweep(self.backbone, self.pairs, work, on_cell, stop)
        layers.update(computed=run.computed, cached=run.cached)
        done = sum(c in run.scores for c in work)
        if done < len(work):
            why = last["why"] or "the sweep ended early"
            self.report["missing"]["layers"] = (f"the layer map has {done} of {len(work)} cells, each stored in the "
                                                f"cache: {why}")
            return layers
        layers["map"] = sections.layer_map(self.plan.cells, run.scores, L, sel, id_cell, run.prompt_only)
        return layers

    def _kv(self):
        return next((m for m in self.plan.methods.values() if m.name == "kv_embedding"), None)

    def _soft_seconds(self) -> float:
        return planning.soft_curve_seconds(len(self.pairs), self.spt) if self.plan.soft_curve else 0.0


def left_out_summary(not_measured: dict, n_methods: int) -> str:
    """One sentence part for `missing["quality"]`: which methods (and task scores) were left out, grouped by why."""
    by_reason: dict = {}
    for what, why in not_measured.items():
        by_reason.setdefault(why, []).append(what)
    methods = sum(":" not in k for k in not_measured)
    head = f"{methods} of {n_methods} methods not measured" if methods else "task scores missing"
    return head + ": " + "; ".join(f"{', '.join(whats)} ({why})" for why, whats in by_reason.items())


def _ready(backbone, method, sel):
    """KV-Embedding's `layers=auto` resolved to the window already computed (not computed again)."""
    needs = getattr(method, "needs_window", None)
    return method.with_window(backbone, sel.layers) if needs is not None and needs(backbone) else method
