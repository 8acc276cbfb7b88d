"""The time of one pair explanation against issue 50's budget (two sentences of about 30 tokens on SmolLM2 within
15 s on two cores at the default settings, instant when cached): the record docs/BUDGETS.md's paragraph is rendered
from, so the number is measured again by one command, never typed.

The work is `scripts/bench_explain.py`, run by `machinery.scripts` in a process of its own (its CPU seconds and the
load around it are then its own): the explanation timed in rounds (the least disturbed is the one reported), its
curves and logit lens, plain forward passes of the same prompts as the load's yardstick, and a read from the cache.

    python -m analysis measure explain_budget                       # PromptEOL on SmolLM2, two rounds (~2 min quiet)
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.params import param
from analysis.experiments import Measured
from analysis.experiments.machinery.records import Model, Sample, Table
from analysis.experiments.machinery.scripts import measured_by, run_script
from analysis.inspect.explain_settings import STEPS

ID = "explain_budget"
TITLE = "One pair explained: seconds against the 15 s budget, and read back from the cache"
HELP = ("Two sentences of 29 tokens each explained by `explain_pair` at the default path nodes, timed in rounds in a "
        "process of its own, with its deletion curves, logit lens, a read from the cache, and plain forward passes "
        "of the same prompts as the yardstick of the machine's load.")
BLOCK = "explain-budget"  # the docs/BUDGETS.md block this record fills
BUDGET_SECONDS = 15.0  # issue 50: one explanation of two ~30-token sentences on two cores at the defaults


@dataclass(frozen=True)
class Config:
    model: str = param("default", "the model (a built-in name or a folder)")
    method: str = param("prompteol", "the method explained")
    steps: int = param(STEPS, "at most this many path nodes per text (the explanation's default)", min=3, limit=64)
    rounds: int = param(2, "explanations timed (the fastest is reported)", min=1, limit=5)


def measure(config: Config, compute, progress) -> Measured:
    progress(0, 1, f"explaining one pair with {config.method} on {config.model}, {config.rounds} round(s)")
    out = run_script("bench_explain.py", ["--model", config.model, "--method", config.method,
                                          "--steps", str(config.steps), "--rounds", str(config.rounds)])
    progress(1, 1, "done")
    row = (out["method"], f"{out['tokens'][0]}, {out['tokens'][1]}", f"{out['positions'][0]}, {out['positions'][1]}",
           f"{out['nodes'][0]}, {out['nodes'][1]}", out["best_seconds"], min(out["cpu_seconds"]),
           out["curves_seconds"], out["lens_seconds"], out["cached_seconds"], out["plain_forward_seconds"],
           100 * out["gap_relative"])
    return Measured(data="two sentences of about 30 tokens written for the benchmark (scripts/bench_explain.py)",
                    sample=Sample(n=1, how="one fixed pair"), models=[Model(name=config.model, identity=out["model"])],
                    tables=[Table("explain", "One pair explained at the default settings (seconds)",
                                  ("method", "tokens", "positions", "path nodes", "explanation s", "CPU s",
                                   "curves s", "logit lens s", "cached s", "plain forwards s", "completeness gap %"),
                                  (row,), digits={"explanation s": 1, "CPU s": 1, "curves s": 1, "logit lens s": 1,
                                                  "cached s": 3, "plain forwards s": 1, "completeness gap %": 1})],
                    findings=findings(out), extra=out)


def findings(out: dict) -> list[str]:
    best = out["best_seconds"]
    verdict = "within" if best <= BUDGET_SECONDS else "past"
    rounds = ", ".join(f"{s:.1f}" for s in out["seconds"])
    return [f"One explanation took {best:.1f} s at {out['nodes'][0]} and {out['nodes'][1]} path nodes, {verdict} the "
            f"{BUDGET_SECONDS:g} s budget ({min(out['cpu_seconds']):.1f} CPU-s; the fastest of {len(out['seconds'])} "
            f"rounds: {rounds} s); read back from the cache, {out['cached_seconds']:.3f} s.",
            f"It cost {out['explanation_per_plain_forward']:.1f}x the plain forward passes of its two prompts, one "
            f"per path node ({out['plain_forward_seconds']:.1f} s), a ratio that depends less on the machine's "
            "speed and load than the seconds do.",
            f"Its parts added up to the score's change within {100 * out['gap_relative']:.1f}% (the completeness "
            "gap; past 5% the view warns and says to raise the path nodes)."]


def block(records: list) -> str:
    """docs/BUDGETS.md's explanation paragraph: the latest record at the default settings, with its load."""
    ours = Config()  # the record at the defaults, not a smoke run at other settings
    default = [r for r in records if r.config.get("steps") == ours.steps and r.config.get("method") == ours.method]
    if not default:
        return "(not measured yet: `python -m analysis measure explain_budget`)"
    rec = max(default, key=lambda r: r.date)
    return f"{measured_by(rec)}: {' '.join(rec.findings)}"
