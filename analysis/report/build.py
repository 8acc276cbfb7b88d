"""Build one model's report: which method, which layers, at what cost, on this model.

    plan = prepare(backbone, pairs, budget_minutes=30)        # the estimate, shown before any work
    report = build(backbone, pairs, plan)                      # every number, as a JSON-able dict

The work is the plan's (`analysis.report.plan`), in order: the ID trajectory (KV-Embedding's `layers=auto` needs
it), the quality table, the cost of each method, the layer map, the mechanism summaries, the recommendation.
Embeddings, the window, sweep cells and the soft-token curve come through `Hooks`, so an application can serve
them from its cache and an interrupted report resumes from every finished cell (`local_hooks` computes
everything here and stores nothing). A stop request (`should_stop()`) or Ctrl-C ends the run with a partial
report: each unfinished section is None and `missing` says why.

Report JSON (schema 1; `KEYS`, `SECTION_KEYS` and `ROW_KEYS` list the keys, `problems(report)` checks them):
    schema, created, model {identity, name, title, n_layers, n_params, device, dtype}, data {name, n_pairs,
    n_texts, ...the caller's sample fields}, settings {seed, n_boot, budget_minutes, executor},
    plan (`Plan.as_dict()`), spent_seconds {section: s}, complete, interrupted, missing {section: reason},
    quality {best, methods [{label, name, params, trained, cached, seconds, spearman, ci, difference_to_best,
        difference_ci, p}], n_pairs, n_boot, seed, bootstrap, tasks [{task, metric, label, value, ci, n}]},
    cost {baseline, texts, repeats, rows [{label, seconds, ratio, peak_mb}]},
    layers {id_trajectory [ID per hidden state], selection {rule, start, end, layers, reason}, rule_windows
        {rule: {start, end}}, map {cells [{start, width, bias, rerotate, layers, spearman}], grid, prompt_only,
        best, id_window {layers, spearman, rank_among_cells, gap_to_best, cell}} | None, computed, cached},
    mechanism {prefix_mass {texts, layers, mass [per decoder layer]}, soft_tokens {ks, spearman, ci} | None},
    recommendation {best, best_per_cost, not_different, id_rule {trusted, reason}, reasons [sentences]}.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import numpy as np

from analysis.report import plan as planning
from analysis.report import sections
from analysis.report.recommend import recommend

SCHEMA = 1
KEYS = ("schema", "created", "model", "data", "settings", "plan", "spent_seconds", "complete", "interrupted",
        "missing", "quality", "cost", "layers", "mechanism", "recommendation")
SECTION_KEYS = {  # each section's keys, as the module docstring documents them
    "quality": ("best", "methods", "n_pairs", "n_boot", "seed", "bootstrap", "tasks"),
    "cost": ("baseline", "texts", "repeats", "rows"),
    "layers": ("id_trajectory", "selection", "rule_windows", "map", "computed", "cached"),
    "mechanism": ("prefix_mass", "soft_tokens"),
    "recommendation": ("best", "best_per_cost", "not_different", "id_rule", "reasons"),
}
ROW_KEYS = {"quality": ("label", "name", "params", "trained", "cached", "seconds", "spearman", "ci",
                        "difference_to_best", "difference_ci", "p"),
            "cost": ("label", "seconds", "ratio", "peak_mb")}
DEFAULT_TASKS = ("polarity",)  # `eval.tasks.load_task` names: a probe on 200 built-in sentences, always present
KV_BASE = {"prompt": "document", "pooling": "hybrid"}  # the sweep command's and the Layer explorer's cells
INTERRUPTED = "the run was interrupted before this section finished; run it again to resume from the cache"


def problems(report) -> list[str]:
    """What in `report` departs from the documented keys (empty: it validates): the top level, every section
    present, and the rows of the quality and cost tables."""
    if not isinstance(report, dict):
        return ["the report is not a JSON object"]
    out = [f"no {k!r}" for k in KEYS if k not in report]
    if report.get("schema") != SCHEMA:
        out.append(f"schema {report.get('schema')!r} is not {SCHEMA}")
    for section, keys in SECTION_KEYS.items():
        part = report.get(section)
        if part is None:
            continue
        if not isinstance(part, dict):
            out.append(f"{section} is not an object")
            continue
        out += [f"{section} has no {k!r}" for k in keys if k not in part]
        rows = part.get("methods" if section == "quality" else "rows", []) if section in ROW_KEYS else []
        for row in rows:
            out += [f"a {section} row has no {k!r}" for k in ROW_KEYS[section] if k not in (row or {})]
    return out


@dataclass
class Hooks:
    encode: Callable  # (method, texts) -> (emb (n, d), {"cached", "seconds"})
    window: Callable  # () -> (Selection, ID per hidden state): KV-Embedding's `layers=auto` window
    sweep: Callable  # (cells, progress, should_stop) -> object with scores {Cell: rho}, prompt_only, computed, cached
    soft_curve: Callable  # (pairs, ks) -> `inspect.generation.scaling_curve` arrays


def local_hooks(backbone, pairs, *, batch_size: int = 16) -> Hooks:
    """Everything computed in this process, nothing stored."""
    from analysis.inspect.generation import scaling_curve
    from analysis.inspect.intrinsic_dim import auto_trajectory
    from analysis.methods import get_method
    from analysis.sweep import runner

    def encode(method, texts):
        began = time.perf_counter()
        return method.encode(backbone, texts, batch_size=batch_size), {"cached": False,
                                                                        "seconds": time.perf_counter() - began}

    def sweep(cells, progress=None, should_stop=None):
        ref, scores = {}, {}

        def on_cell(result):
            scores[result.cell] = result.spearman
            if progress is not None:
                progress(len(scores), len(cells), {"cell": result.cell.label()})

        runner.score_local(backbone, pairs, cells, base=KV_BASE, batch_size=batch_size, on_cell=on_cell,
                           on_prefix=lambda rho, s: ref.update(rho=rho), should_stop=should_stop)
        return SimpleNamespace(scores=scores, prompt_only=ref.get("rho"), computed=len(scores), cached=0)

    return Hooks(encode, lambda: auto_trajectory(backbone, get_method("kv_embedding", **KV_BASE).prompt_only()),
                 sweep, lambda p, ks: scaling_curve(backbone, p, ks, batch_size=batch_size))


def report_methods(backbone) -> tuple[dict, set]:
    """({label: method}, trained labels): every training-free method at its paper's defaults (soft tokens on the
    frozen model), and the trained ones this repository ships weights for on this model."""
    from analysis.methods import get_method, list_methods
    from analysis.methods.causal2vec import shipped_fits
    from analysis.weights.adapters import shipped_folder

    trained_names = {"causal2vec", "soft_tokens", "sentence_encoder"}  # sentence_encoder: not this model at all
    methods = {m.name: get_method(m.name) for m in list_methods() if m.name not in trained_names}
    methods["soft_tokens"] = get_method("soft_tokens", adapter="none")
    trained = set()
    if shipped_folder(backbone.facts) is not None:
        methods["soft_tokens_trained"] = get_method("soft_tokens", adapter="shipped")
        trained.add("soft_tokens_trained")
    if shipped_fits(backbone):
        methods["causal2vec"] = get_method("causal2vec")
        trained.add("causal2vec")
    return methods, trained


def prepare(backbone, pairs, *, budget_minutes: float, batch_size: int = 16, seconds_per_text: float | None = None,
            tasks: list = ()) -> planning.Plan:
    """The plan and its estimate, from a forward timed here (a few seconds; `seconds_per_text` reuses an earlier
    timing, as the page does on every rerun): what is shown before the run. `tasks`: probe or retrieval
    `eval.tasks.Task`s to score every method on too (DEFAULT_TASKS: the built-in polarity probe)."""
    from analysis.eval.sts import check_pairs
    from analysis.weights.adapters import shipped_folder

    check_pairs(pairs)
    methods, trained = report_methods(backbone)
    texts = pairs.unique_texts()
    seconds = seconds_per_text or planning.calibrate(backbone, texts, batch_size)
    plan = planning.make_plan(backbone, methods, n_texts=len(texts), n_pairs=len(pairs),
                              budget_minutes=budget_minutes, seconds_per_text=seconds,
                              soft_curve=shipped_folder(backbone.facts) is not None, tasks=tasks)
    plan.trained = trained
    return plan


def build(backbone, pairs, plan: planning.Plan, *, hooks: Hooks | None = None, seed: int = 0, n_boot: int = 1000,
          batch_size: int = 16, about: dict | None = None, progress: Callable[[float, str], None] | None = None,
          should_stop: Callable[[], bool] | None = None) -> dict:
    """The report (module docstring) as a JSON-able dict. `progress(fraction of the estimate, message)`;
    `about`: extra fields for "data" and "settings" ({"data": {...}, "settings": {...}})."""
    hooks = hooks or local_hooks(backbone, pairs, batch_size=batch_size)
    about = about or {}
    f = backbone.facts
    report = {key: None for key in KEYS}
    report.update(schema=SCHEMA, created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  model={"identity": backbone.identity, "name": f.name, "title": f.title or f.name,
                         "n_layers": f.n_layers, "n_params": f.n_params, "device": str(f.device), "dtype": f.dtype},
                  data={"name": pairs.name, "n_pairs": len(pairs), "n_texts": len(pairs.unique_texts()),
                        **about.get("data", {})},
                  settings={"seed": seed, "n_boot": n_boot, "budget_minutes": plan.budget_seconds / 60,
                            **about.get("settings", {})},
                  plan=plan.as_dict(), spent_seconds={}, complete=False, interrupted=False,
                  missing=dict(plan.skipped))
    total = max(sum(plan.estimate.values()), 1e-9)
    done = {"s": 0.0}
    began = time.perf_counter()

    def tell(section: str, message: str, within: float = 0.0):
        if progress is not None:
            progress(min(1.0, (done["s"] + within * plan.estimate.get(section, 0.0)) / total), message)

    def over_budget() -> bool:
        return time.perf_counter() - began > plan.budget_seconds

    steps = [("quality", lambda: _quality(backbone, pairs, plan, hooks, report, seed, n_boot, tell, should_stop)),
             ("cost", lambda: _cost(backbone, pairs, plan, batch_size, should_stop)),
             ("layers", lambda: _layers(backbone, plan, hooks, report, tell, should_stop)),
             ("mechanism", lambda: _mechanism(backbone, pairs, plan, hooks, report))]
    try:
        for section, step in steps:
            if section in plan.skipped:
                continue
            if section != "quality" and over_budget():
                report["missing"][section] = (f"the budget of {plan.budget_seconds / 60:g} min ran out before this "
                                              "section (raise --budget-minutes)")
                continue
            sections.stop_if(should_stop)
            tell(section, f"{section}: starting")
            started = time.perf_counter()
            report[section] = step()
            report["spent_seconds"][section] = round(time.perf_counter() - started, 2)
            done["s"] += plan.estimate.get(section, 0.0)
    except (sections.Stopped, KeyboardInterrupt):
        report["interrupted"] = True
        for section in planning.SECTIONS:
            unfinished = report[section] is None or (section == "layers" and report[section]["map"] is None)
            if unfinished and section not in report["missing"]:
                report["missing"][section] = INTERRUPTED
        return report
    report["recommendation"] = recommend(report["quality"], report["cost"], report["layers"])
    report["complete"] = not report["missing"]
    tell("recommendation", "done")
    return report


def _quality(backbone, pairs, plan, hooks, report, seed, n_boot, tell, should_stop) -> dict:
    """The quality table. KV-Embedding's window comes first (the method needs it), so the layers section's
    trajectory is filled in here and every method of the plan is made ready to run (`_ready`)."""
    from analysis.core.errors import UserError

    tell("quality", "ID trajectory (KV-Embedding's layers=auto)")
    try:
        sel, ids = hooks.window()
    except UserError as err:  # too few defined ID estimates on this model: the report goes on without KV-Embedding
        reason = f"KV-Embedding's window cannot be chosen on this model: {str(err).rstrip('.')}"
        plan.skipped["layers"] = report["missing"]["layers"] = reason
        plan.methods = {k: m for k, m in plan.methods.items() if m.name != "kv_embedding"}
    else:
        report["layers"] = {"id_trajectory": ids, "selection": sel.as_dict(),
                            "rule_windows": sections.rule_windows(ids, backbone.facts.n_layers), "map": None,
                            "computed": 0, "cached": 0}  # the map is added by the layers step
        plan.methods = {k: _ready(backbone, m, sel) for k, m in plan.methods.items()}
    order = list(plan.methods)
    table = sections.quality(pairs, plan.methods, hooks.encode, n_boot=n_boot, seed=seed,
                             trained=plan.trained, should_stop=should_stop,
                             progress=lambda label: tell("quality", f"quality: {label}",
                                                         order.index(label) / len(order)))
    tell("quality", "quality: " + (", ".join(t.name for t in plan.tasks) or "no other tasks"), 0.9)
    table["tasks"] = sections.tasks(plan.tasks, plan.methods, hooks.encode, n_boot=n_boot, seed=seed,
                                    should_stop=should_stop)
    return table


def _ready(backbone, method, sel):
    """KV-Embedding's `layers=auto` resolved to the window already computed (not computed again)."""
    needs = getattr(method, "needs_window", None)
    return method.with_window(backbone, sel.layers) if needs is not None and needs(backbone) else method


def _cost(backbone, pairs, plan, batch_size, should_stop) -> dict:
    texts = pairs.unique_texts()[:planning.TIMING_TEXTS]
    return sections.cost(backbone, plan.methods, texts, repeats=planning.TIMING_REPEATS, batch_size=batch_size,
                         should_stop=should_stop)


def _layers(backbone, plan, hooks, report, tell, should_stop) -> dict:
    from analysis.report.sections import layer_map
    from analysis.sweep.windows import Cell

    layers = report["layers"]  # the trajectory, from the quality step
    L = backbone.facts.n_layers
    sel = SimpleNamespace(**layers["selection"])
    sel.layers = tuple(sel.layers)
    id_cell = Cell(sel.start, len(sel.layers), 1.0) if sel.layers else None  # the paper's bias
    work = list(dict.fromkeys(plan.cells + ([id_cell] if id_cell is not None else [])))

    def on_cell(n, total, info):
        tell("layers", f"layer map: cell {n}/{total} ({info['cell']})", n / max(total, 1))

    run = hooks.sweep(work, on_cell, should_stop)
    if any(c not in run.scores for c in work):
        raise sections.Stopped()
    layers.update(map=layer_map(plan.cells, run.scores, L, sel, id_cell, run.prompt_only),
                  computed=run.computed, cached=run.cached)
    return layers


def _mechanism(backbone, pairs, plan, hooks, report) -> dict:
    from analysis.data.corpora import Pairs

    kv = next((m for m in plan.methods.values() if m.name == "kv_embedding"), None)
    out = {"prefix_mass": None, "soft_tokens": None}
    if kv is not None:
        out["prefix_mass"] = sections.prefix_mass(backbone, kv, pairs.unique_texts()[:planning.MECHANISM_TEXTS])
    if plan.soft_curve:
        idx = np.unique(np.linspace(0, len(pairs) - 1, min(planning.SOFT_PAIRS, len(pairs))).astype(int))
        few = Pairs(pairs.name, [pairs.left[i] for i in idx], [pairs.right[i] for i in idx], pairs.scores[idx])
        out["soft_tokens"] = sections.soft_curve(hooks.soft_curve(few, list(planning.SOFT_KS)))
    return out
