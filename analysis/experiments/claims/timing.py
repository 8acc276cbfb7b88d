"""Timings for the cost claims: configurations timed in the same interleaved rounds, a ratio per round, the spread of
the rounds' ratios as the ratio's interval, and each timing with its own date and machine load.

A timing cannot be recomputed from stored vectors, so it is kept through the `Compute` door (`remember`) with its date
and load; a board run again reads it back, and then says so: "measured here" only when this run timed it, else "read
from the stored timing of <date>".

    t = timed(ctx, "kv", {"KV-Embedding": kv, "PromptEOL": peol}, texts)
    t.ratio("KV-Embedding")                # (median of the per-round ratios, (lowest, highest))
    t.ratio("KV-Embedding", "PromptEOL")   # against another configuration of the same rounds
    t.source()                             # "measured here (2026-11-28 10:02 UTC, load 1.9 before)"
"""

from __future__ import annotations

import datetime
import os
import statistics
from dataclasses import dataclass

from analysis.eval.cost import PLAIN, rounds
from analysis.experiments.claims import Unit
from analysis.experiments.claims.context import method_key, relative_cost


@dataclass(frozen=True)
class Timing:
    rounds: dict  # label -> [seconds of each round], the plain forward among them
    date: str  # ISO time the rounds ran
    load: float | None  # the machine's 1-minute load average before they ran
    measured_here: bool  # timed by this run (else read from the store)

    def seconds(self, label: str) -> float:
        return float(statistics.median(self.rounds[label]))

    def ratio(self, label: str, against: str = PLAIN) -> tuple[float, tuple[float, float]]:
        """(median, (lowest, highest)) of `label`'s time over `against`'s, round by round."""
        per_round = [a / b for a, b in zip(self.rounds[label], self.rounds[against]) if b > 0]
        return float(statistics.median(per_round)), (min(per_round), max(per_round))

    def source(self) -> str:
        when = self.date[:16].replace("T", " ") + " UTC"
        load = "" if self.load is None else f", load {self.load:.1f} before"
        n = len(next(iter(self.rounds.values())))
        if self.measured_here:
            return f"measured here ({n} interleaved rounds, {when}{load})"
        return f"read from the stored timing of {when} ({n} interleaved rounds{load})"

    def shown(self, label: str, against: str = PLAIN) -> str:
        mid, (lo, hi) = self.ratio(label, against)
        return f"{mid:.2f}x [{lo:.2f}, {hi:.2f}]"


def unit(ctx, name: str, methods: dict, texts: list[str]) -> Unit:
    work = 1.0 + sum(relative_cost(m) for m in methods.values())  # the plain forward, then each method
    return Unit(("timing", name), (ctx.settings.repeats + 1) * ctx.seconds(ctx.tokens(texts), work))


def timed(ctx, name: str, methods: dict, texts: list[str]) -> Timing:
    """`methods` and the plain forward of `texts` in the same interleaved rounds (`eval.cost.rounds`), kept by the
    compute with their date and load (memoised per board: two claims read one timing)."""
    if ("timing", name) in ctx.memo:
        return ctx.memo["timing", name]
    ready = {label: ctx.ready(m) for label, m in methods.items()}
    ran = []

    def measure():  # `rounds` runs each configuration once first: weights load or merge outside the timing
        ran.append(True)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        times = rounds(ctx.backbone, {k: (lambda m=m: m.encode(ctx.backbone, texts, batch_size=16))
                                      for k, m in ready.items()}, texts, repeats=ctx.settings.repeats)
        return {"rounds": times, "date": date, "load": None if load is None else round(load, 2)}

    parts = {"timing": name, "model": ctx.backbone.identity, "repeats": ctx.settings.repeats,
             "methods": {k: list(method_key(m)) for k, m in ready.items()}, "texts": texts, "kind": "rounds"}
    modules = ("analysis.eval.cost", "analysis.core.timing", *sorted({type(m).__module__ for m in ready.values()}))
    value = ctx.compute.remember(parts, measure, modules=modules)
    ctx.memo["timing", name] = Timing({k: list(v) for k, v in value["rounds"].items()}, value["date"],
                                      value.get("load"), bool(ran))
    return ctx.memo["timing", name]
