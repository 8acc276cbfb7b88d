"""`python -m analysis train all`: every trained system and control the claims board needs, for one model, in one
resumable queue under one time budget.

The parts (`PARTS`, in the order they run) are the shipped SmolLM2 recipes: Causal2Vec, its two controls (the
paper's Tables 2 and 4), its EOS readout (Table 12) and its attention and position variants (Tables 15 and 14), GIRCSE
with its Causal-EOS baseline, the ablation ladder (Tables 2 and 3), its Bidirectional-Avg baseline (Table 2) and
GIRCSE and Causal-EOS on a quarter of the pairs (Fig. 3), then the context-compression system (Experiment A), five
people with names (B2) and without (B) from it at the same budget, and Experiment C. Cheap parts that serve many
claims come first, so a small budget still answers the most.

Before any training the queue times each kind of step on this machine (`probe`: two optimiser steps and one
validation of each system variant, on the model asked for, stored beside the runs so a resumed queue does not time
again), then plans, leaving out the parts this repository already shipped for the model (`adopt_shipped`: the
SmolLM2 recipes were trained one command at a time, whole): a part's estimate is its recipe's steps times the
measured step time plus its validations. When the whole plan exceeds the budget every part keeps the same share of
its recipe (never below `MIN_SHARE`, with its cosine schedule fitted to the shortened run); parts that do not fit
even so are listed and skipped. Each part then trains into its own run folder
(`<cache>/runs/<system>/<model>/all-<part>`), resumes from its checkpoint when the queue is started again, stops
cleanly at its own time limit, and ships into `analysis/artefacts/<system>/<model>/` where the board reads it
(`--no-ship` keeps everything in the cache). The queue's state (`queue.json` under
`<cache>/runs/all/<model>/`) records each part's plan, wall time and result.

    plan = make_plan("gemma3-270m", budget_hours=8, step_seconds=probe(backbone))   # what will run, how long
    summary = run_queue("gemma3-270m", budget_hours=8)                              # trains, ships, records
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from analysis.core.errors import UserError
from analysis.core.paths import cache_root
from analysis.models.backbone import load_backbone
from analysis.training import ledger, runs, systems
from analysis.training.loop import TrainConfig, TrainingRun
from analysis.weights.artefacts import MANIFEST, model_folder_name, read_manifest, shipped_dir

QUEUE_HELP = ("Train, in order, every trained system and control the claims board needs for one model (Causal2Vec "
              "with its two controls and its readout, attention and position variants, GIRCSE with its Causal-EOS and "
              "Bidirectional-Avg baselines, ablation ladder and quarter-data runs, the compression system with "
              "Experiments B2, B and C), each resumable and stopped cleanly at its share of --budget-hours. "
              "Before training it times each kind of step on this machine and prints the plan: each part's steps, "
              "its estimated minutes, and what will not fit. Parts this repository already shipped for the model count "
              "as done (--retrain trains them again). Run it again to resume where it stopped.")
MIN_SHARE = 0.25  # a part shortened below a quarter of its recipe would not say what the recipe says: skipped
MIN_BUDGET_MINUTES = 10.0  # below this not even one validation of the cheapest part fits on a CPU: refused at once
SAFETY = 1.3  # a part's time limit is its estimate times this: the schedule ends first, the clock is a backstop
STATE = "queue.json"


@dataclass(frozen=True)
class Part:
    """One trained artefact of the queue: its system, the recipe's settings, the claims it serves."""

    label: str
    system: str
    settings: dict  # Config fields the recipe sets (the rest are the system's defaults)
    claims: tuple  # board claims that read it
    variant: str  # which probe timing its steps cost (parts with the same forward share one)
    warm_from: str = ""  # a part whose result this one starts from (compression's cascade)

    def config(self, model: str, **over):
        cls = systems.system(self.system).Config
        return cls(**{"model": model, **self.settings, **over})


_B = {"steps": 120, "eval_every": 20, "val": 40, "curriculum": 0.0, "people": 5}  # Experiment B's shipped recipe
_GIRCSE = {"steps": 320, "eval_every": 40, "hard_negatives": 8}  # the shipped adapter's recipe
# Fig. 3's quarter of the data (350 of the 1,406 positive pairs) for as many passes over it as the shipped runs make
# over all of them (a quarter of the steps): the paper's scales differ in data only ("nearly identical fine-tuning
# hyperparameters", App. C; its reference code trains one epoch at every size)
_QUARTER = {**_GIRCSE, "train_pairs": 350, "steps": 80}

PARTS = (
    Part("causal2vec", "causal2vec", {}, ("c2v-readouts", "c2v-contextual-token", "c2v-plain-concat", "c2v-encoder",
                                          "c2v-time", "c2v-length", "c2v-causal-vs-bidir", "c2v-ctx-position"),
         "causal2vec"),
    Part("causal2vec-no-contextual", "causal2vec", {"control": "no-contextual"}, ("c2v-contextual-token",),
         "causal2vec"),
    Part("causal2vec-concat", "causal2vec", {"control": "concat"}, ("c2v-plain-concat",), "causal2vec"),
    Part("causal2vec-eos-readout", "causal2vec", {"train_readout": "eos"}, ("c2v-readouts", "c2v-contextual-token"),
         "causal2vec"),
    Part("causal2vec-bidirectional", "causal2vec", {"attention": "bidirectional"}, ("c2v-causal-vs-bidir",),
         "causal2vec"),  # the same forward with another mask: the system's step time
    Part("causal2vec-contextual-before", "causal2vec", {"contextual_position": "before"}, ("c2v-ctx-position",),
         "causal2vec"),
    Part("gircse", "gircse", _GIRCSE, ("gircse-baseline", "gircse-scaling", "gircse-contrastive", "gircse-baselines",
                                       "gircse-ablation", "gircse-bidir-avg", "gircse-data-scale"), "gircse"),
    Part("gircse-causal-eos", "gircse", {**_GIRCSE, "objective": "causal-eos"}, ("gircse-baseline",
                                                                                 "gircse-contrastive",
                                                                                 "gircse-data-scale"), "causal-eos"),
    Part("gircse-final", "gircse", {**_GIRCSE, "objective": "final"}, ("gircse-ablation",), "gircse"),
    Part("gircse-stepwise", "gircse", {**_GIRCSE, "objective": "stepwise"}, ("gircse-ablation",), "gircse"),
    Part("gircse-bidirectional-avg", "gircse", {**_GIRCSE, "objective": "bidirectional-avg"}, ("gircse-bidir-avg",),
         "causal-eos"),  # one forward a text, no generation: Causal-EOS's step time
    Part("gircse-pairs350", "gircse", _QUARTER, ("gircse-data-scale",), "gircse"),
    Part("gircse-causal-eos-pairs350", "gircse", {**_QUARTER, "objective": "causal-eos"}, ("gircse-data-scale",),
         "causal-eos"),
    Part("compression", "compression", {}, ("comp-ratio", "comp-paragraph"), "compression"),
    Part("compression-names", "compression", {**_B, "names": True}, ("comp-names",), "compression-people",
         warm_from="compression"),
    Part("compression-people", "compression", _B, ("comp-names",), "compression-people", warm_from="compression"),
    Part("compression-reconstruct", "compression", {"reconstruct": 0.5}, ("comp-reconstruction",), "compression"),
)


@dataclass
class Planned:
    """A part as planned on this machine: its steps, its estimate, and whether it fits."""

    part: str
    variant: str
    steps: int
    recipe_steps: int
    minutes: float
    fits: bool
    why: str = ""
    done: str = ""  # how it was done before this plan ("shipped before this queue, 2026-11-24"): not trained again


@dataclass
class QueueState:
    """What `queue.json` holds: the plan and each part's outcome ("done", "partial", "failed"), wall time, result."""

    model: str
    budget_hours: float
    precision: str
    step_seconds: dict = field(default_factory=dict)  # variant -> {"step": s, "eval": s}
    plan: list = field(default_factory=list)  # Planned as dicts
    parts: dict = field(default_factory=dict)  # label -> {"status", "wall_seconds", "best_step", ...}

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{STATE}.{os.getpid()}"
        tmp.write_text(json.dumps(dataclasses.asdict(self), indent=1))
        os.replace(tmp, folder / STATE)

    @classmethod
    def load(cls, folder: Path) -> QueueState | None:
        try:
            return cls(**json.loads((folder / STATE).read_text()))
        except (OSError, ValueError, TypeError):
            return None


def queue_folder(facts) -> Path:
    return cache_root() / "runs" / "all" / model_folder_name(facts)


def run_folder(part: Part, facts) -> Path:
    return runs.runs_root(part.system) / model_folder_name(facts) / f"all-{part.label}"


def check_budget(budget_hours: float) -> None:
    """One sentence before any work when the budget cannot hold a single part."""
    if not (math.isfinite(budget_hours) and budget_hours * 60 >= MIN_BUDGET_MINUTES):
        raise UserError(f"--budget-hours {budget_hours:g} is too small for anything: the cheapest part needs at least "
                        f"{MIN_BUDGET_MINUTES:g} minutes ({MIN_BUDGET_MINUTES / 60:.2f} hours) on this machine.")


def make_plan(parts, step_seconds: dict, budget_minutes: float) -> list[Planned]:
    """Each part's steps and minutes within `budget_minutes`: whole recipes when they fit, else one common share of
    every recipe (at least MIN_SHARE); parts past the budget even so are marked as not fitting, last ones first."""
    def minutes(part, steps):
        cost = step_seconds[part.variant]
        evals = steps // part.config("default").eval_every + 2  # step 0, every eval_every, the end
        return (steps * cost["step"] + evals * cost["eval"] + cost.get("setup", 0.0)) / 60

    recipe = {p.label: p.config("default").steps for p in parts}
    full = sum(minutes(p, recipe[p.label]) for p in parts)
    share = 1.0 if full <= budget_minutes else max(MIN_SHARE, budget_minutes / full)
    planned, used = [], 0.0
    for p in parts:
        steps = max(1, math.floor(recipe[p.label] * share))
        need = minutes(p, steps)
        fits = used + need <= budget_minutes
        used += need if fits else 0.0
        why = "" if fits else (f"needs {need:.0f} min at {share:.0%} of its recipe; {budget_minutes - used:.0f} min "
                               "of the budget are left")
        planned.append(Planned(p.label, p.variant, steps, recipe[p.label], round(need, 1), fits, why))
    return planned


def describe(plan: list[Planned], step_seconds: dict) -> str:
    """The plan as a user reads it before anything trains."""
    lines = []
    for i, p in enumerate(plan, 1):
        if p.done:
            lines.append(f"{i:2d}. {p.part:26s} {p.steps:4d}/{p.recipe_steps} steps  done: {p.done}")
            continue
        cost = step_seconds[p.variant]
        head = f"{i:2d}. {p.part:26s} {p.steps:4d}/{p.recipe_steps} steps  ~{p.minutes:5.1f} min"
        lines.append(f"{head}  ({cost['step']:.1f} s a step, {cost['eval']:.0f} s a validation)" if p.fits
                     else f"{head}  will not fit: {p.why}")
    total = sum(p.minutes for p in plan if p.fits and not p.done)
    lines.append(f"    in all about {total / 60:.1f} h; {sum(not p.fits for p in plan)} part(s) will not fit")
    return "\n".join(lines)


def probe(backbone, parts=PARTS, *, precision: str = "float32", progress=None) -> dict:
    """Seconds a step and a validation of each part variant cost on this machine, on `backbone`: the job set up
    (timed), one untimed step (first-call overheads), two timed optimiser steps, one timed validation."""
    timings = {}
    for part in parts:
        if part.variant in timings:
            continue
        if progress is not None:
            progress(f"timing {part.variant} steps on {model_folder_name(backbone.facts)}")
        began = time.perf_counter()
        job = systems.system(part.system).setup(part.config("default"), backbone)  # setups copy the decoder
        setup = time.perf_counter() - began
        named = {k: p for k, p in job.parameters.items() if p.requires_grad}
        loop = TrainingRun(TrainConfig(precision=precision, out_dir=str(queue_folder(backbone.facts) / ".probe")),
                    named, job.evaluate, lambda folder: None, None)
        loop.step(job.loss_fn, job.batches)
        began = time.perf_counter()
        for _ in range(2):
            loop.step(job.loss_fn, job.batches)
        step = (time.perf_counter() - began) / 2
        began = time.perf_counter()
        with torch.no_grad():
            job.evaluate()
        timings[part.variant] = {"setup": round(setup, 1), "step": round(step, 2),
                                 "eval": round(time.perf_counter() - began, 1)}
        del job, loop
    return timings


def trained_here(part: Part, model) -> tuple[dict, bool] | None:
    """(what this repository recorded of `part` for `model`, whether its weights are in this copy), or None when it
    was never trained here: the shipped manifest, else the ledger's entry (weights kept out of git). `model`: a
    built-in name or a model's facts."""
    place, model_dir = systems.ship_place(part.system, part.settings), shipped_dir(part.system, model)
    try:
        return read_manifest(model_dir / place), True
    except UserError:
        noted = ledger.entry(model_dir, place)
        return None if noted is None else (noted, False)


def took_here(part: Part, model) -> str:
    """How long `part` took when this repository trained it for `model` (`trained_here`): "21 min, 180 steps,
    2026-11-24", or "not trained here yet". What `train all --help` and the README say."""
    found = trained_here(part, model)
    if found is None:
        return "not trained here yet"
    m, present = found
    minutes = f"{m['wall_seconds'] / 60:.0f} min" if m.get("wall_seconds") else "time not recorded"
    absent = "" if present else " (weights not in this copy: over the size git ships; this command trains them again)"
    return f"{minutes}, {m.get('steps_done', '?')} steps, {str(m.get('created', ''))[:10] or 'undated'}{absent}"


def inventory(model) -> list[dict]:
    """One row per part of the queue, in training order: whether this copy holds its weights for `model`, and how
    long it took here (the Training page's table of every trained system)."""
    rows = []
    for part in PARTS:
        found = trained_here(part, model)
        m, present = found if found is not None else ({}, False)
        weights = "in this copy" if present else "trained here, not in this copy" if found else "not trained"
        rows.append({"part": part.label, "system": part.system, "weights": weights,
                     "minutes": round(m["wall_seconds"] / 60, 1) if m.get("wall_seconds") else None,
                     "steps": m.get("steps_done"), "trained": str(m.get("created", ""))[:10] or None,
                     "claims": ", ".join(part.claims)})
    return rows


def shipped_folder(part: Part, facts) -> Path:
    """Where `part` ships for the model of `facts` (it holds a manifest when this repository trained it)."""
    return shipped_dir(part.system, facts) / systems.ship_place(part.system, part.settings)


def adopt_shipped(state: QueueState, parts, facts) -> list[str]:
    """Count the parts this repository already trained and shipped for this model (their manifest says the run
    ended) as done, so the queue spends its budget on what is missing instead of training them again at a share of
    their recipe over the whole-recipe weights. Returns the labels adopted now."""
    adopted = []
    for part in parts:
        if part.label in state.parts:
            continue
        folder = shipped_folder(part, facts)
        try:
            manifest = read_manifest(folder)
        except UserError:
            continue
        if manifest.get("partial") is not False:
            continue
        state.parts[part.label] = {"status": "done", "steps": manifest.get("steps_done"), "wall_seconds": 0.0,
                                   "shipped": systems.ship_place(part.system, part.settings), "folder": str(folder),
                                   "from": "shipped before this queue, "
                                           f"{str(manifest.get('created', ''))[:10] or 'undated'}"}
        adopted.append(part.label)
    return adopted


def _ship(part: Part, folder: Path) -> str:
    return systems.install(part.system, folder)["place"]


def _plan(state: QueueState, parts, budget_hours: float) -> list[Planned]:
    """The stored plan when the queue resumes with the same budget and the same parts, else a new plan for the parts
    not yet done in what the budget leaves after them (a queue started before parts were added plans them too)."""
    stored = [Planned(**p) for p in state.plan]
    if stored and state.budget_hours == budget_hours and [q.part for q in stored] == [p.label for p in parts]:
        return stored
    spent = sum(r.get("wall_seconds", 0.0) for r in state.parts.values()) / 60
    todo = [p for p in parts if state.parts.get(p.label, {}).get("status") != "done"]
    fresh = {p.part: p for p in make_plan(todo, state.step_seconds, budget_hours * 60 - spent)}
    before = {q.part: q for q in stored}
    return [fresh.get(p.label) or before.get(p.label) or _done(p, state.parts[p.label]) for p in parts]


def _done(part: Part, record: dict) -> Planned:
    """A part done before this plan (adopted from its shipped weights), as the plan lists it."""
    recipe = part.config("default").steps
    return Planned(part.label, part.variant, record.get("steps") or recipe, recipe, 0.0, True,
                   done=record.get("from", "done"))


def run_queue(model: str, budget_hours: float, *, precision: str = "float32", ship: bool = True, parts=PARTS,
              backbone_for=None, say=print, progress_for=None, dry_run: bool = False, retrain: bool = False) -> dict:
    """Plan, then train every part that fits, in order, resuming from `queue.json` and each part's checkpoint.

    Args:
        backbone_for: () -> a freshly loaded backbone (default: `load_backbone(model)`); each part gets its own.
        say: where the plan and each part's start and end are told (the command: stderr).
        progress_for: part label -> the training loop's progress callback (the command: a progress bar).
        dry_run: plan and tell, train nothing.
        retrain: train the parts already shipped for this model too (else they count as done: `adopt_shipped`).
    Returns the queue's state as a dict (what `queue.json` holds)."""
    check_budget(budget_hours)
    if backbone_for is None:
        backbone_for = lambda: load_backbone(model)  # noqa: E731
    backbone = backbone_for()
    folder = queue_folder(backbone.facts)
    runs.prepare(folder)  # writable, before the probe spends minutes
    state = QueueState.load(folder)
    if state is None or state.precision != precision or state.model != model:
        state = QueueState(model=model, budget_hours=budget_hours, precision=precision)
    if retrain:  # what this queue trained itself stays done, so a killed --retrain resumes too
        dropped = [label for label, r in state.parts.items() if r.get("from")]
        state.parts = {label: r for label, r in state.parts.items() if label not in dropped}
        state.plan = [] if dropped else state.plan
    adopted = [] if retrain else adopt_shipped(state, parts, backbone.facts)
    if adopted:
        state.plan = []  # planned before these were adopted: the budget goes to what is left
        say(f"already trained and shipped for this model, not trained again (--retrain trains them): "
            f"{', '.join(adopted)}")
    todo = [p for p in parts if state.parts.get(p.label, {}).get("status") != "done"]
    untimed = [p for p in todo if p.variant not in state.step_seconds]  # all at first; a new part's kind later
    if untimed:
        state.step_seconds.update(probe(backbone, untimed, precision=precision, progress=say))
        state.save(folder)
    plan = _plan(state, parts, budget_hours)
    state.plan, state.budget_hours = [dataclasses.asdict(p) for p in plan], budget_hours
    state.save(folder)
    say(describe(plan, state.step_seconds))
    left = [p for p in plan if not p.done]
    if not left:
        say("every part is trained for this model already; --retrain trains them again.")
        return dataclasses.asdict(state)
    if not any(p.fits for p in left):
        raise UserError(f"--budget-hours {budget_hours:g} holds none of the parts on this machine (the cheapest needs "
                        f"{min(p.minutes for p in left):.0f} min at {MIN_SHARE:.0%} of its recipe).")
    if dry_run:
        return dataclasses.asdict(state)
    for part, planned in zip(parts, plan):
        _run_part(part, planned, state, folder, backbone_for, parts, ship=ship, say=say, progress_for=progress_for)
    return dataclasses.asdict(state)


def slowdown(state: QueueState) -> float:
    """How much longer than planned the parts this queue trained took (wall time over estimate; at least 1). Later
    parts' time limits stretch by it, so a machine slower than its probe (longer batches than the probe's, another
    job) does not stop a part at the clock before its schedule ends and ship it short."""
    planned = {p["part"]: p["minutes"] for p in state.plan}
    ratios = [r["wall_seconds"] / 60 / planned[label] for label, r in state.parts.items()
              if r.get("status") == "done" and not r.get("from") and planned.get(label)]
    return max([1.0, *ratios])


def _run_part(part: Part, planned: Planned, state: QueueState, folder: Path, backbone_for, parts, *, ship, say,
              progress_for) -> None:
    """Train one part (or resume it), ship it, and record the outcome in the queue's state."""
    record = state.parts.get(part.label, {})
    if record.get("status") == "done" or not planned.fits:
        return
    backbone = backbone_for()
    out = run_folder(part, backbone.facts)
    limit = max(1.0, planned.minutes * SAFETY * slowdown(state))
    over = {"steps": planned.steps, "max_minutes": round(limit, 2), "out": str(out),
            "resume": (out / runs.RUN / "checkpoint" / "state.json").is_file(), "precision": state.precision}
    if part.warm_from:
        source = state.parts.get(part.warm_from, {})
        warm = Path(source.get("folder") or run_folder(next(p for p in parts if p.label == part.warm_from),
                                                        backbone.facts))
        if source.get("status") != "done" or not (warm / MANIFEST).is_file():
            state.parts[part.label] = {"status": "skipped", "why": f"needs {part.warm_from} trained first"}
            state.save(folder)
            return
        over["warm_from"] = str(warm)
    say(f"training {part.label} ({planned.steps} steps, about {planned.minutes:.0f} min, stopped at the latest "
        f"after {limit:.0f} min)" + (", resuming from its checkpoint" if over["resume"] else ""))
    try:
        summary = systems.run(part.system, part.config(state.model, **over), backbone=backbone,
                              progress=progress_for(part.label) if progress_for else None)
    except UserError as err:
        state.parts[part.label] = {**record, "status": "failed", "why": str(err)}
        state.save(folder)
        say(f"{part.label} failed: {err}")
        return
    place = _ship(part, out) if ship else None
    state.parts[part.label] = {"status": "done", "steps": summary["steps_done"], "best_step": summary["best_step"],
                               "best_score": summary["best_score"], "stopped": summary["stopped"],
                               "wall_seconds": summary["wall_seconds"], "results": summary["results"],
                               "shipped": place, "run": out.name}
    state.save(folder)
    say(f"{part.label}: {summary['stopped']}, best step {summary['best_step']}, "
        f"{summary['wall_seconds'] / 60:.1f} min")


def step_times(name: str, backbone, precisions=("float32", "bfloat16"), *, rounds: int = 4) -> dict:
    """{precision: [seconds of one optimiser step per round]} of system `name` on `backbone`: in each round every
    precision takes one step on the same batch, the order alternating, so a change of load hits them alike."""
    job = systems.system(name).setup(systems.system(name).Config(), backbone)
    named = {k: p for k, p in job.parameters.items() if p.requires_grad}
    loops = {p: TrainingRun(TrainConfig(precision=p, out_dir=str(queue_folder(backbone.facts) / ".probe")), named,
                            job.evaluate, lambda folder: None, None) for p in precisions}
    first = next(job.batches)
    for loop in loops.values():  # first calls pay for kernels and allocations
        loop.step(job.loss_fn, iter([first]))
    times = {p: [] for p in precisions}
    for r in range(rounds):
        batch = next(job.batches)
        for p in (precisions if r % 2 == 0 else precisions[::-1]):
            began = time.perf_counter()
            loops[p].step(job.loss_fn, iter([batch]))
            times[p].append(time.perf_counter() - began)
    return times
