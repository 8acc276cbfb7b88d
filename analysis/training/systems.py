"""Every trained system has one shape, and this module runs it.

A system is one module registered in `SYSTEMS` with:

    NAME, HELP                       # the `train` sub-command and its help
    Config                           # frozen dataclass, a subclass of options.RunOptions; its fields are the flags
    setup(config, backbone, **data) -> Job    # the trainable tensors, loss, data stream, validation, final numbers
    load(folder, backbone)           # the trained system back from an artefact folder
    ship_place(hyperparameters)      # optional: where a run ships, below the model's shipped folder ("" = there)
    DEVIATIONS                       # what its recipe does otherwise than its paper (`analysis.core.deviations`)

`run(name, config)` does the rest the same way for all of them: checks the settings and the output folder before
any work, trains with `analysis.training.loop`, writes the best weights so far as a partial artefact at every
improvement (among the trained steps only: the step-0 weights, the untrained or warm start, are logged as the curve's
baseline but never shipped as a result; a GIRCSE ablation once shipped its step 0, the frozen model under another
name), restores the best weights at the end, computes the final numbers, writes the artefact with a schema-1
manifest (`analysis.weights.manifest`), and copies it into the shipped artefacts only with `--ship`; `install`
ships a finished run's folder later, to the same place. Adding a fourth system is its module plus one line in
`SYSTEMS`.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from analysis.core.errors import UserError
from analysis.core.options import check
from analysis.models.backbone import load_backbone
from analysis.training import runs
from analysis.training.options import command, hyperparameters
from analysis.weights import manifest as schema
from analysis.weights.artefacts import load_artefact, save_artefact

SYSTEMS: dict[str, str] = {
    "causal2vec": "analysis.training.causal2vec",
    "gircse": "analysis.training.gircse",
    "compression": "analysis.training.compression",
}


@dataclass
class Job:
    """What a system hands the runner: everything specific to it, nothing about folders or manifests."""

    parameters: dict  # name -> trainable tensor (names key the checkpoint)
    loss_fn: Callable[[object], tuple]  # batch -> (scalar loss, {name: float})
    batches: Iterator  # infinite, seeded
    evaluate: Callable[[], dict]  # -> {"score": higher is better, on the validation split, ...}
    tensors: Callable[[], dict]  # the artefact's tensors from the current weights
    restore: Callable[[dict], None]  # put an artefact's tensors back into the trainable weights
    data: dict  # what trained and validated it (names, sizes, digests) for the manifest
    examples_per_step: int  # for the throughput in the manifest
    finish: Callable[[], dict] = lambda: {}  # final numbers on the best weights (e.g. the held-out report part)
    write_extra: Callable[[Path], None] | None = None  # files beside the weights (e.g. peft's adapter_config.json)
    extra: dict = field(default_factory=dict)  # manifest facts of this system (encoder, lora, ...)
    warmup_steps: int | None = None  # default: min(20, steps // 10 + 1)
    weight_decay: float = 0.01


def system(name: str):
    """The module registered under `name`."""
    if name not in SYSTEMS:
        raise UserError(f"No trained system '{name}'. Available: {', '.join(sorted(SYSTEMS))}.")
    return importlib.import_module(SYSTEMS[name])


def deviations(name: str) -> tuple:
    """System `name`'s declared differences from its paper's recipe (its module's `DEVIATIONS`; none for a system
    that follows no paper, such as a test's stand-in)."""
    return tuple(getattr(system(name), "DEVIATIONS", ()))


def run(name: str, config, *, backbone=None, progress=None, **data) -> dict:
    """Train system `name` with `config`; returns the summary (the CLI's JSON line). `backbone` defaults to
    `config.model`; `data` reaches the system's setup (tests pass small data and stand-in encoders)."""
    import torch  # lazy: keeps torch off the pages' and the command line's start

    # lazy: keeps torch off the pages' and the command line's start
    from analysis.training.loop import BEST, TrainConfig, train
    module = system(name)
    check(config)
    if config.threads:
        torch.set_num_threads(config.threads)
    if config.out:  # a folder the user named is checked before the model loads (the default is the cache's)
        runs.prepare(Path(config.out).expanduser())
    if backbone is None:
        backbone = load_backbone(config.model)
    folder = runs.prepare(runs.result_dir(name, backbone.facts, config.out))
    work = folder / runs.RUN
    wall0 = time.perf_counter()
    job = module.setup(config, backbone, **data)
    facts = dict(system=name, backbone=backbone, command=command(name, config), data=job.data, seed=config.seed,
                 hyperparameters=hyperparameters(config))

    def write(target: Path, result=None, partial=True, results=None, seconds=0.0) -> None:
        curves = {"train": result.curves["train"], "validation": result.curves["eval"]} if result else {}
        steps = result.steps_done if result else 0
        manifest = schema.make(**facts, curves=curves, steps_done=steps,
                               best_step=result.best_step if result else -1,
                               best_score=result.best_score if result else float("nan"),
                               stopped=result.stopped if result else "running", partial=partial,
                               wall_seconds=seconds,
                               examples_per_second=steps * job.examples_per_step / seconds if seconds else None,
                               results=results, extra=job.extra)
        save_artefact(target, job.tensors(), manifest)
        if job.write_extra is not None:
            job.write_extra(target)

    cfg = TrainConfig(steps=config.steps, batch_size=config.batch_size, grad_accum=config.grad_accum, lr=config.lr,
                      weight_decay=job.weight_decay, eval_every=config.eval_every, patience=config.patience,
                      seed=config.seed, out_dir=str(work), resume=config.resume, max_minutes=config.max_minutes,
                      select_start=False, precision=config.precision,
                      warmup_steps=job.warmup_steps if job.warmup_steps is not None else min(20, config.steps // 10 + 1))
    result = train(cfg, parameters=job.parameters, loss_fn=job.loss_fn, batches=job.batches, evaluate=job.evaluate,
                   save=lambda target: write(target), progress=progress, log_extra={"system": name, **job.data})
    best, _ = load_artefact(work / BEST, method=name)
    with torch.no_grad():
        job.restore(best)
    results = job.finish()
    write(folder, result, partial=False, results=results, seconds=result.wall_seconds)
    summary = {"out": str(folder), "steps_done": result.steps_done, "best_step": result.best_step,
               "best_score": result.best_score, "stopped": result.stopped, "results": results,
               "wall_seconds": round(result.wall_seconds, 1), "total_seconds": round(time.perf_counter() - wall0, 1),
               "examples_per_second": round(result.steps_done * job.examples_per_step / result.wall_seconds, 3)
               if result.wall_seconds else None}
    if config.ship:
        summary["shipped"] = str(runs.ship(folder, name, backbone.facts, ship_place(name, hyperparameters(config))))
    return summary


def ship_place(name: str, hyperparameters: dict) -> str:
    """Where a run of system `name` with these hyperparameters ships, below the model's shipped folder: the
    system's own `ship_place` when it has one (GIRCSE keeps its fair baseline and ablations beside the adapter),
    else that folder itself."""
    place = getattr(system(name), "ship_place", None)
    return place(hyperparameters) if place is not None else ""


def install(name: str, result, *, move_current_to: str = "") -> dict:
    """Ship the finished run in folder `result` now, where `--ship` would have put it at the run's end (its manifest
    says which model and hyperparameters); `move_current_to` first moves the artefact it replaces to that folder
    below the model's shipped folder (`runs.ship`). Refuses another system's run, a partial one, or weights that
    do not match their manifest, before anything is written."""
    result = Path(result).expanduser()
    if not result.is_dir():
        raise UserError(f"{result} is not a folder: give the --out folder of a finished run.")
    _, manifest = load_artefact(result, method=name)  # checks the system and the weights' bytes
    if manifest.get("partial") is not False:
        raise UserError(f"{result} holds the best weights of an unfinished run (its manifest says partial); ship a "
                        "run that ended.")
    if not manifest.get("model"):
        raise UserError(f"{result}/manifest.json names no model, so there is no knowing where it ships.")
    place = ship_place(name, manifest.get("hyperparameters") or {})
    dest = runs.ship(result, name, manifest["model"], place, move_current_to)
    return {"shipped": str(dest), "place": place or ".", "moved_current_to": move_current_to or None,
            "best_step": manifest.get("best_step"), "best_score": manifest.get("best_score")}
