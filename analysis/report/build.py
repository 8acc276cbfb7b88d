"""Build one model's report: which method, which layers, at what cost, on this model.

    plan = prepare(backbone, pairs, budget_minutes=30)        # the estimate, shown before any work
    report = build(backbone, pairs, plan)                      # every number, as a JSON-able dict

The work is the plan's (`analysis.report.plan`), in order: the ID trajectory (KV-Embedding's `layers=auto` needs
it), the quality table, the cost of each method, the mechanism summaries, the layer map (cell by cell, the grid the
plan chose for the budget), the task families (last: unit by unit, what time is left), then the recommendation.
Embeddings, the window, sweep cells and the soft-token curve come through the `Compute` door (`analysis.compute`),
so an application serves them from its cache (`cache.Cached`) and a report run again resumes from every finished
method and cell (`analysis.compute.direct.Direct` computes everything here and stores nothing).

Every section may end up missing or partial, and the report says which and why instead of failing: the budget
is enforced by the clock (`analysis.report.clock`: each method, task score, cell and summary starts only when it
still fits), a stop request (`should_stop()`) or Ctrl-C stops the run where it is, and a method that fails is left
out with its error while the others go on. A missing section is None; `missing` {section: reason} names every
section that is missing or partial, `complete` is true only when it is empty, and the recommendation is always
made from what was measured, saying what it cannot answer and why.

Report JSON (schema 1; `KEYS`, `SECTION_KEYS` and `ROW_KEYS` list the keys, `problems(report)` checks them):
    schema, created, model {identity, name, title, n_layers, n_params, device, dtype}, data {name, n_pairs,
    n_texts, ...the caller's sample fields}, settings {seed, n_boot, budget_minutes, executor},
    plan (`Plan.as_dict()`), spent_seconds {section: s}, complete, interrupted, missing {section: reason},
    quality {best, methods [{label, name, params, trained, cached, seconds, spearman, ci, difference_to_best,
        difference_ci, p, reference}], n_pairs, n_boot, seed, bootstrap, tasks [{task, metric, label, value, ci, n}],
        not_measured {label or "task: label": reason} (absent in reports made before it), reference (the label of
        MiniLM alone, the row that is never the best; absent in reports made before it)},
    cost {baseline, texts, repeats, rows [{label, seconds, ratio, peak_mb}]},
    layers {id_trajectory [ID per hidden state], selection {rule, start, end, layers, reason}, rule_windows
        {rule: {start, end}}, map {cells [{start, width, bias, rerotate, layers, spearman}], grid, prompt_only,
        best, id_window {layers, spearman, rank_among_cells, gap_to_best, cell}} | None, computed, cached},
    mechanism {prefix_mass {texts, layers, mass [per decoder layer]} | None, soft_tokens {ks, spearman, ci} | None},
    families (`report.families`: each task family's sample, every method with its paired difference to the
        family's best) {tasks [{task, family, metric, unit, n, best, bootstrap, rows [{label, value, ci,
        difference_to_best, difference_ci, p, reference}]}], skipped {family: why}, n_boot, seed} | None (absent
        before it),
    recommendation {best, best_per_cost, not_different, id_rule {trusted, reason}, reasons [sentences], reference
        {label, verdict better/tied/worse/None, reason} | None (absent before it), families {per_task, overall,
        reasons} (the answer per family and overall, `families.recommend`; absent before it)}; best, best_per_cost
        and trusted
        are None where the report cannot say;
    claims {source, created, counts, rows [{paper, id, says, word, number}]} | None: the model's newest claims board
        (`python -m analysis claims`), read through the `Compute` door, never run by the report (absent in older reports).
"""

from __future__ import annotations

import datetime
import time
from typing import Callable

from analysis.compute import Compute
from analysis.compute.direct import Direct
from analysis.methods import get_method, list_methods
from analysis.methods.causal2vec import shipped_fits
from analysis.report import families as family_tasks
from analysis.report import plan as planning
from analysis.report import sections
from analysis.report.clock import INTERRUPTED, Budget
from analysis.report.recommend import recommend
from analysis.report.steps import Steps
from analysis.weights.adapters import shipped_folder
from analysis.weights.stand_in import FROZEN_SOFT_TOKENS

SCHEMA = 1
KEYS = ("schema", "created", "model", "data", "settings", "plan", "spent_seconds", "complete", "interrupted",
        "missing", "quality", "cost", "layers", "mechanism", "recommendation")
SECTION_KEYS = {  # each section's keys, as the module docstring documents them
    "quality": ("best", "methods", "n_pairs", "n_boot", "seed", "bootstrap", "tasks"),
    "cost": ("baseline", "texts", "repeats", "rows"),
    "layers": ("id_trajectory", "selection", "rule_windows", "map", "computed", "cached"),
    "mechanism": ("prefix_mass", "soft_tokens"),
    "recommendation": ("best", "best_per_cost", "not_different", "id_rule", "reasons"),
    "families": ("tasks", "skipped", "n_boot", "seed"),  # optional: checked when present (reports made after it)
    "claims": ("source", "created", "counts", "rows"),  # optional, likewise
}
ROW_KEYS = {"quality": ("label", "name", "params", "trained", "cached", "seconds", "spearman", "ci",
                        "difference_to_best", "difference_ci", "p"),
            "cost": ("label", "seconds", "ratio", "peak_mb")}
DEFAULT_TASKS = ("polarity",)  # `eval.tasks.load_task` names: a probe on 200 built-in sentences, always present
# The order of the work. The families come last: they are the one step whose estimate can pass any budget (unit by
# unit, each method on each family), and before the seconds-long mechanism and layer map they took the time those
# needed (a 14-min report under load lost both for 5 s).
STEPS = ("quality", "cost", "mechanism", "layers", "families")


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


def report_methods(backbone) -> tuple[dict, set]:
    """({label: method}, trained labels): every training-free method at its defaults here (each method's `DEVIATIONS`
    says where they are not its paper's; soft tokens on the frozen model, labelled so: `FROZEN_SOFT_TOKENS`), the
    trained ones this repository ships weights for on this model, and MiniLM alone as the reference row
    (`sections.REFERENCE_METHODS`: compared with the best, never the best)."""
    trained_names = {"causal2vec", "soft_tokens"}
    methods = {m.name: get_method(m.name) for m in list_methods() if m.name not in trained_names}  # + the reference
    methods[FROZEN_SOFT_TOKENS] = get_method("soft_tokens", adapter="none")
    trained = set()
    if shipped_folder(backbone.facts) is not None:
        methods["soft_tokens_trained"] = get_method("soft_tokens", adapter="shipped")
        trained.add("soft_tokens_trained")
    if shipped_fits(backbone):
        methods["causal2vec"] = get_method("causal2vec")
        trained.add("causal2vec")
    return methods, trained


def prepare(backbone, pairs, *, budget_minutes: float, batch_size: int = 16, seconds_per_text: float | None = None,
            tasks: list = (), families: tuple = (), seed: int = 0) -> planning.Plan:
    """The plan and its estimate, from a forward timed here (a few seconds; `seconds_per_text` reuses an earlier
    timing, as the page does on every rerun): what is shown before the run. `tasks`: probe or retrieval
    `eval.tasks.Task`s to score every method on too (DEFAULT_TASKS: the built-in polarity probe); `families`: task
    families measured on their default samples after the cost (`report.families`: `FAMILIES` for all; the samples
    seeded by `seed`)."""
    from analysis.eval.sts import check_pairs  # lazy: keeps scipy off the pages' and the command line's start
    check_pairs(pairs)
    methods, trained = report_methods(backbone)
    texts = pairs.unique_texts()
    seconds = seconds_per_text or planning.calibrate(backbone, texts, batch_size)
    samples, skipped = family_tasks.default_tasks(backbone, families, seed)
    sts_tokens = family_tasks.mean_tokens(texts, backbone.tokenizer, seed) if samples else 1.0
    plan = planning.make_plan(backbone, methods, n_texts=len(texts), n_pairs=len(pairs),
                              budget_minutes=budget_minutes, seconds_per_text=seconds,
                              soft_curve=shipped_folder(backbone.facts) is not None, tasks=tasks, families=samples,
                              family_forwards={t.name: family_tasks.forwards(t, backbone.tokenizer, sts_tokens, seed)
                                               for t in samples}, families_skipped=skipped)
    plan.trained = trained
    return plan


def build(backbone, pairs, plan: planning.Plan, *, compute: Compute | None = None, seed: int = 0, n_boot: int = 1000,
          batch_size: int = 16, about: dict | None = None, progress: Callable[[float, str], None] | None = None,
          should_stop: Callable[[], bool] | None = None, started: float | None = None,
          clock: Callable[[], float] | None = None) -> dict:
    """The report (module docstring) as a JSON-able dict. `progress(fraction of the estimate, message)`;
    `about`: extra fields for "data" and "settings" ({"data": {...}, "settings": {...}}); `started`: when the
    budget began on `clock` (`analysis.report.clock.now` unless given; default: now), so a command counts its
    model load and timing probe too."""
    compute = compute or Direct(batch_size=batch_size)
    about = about or {}
    f = backbone.facts
    report = {key: None for key in KEYS}
    if plan.families or plan.families_skipped:  # optional: reports without task families (and older ones) have none
        report["families"] = None
    report.update(schema=SCHEMA, created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  model={"identity": backbone.identity, "name": f.name, "title": f.title or f.name,
                         "n_layers": f.n_layers, "n_params": f.n_params, "device": str(f.device), "dtype": f.dtype},
                  data={"name": pairs.name, "n_pairs": len(pairs), "n_texts": len(pairs.unique_texts()),
                        **about.get("data", {})},
                  settings={"seed": seed, "n_boot": n_boot, "budget_minutes": plan.budget_seconds / 60,
                            **about.get("settings", {})},
                  plan=plan.as_dict(), spent_seconds={}, complete=False, interrupted=False,
                  missing=dict(plan.skipped))
    budget = Budget(plan.budget_seconds, started=started, asked_to_stop=should_stop, clock=clock)
    total = max(sum(plan.estimate.values()), 1e-9)
    done = {"s": 0.0}

    def tell(section: str, message: str, within: float = 0.0):
        if progress is not None:
            progress(min(1.0, (done["s"] + within * plan.estimate.get(section, 0.0)) / total), message)

    work = Steps(backbone, pairs, plan, compute, report, budget, tell, seed=seed, n_boot=n_boot, batch_size=batch_size)
    for section in STEPS:
        if section in plan.skipped or not work.asked(section):
            continue
        why = budget.stop_reason(work.first_unit(section))
        if why:
            report["missing"][section] = why
            continue
        tell(section, f"{section}: starting")
        began = time.perf_counter()
        try:
            report[section] = getattr(work, section)()
        except KeyboardInterrupt:  # Ctrl-C: keep what is finished, start nothing more
            budget.interrupted = True
            report["missing"][section] = INTERRUPTED
        except sections.Stopped as stop:  # a section that cannot be kept in part (the cost rounds)
            report["missing"][section] = str(stop)
        except Exception as err:  # noqa: BLE001 -- a section that fails must not lose the others
            report["missing"][section] = sections.failure(err)
        report["spent_seconds"][section] = round(time.perf_counter() - began, 2)
        done["s"] += plan.estimate.get(section, 0.0)
    report["interrupted"] = budget.interrupted
    report["recommendation"] = recommend(report["quality"], report["cost"], report["layers"], report["missing"])
    if report.get("families") is not None:  # the answer per family and overall, and where they disagree
        report["recommendation"]["families"] = family_tasks.recommend(report["quality"], report["families"],
                                                                      report["missing"])
        report["recommendation"]["reasons"] += report["recommendation"]["families"]["reasons"]
    report["claims"] = compute.claims_board(backbone)
    report["complete"] = not report["missing"]
    tell("recommendation", "done" if report["complete"] else "done; missing: " + ", ".join(report["missing"]))
    return report
