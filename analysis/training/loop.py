"""One training loop for every trained method, readable top to bottom like nanoGPT's train.py.

    cfg = TrainConfig(steps=300, batch_size=32, lr=1e-3, eval_every=50, out_dir="runs/x")
    result = train(cfg, parameters=dict(mlp.named_parameters()), loss_fn=loss_fn, batches=batches,
                   evaluate=lambda: {"score": spearman_on_dev()}, save=lambda folder: save_weights(folder))

What it guarantees:
- Deterministic on CPU for a fixed seed: the loop seeds torch; `batches` must be seeded by the caller.
- AdamW, gradient accumulation (`grad_accum` micro-batches per optimiser step), linear warmup then cosine decay
  to `min_lr_ratio` * lr, gradient clipping.
- Evaluation at step 0 and every `eval_every` steps and at the end (`evaluate()["score"]`, higher is better);
  the best evaluation's weights are written by `save(out_dir / "best")`; early stopping after `patience`
  evaluations without improvement (0 = never stop early).
- `out_dir/log.json`: the config, every step's loss (and whatever `loss_fn` reports), every evaluation.
- Resumable: at each evaluation `out_dir/checkpoint/` holds the trainable tensors, the AdamW moments and the
  torch RNG in safetensors plus the step, best score and log in JSON (no pickle). With `resume=True` the loop
  restores them and fast-forwards `batches` by the micro-batches already consumed (so keep batches cheap to
  produce: texts or indices, not model outputs); the resumed run then continues exactly as the uninterrupted one.
- `progress(step, total, info)` after every step; raising `StopTraining` from it stops cleanly (a checkpoint is
  written first), which is how the app's Stop button works. `max_minutes` stops the same way on wall time.
- A non-finite loss or validation score stops the run with one sentence (`NonFiniteError`) before the optimiser
  takes the step, so the best weights saved so far are never replaced by broken ones.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from analysis.core.errors import UserError

LOG, CHECKPOINT, BEST = "log.json", "checkpoint", "best"


class StopTraining(Exception):
    """Raise from the progress callback to stop after the current step (a checkpoint is written)."""


class NonFiniteError(UserError):
    """The loss or a validation score became NaN or infinite; the run stopped, its best checkpoint is kept."""


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 300
    batch_size: int = 32  # examples per micro-batch; the caller's `batches` honours it, the loop only logs it
    grad_accum: int = 1  # micro-batches per optimiser step: effective batch = batch_size * grad_accum
    lr: float = 1e-3
    weight_decay: float = 0.01  # AdamW's decoupled decay; small because the trained parts are small
    warmup_steps: int = 20  # linear warmup: AdamW's first moments are noisy, big early steps wreck a fresh MLP
    eval_every: int = 50
    patience: int = 0  # evaluations without improvement before stopping; 0 = run all steps
    seed: int = 0
    max_grad_norm: float = 1.0
    out_dir: str = "runs/train"
    resume: bool = False
    min_lr_ratio: float = 0.1  # cosine decay ends at this fraction of lr (not 0: the last steps still learn)
    eval_at_start: bool = True  # the step-0 score is the untrained baseline every curve should start from
    select_start: bool = True  # the step-0 weights may be the best; False: only trained steps are (step 0 is logged)
    max_minutes: float = math.inf  # stop cleanly (checkpoint written) once training has run this long
    # "bfloat16": the loss's forward (and so its backward) under torch.autocast; the trainable tensors, their
    # gradients and AdamW's moments stay float32, and validation runs in float32, so selection is unchanged
    precision: str = "float32"


@dataclass
class TrainResult:
    best_score: float
    best_step: int
    steps_done: int
    steps_per_second: float
    wall_seconds: float
    stopped: str  # "completed", "early_stopping", "time_limit" or "stopped"
    out_dir: str
    curves: dict = field(default_factory=dict)  # {"train": [{"step", "loss", ...}], "eval": [{"step", "score", ...}]}


def lr_at(cfg: TrainConfig, step: int) -> float:
    """Learning rate for optimiser step `step` (0-based): linear warmup, then cosine to min_lr_ratio * lr."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(1, cfg.steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


@dataclass
class RunState:
    """Everything a checkpoint holds besides tensors: where the run is, its best evaluation, its curves."""

    step: int = 0
    best_score: float = -math.inf
    best_step: int = -1
    bad_evals: int = 0  # evaluations since the last improvement (early stopping)
    wall: float = 0.0  # seconds of training over every segment of a resumed run
    train: list = field(default_factory=list)
    eval: list = field(default_factory=list)


class TrainingRun:
    """One run's moving parts: the trainable tensors, the optimiser, the state and where they are written. Every
    way a run ends goes through `finish`, so a stopped, timed-out or finished run leaves the same files."""

    def __init__(self, config: TrainConfig, named: dict, evaluate: Callable, save: Callable, log_extra: dict | None):
        self.config, self.named, self.evaluate_fn, self.save, self.log_extra = config, named, evaluate, save, log_extra
        self.out = Path(config.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(config.seed)
        self.opt = torch.optim.AdamW(list(named.values()), lr=config.lr, weight_decay=config.weight_decay)
        self.state = RunState()
        device = next(iter(named.values())).device.type
        self.autocast = lambda: torch.autocast(device, dtype=torch.bfloat16, enabled=config.precision == "bfloat16")

    def resume(self, batches: Iterator) -> None:
        """Restore the checkpoint, and skip the micro-batches it already consumed (the same data order as unbroken)."""
        if self.config.resume and (self.out / CHECKPOINT / "state.json").exists():
            self.state = _load_checkpoint(self.out / CHECKPOINT, self.named, self.opt)
            for _ in itertools.islice(batches, self.state.step * self.config.grad_accum):
                pass

    def write_log(self) -> None:
        s = self.state
        _atomic_json(self.out / LOG, {"config": dataclasses.asdict(self.config), "extra": self.log_extra or {},
                                      "best_score": s.best_score, "best_step": s.best_step,
                                      "train": s.train, "eval": s.eval})

    def checkpoint(self) -> None:
        _save_checkpoint(self.out / CHECKPOINT, self.named, self.opt, self.state)
        self.write_log()

    def evaluate(self, step: int) -> bool:
        """Evaluate, save the best, log; True when early stopping says stop."""
        with torch.no_grad():
            scores = self.evaluate_fn()
        score = float(scores["score"])
        if not math.isfinite(score):
            raise NonFiniteError(f"training stopped at step {step}: the validation score is {score} (a learning rate "
                                 f"or temperature out of range?); the best weights so far are in {self.out / BEST}.")
        s = self.state
        s.eval.append({"step": step, **{k: float(v) for k, v in scores.items()}})
        if step == 0 and not self.config.select_start:  # the curve's baseline: kept only until a trained step is scored
            s.best_step, s.best_score = 0, -math.inf
            self.save(self.out / BEST)
            return False
        if score > s.best_score:
            s.best_score, s.best_step, s.bad_evals = score, step, 0
            self.save(self.out / BEST)
        else:
            s.bad_evals += 1
        return self.config.patience > 0 and s.bad_evals >= self.config.patience

    def step(self, loss_fn: Callable, batches: Iterator) -> dict:
        """One optimiser step over `grad_accum` micro-batches; returns what the progress callback is told."""
        cfg, s = self.config, self.state
        lr = lr_at(cfg, s.step)
        for group in self.opt.param_groups:
            group["lr"] = lr
        total, infos = 0.0, {}
        for _ in range(cfg.grad_accum):
            with self.autocast():
                loss, info = loss_fn(next(batches))
            if not torch.isfinite(loss.detach()):
                self.write_log()
                raise NonFiniteError(f"training stopped at step {s.step + 1}: the loss is {float(loss)} (a learning "
                                     f"rate or temperature out of range?); the best weights so far are in "
                                     f"{self.out / BEST}.")
            (loss / cfg.grad_accum).backward()
            total += float(loss.detach()) / cfg.grad_accum
            for k, v in info.items():
                infos[k] = infos.get(k, 0.0) + float(v) / cfg.grad_accum
        grad_norm = float(torch.nn.utils.clip_grad_norm_(list(self.named.values()), cfg.max_grad_norm))
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        s.step += 1
        s.train.append({"step": s.step, "loss": total, "lr": lr, "grad_norm": grad_norm, **infos})
        return {"loss": total, "lr": lr}

    def finish(self, stopped: str) -> None:
        """The one way out: a run cut short by the clock is scored at its last step, a run whose only selectable
        result is the untrained start is scored at its last step, then checkpoint and log are written."""
        s = self.state
        if stopped == "time_limit" and s.eval[-1]["step"] != s.step:
            self.evaluate(s.step)
        if s.best_step == 0 and not self.config.select_start and s.step > 0:
            self.evaluate(s.step)  # stopped before any trained step was scored: the last one is the result
        self.checkpoint()


def train(
    config: TrainConfig,
    *,
    parameters,
    loss_fn: Callable[[object], tuple[torch.Tensor, dict]],
    batches: Iterator,
    evaluate: Callable[[], dict],
    save: Callable[[Path], None],
    progress: Callable[[int, int, dict], None] | None = None,
    log_extra: dict | None = None,
) -> TrainResult:
    """Train `parameters` to minimise `loss_fn` over `batches`; see the module docstring for the guarantees.

    Args:
        config: the run's settings.
        parameters: the trainable tensors, a dict name -> tensor (e.g. `dict(m.named_parameters())`, only those
            with requires_grad) or a list (named by position). Names key the checkpoint.
        loss_fn: batch -> (scalar loss, {name: float} to log).
        batches: an infinite, seeded iterator of micro-batches.
        evaluate: () -> dict with "score" (validation split; higher is better) and any other floats to log.
        save: folder -> None, writes the current weights (called for the best evaluation).
        progress: progress(step, total, info) after each optimiser step.
        log_extra: JSON-able facts stored in log.json (data digest, model, ...).
    """
    _check(config)
    named = dict(parameters) if isinstance(parameters, dict) else {str(i): p for i, p in enumerate(parameters)}
    named = {k: p for k, p in named.items() if p.requires_grad}
    if not named:
        raise ValueError("train() got no trainable parameters (none has requires_grad)")
    run = TrainingRun(config, named, evaluate, save, log_extra)
    run.resume(batches)
    s = run.state
    start, wall_before, first_step = time.perf_counter(), s.wall, s.step
    if first_step == 0 and config.eval_at_start and not s.eval:
        run.evaluate(0)
        run.write_log()
    for p in named.values():
        p.grad = None
    stopped = "completed"
    while s.step < config.steps:
        info = run.step(loss_fn, batches)
        s.wall = wall_before + time.perf_counter() - start
        if s.step % config.eval_every == 0 or s.step == config.steps:
            halt = run.evaluate(s.step)
            s.wall = wall_before + time.perf_counter() - start
            run.checkpoint()
            if halt:
                stopped = "early_stopping"
                break
        if (time.perf_counter() - start) / 60 > config.max_minutes and s.step < config.steps:
            stopped = "time_limit"
            break
        if progress is not None:
            shown = {**info, "best_score": s.best_score, **({"score": s.eval[-1]["score"]} if s.eval else {})}
            try:
                progress(s.step, config.steps, shown)
            except StopTraining:
                stopped = "stopped"
                break
    run.finish(stopped)
    seconds = s.wall - wall_before
    return TrainResult(
        best_score=s.best_score, best_step=s.best_step, steps_done=s.step,
        steps_per_second=(s.step - first_step) / seconds if seconds > 0 else 0.0, wall_seconds=s.wall,
        stopped=stopped, out_dir=str(run.out), curves={"train": s.train, "eval": s.eval},
    )


def _check(cfg: TrainConfig) -> None:
    for name in ("steps", "batch_size", "grad_accum", "eval_every"):
        if getattr(cfg, name) < 1:
            raise UserError(f"{name} must be at least 1, got {getattr(cfg, name)}.")
    if not (math.isfinite(cfg.lr) and cfg.lr > 0):
        raise UserError(f"the learning rate must be a positive finite number, got {cfg.lr}.")


# ---- checkpoints: safetensors for tensors, JSON for the rest; written to a temp folder and renamed -------
def _save_checkpoint(folder: Path, named: dict, opt: torch.optim.Optimizer, state: RunState) -> None:
    tensors = {f"param.{k}": p.detach().contiguous() for k, p in named.items()}
    steps = {}
    for k, p in named.items():
        s = opt.state.get(p, {})
        if "exp_avg" in s:
            tensors[f"exp_avg.{k}"] = s["exp_avg"].contiguous()
            tensors[f"exp_avg_sq.{k}"] = s["exp_avg_sq"].contiguous()
            steps[k] = float(s["step"])
    tensors["rng.torch"] = torch.get_rng_state()
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file(tensors, str(tmp / "state.safetensors"))
    (tmp / "state.json").write_text(json.dumps({**dataclasses.asdict(state), "adam_steps": steps}))
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    tmp.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def _load_checkpoint(folder: Path, named: dict, opt: torch.optim.Optimizer) -> RunState:
    try:
        tensors = load_file(str(folder / "state.safetensors"))
        state = json.loads((folder / "state.json").read_text())
    except (OSError, ValueError) as err:
        raise UserError(f"cannot resume: the checkpoint in {folder} is unreadable ({err}).") from err
    if set(named) != {k[len("param."):] for k in tensors if k.startswith("param.")}:
        raise UserError(f"cannot resume: the checkpoint in {folder} holds other trainable tensors than this run.")
    with torch.no_grad():
        for k, p in named.items():
            p.copy_(tensors[f"param.{k}"])
            if k in state["adam_steps"]:
                opt.state[p] = {"step": torch.tensor(state["adam_steps"][k]),
                                "exp_avg": tensors[f"exp_avg.{k}"].clone(),
                                "exp_avg_sq": tensors[f"exp_avg_sq.{k}"].clone()}
    torch.set_rng_state(tensors["rng.torch"])
    state.pop("adam_steps")
    if state.get("best_score") is None:  # written as null before any evaluation (JSON has no -inf)
        state["best_score"] = -math.inf
    return RunState(**state)


def _atomic_json(path: Path, obj) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(_finite(obj), indent=1))
    os.replace(tmp, path)


def _finite(obj):
    """JSON has no NaN/inf: -inf (no evaluation yet) and NaN become null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj
