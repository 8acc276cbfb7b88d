"""The claims board: every claim judged on one model within a time budget, as one JSON-able dict.

    plan = prepare(backbone, compute, Settings())       # a short timed probe, then every claim's estimate
    plan.as_dict()["estimate_seconds"]                 # shown before any work
    board = run(plan, budget_seconds=1800, progress=lambda done, total, message: ...)

A claim that cannot run on this model (no weights trained for it, data missing, a control not built) is refused
when the plan is made, with what it needs. The others run cheapest first, each started only when its estimate
(the units of work it still needs, none for what the `Compute` door already stores, scaled by the measured drift of the
claims so far: `report.clock.Budget`) fits the time left; a claim not reached is "not measured" with the reason, and
the same board run again resumes from the cache. A claim that fails is "not measured" with its error, and the
others go on.

A claim whose fair test needs a run this machine can make but has not (`NeedsRun`) is "not measured" with the
command and its time; that does not make the board incomplete (`complete` is about the budget and interruptions).

Board JSON (schema 2): schema, created, model {name, title, identity, n_layers}, settings, papers {key: {title,
cite, coverage {line, headlines}}}, plan {estimate_seconds, claims {id: seconds}, probe}, budget_seconds,
spent_seconds, complete, interrupted, counts {verdict word: n}, claims [{id, paper, paper_title, cite, quote, where,
paper_number, differs, own, says, test, rule, deviation_sources, evidence [{label, view, query, address}], verdict
{word, number, detail}, source, values, beside, deviations [{of, topic, paper, here, why, restore, source,
sentence}], seconds}].
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from analysis.core.errors import UserError
from analysis.experiments.claims import (
    PAPERS,
    CannotRun,
    Claim,
    NeedsRun,
    Outcome,
    causal2vec,
    compression,
    gircse,
    htp,
    htp_ablations,
    kv_embedding,
    kv_embedding_analyses,
)
from analysis.experiments.claims.context import Context, Settings, check, short_name
from analysis.experiments.machinery import verdicts
from analysis.experiments.machinery.fidelity import of
from analysis.report.clock import INTERRUPTED, RESUME, Budget

SCHEMA = 2  # 2: the paper's quote, location and number per claim, `beside`, the papers' coverage
CLAIMS: list[Claim] = (kv_embedding.CLAIMS + kv_embedding_analyses.CLAIMS + htp.CLAIMS + htp_ablations.CLAIMS
                       + gircse.CLAIMS + causal2vec.CLAIMS + compression.CLAIMS)


def by_id(claim_id: str) -> Claim:
    found = {c.id: c for c in CLAIMS}
    if claim_id not in found:
        raise UserError(f"No claim '{claim_id}'. Claims: {', '.join(found)}.")
    return found[claim_id]


def choose(ids) -> list[Claim]:
    """The claims named in `ids` (all when empty), in the board's order."""
    wanted = {by_id(i).id for i in ids}
    return [c for c in CLAIMS if not wanted or c.id in wanted]


def deviations_of(source: str) -> list[dict]:
    """The declared deviations of "method:<name>" or "system:<name>" (`fidelity.of`), as JSON with the one-line
    sentence the method's help shows."""
    return [{"of": source, **d.as_json(), "sentence": d.sentence()} for d in of(source)]


@dataclass
class Plan:
    ctx: Context
    claims: list[Claim]
    units: dict = field(default_factory=dict)  # claim id -> [Unit] (claims that can run)
    refused: dict = field(default_factory=dict)  # claim id -> Outcome (cannot run here, needs a run, or failed)
    failed: set = field(default_factory=set)  # claim ids whose planning failed: the board is not complete

    def estimate(self, claim_id: str, done=frozenset()) -> float:
        """Seconds a claim still needs: its units not in `done`."""
        return sum(u.seconds for u in self.units[claim_id] if u.key not in done)

    def as_dict(self) -> dict:
        seen, total = set(), 0.0
        for units in self.units.values():
            for u in units:
                if u.key not in seen:
                    seen.add(u.key)
                    total += u.seconds
        r = self.ctx.rate
        return {"estimate_seconds": round(total, 1), "claims": {k: round(self.estimate(k), 1) for k in self.units},
                "refused": len(self.refused), "to_measure": len(self.units),
                "probe": None if r is None else {"seconds_per_text": [r[0], r[1]], "at_tokens": [r[2], r[3]]}}


def prepare(backbone, compute, settings: Settings, *, claims=None, records_folder=None, rate=None) -> Plan:
    """The plan: the timed probe (`rate` reuses an earlier one, as a page does on every rerun), then each claim's
    units, or its refusal. Nothing is measured yet."""
    ctx = Context(backbone, compute, check(settings), records_folder=records_folder)
    if rate is None:
        ctx.calibrate()
    else:
        ctx.rate = tuple(rate)
    plan = Plan(ctx, list(claims if claims is not None else CLAIMS))
    for claim in plan.claims:
        try:
            plan.units[claim.id] = list(claim.work(ctx))
        except NeedsRun as why:
            plan.refused[claim.id] = Outcome(verdicts.not_measured(str(why)), "")
        except CannotRun as why:
            plan.refused[claim.id] = Outcome(verdicts.cannot_run(str(why)), "")
        except Exception as err:  # noqa: BLE001 -- one claim's problem must not stop the board
            plan.refused[claim.id] = Outcome(verdicts.not_measured(failure(err)), "")
            plan.failed.add(claim.id)
    return plan


def failure(err: Exception) -> str:
    text = str(err).strip().rstrip(".") or type(err).__name__
    return f"it failed: {text}" if isinstance(err, UserError) else f"it failed ({type(err).__name__}: {text})"


def run(plan: Plan, *, budget_seconds: float | None = None, started: float | None = None,
        clock: Callable[[], float] | None = None, progress: Callable | None = None,
        should_stop: Callable[[], bool] | None = None) -> dict:
    """Judge the plan's claims (the module docstring); `budget_seconds` None: no limit. `progress(done, total,
    message)` in whole estimated seconds, the message with the time left."""
    ctx = plan.ctx
    budget = Budget(float("inf") if budget_seconds is None else budget_seconds, started=started,
                    asked_to_stop=should_stop, clock=clock)
    outcomes: dict[str, tuple[Outcome, float]] = {k: (o, 0.0) for k, o in plan.refused.items()}
    stopped = set(plan.failed)  # claims that failed or the budget or an interruption left: an incomplete board
    waiting, finished = [c for c in plan.claims if c.id in plan.units], set()  # finished: unit keys
    total = max(round(plan.as_dict()["estimate_seconds"]), 1)  # whole estimated seconds: what a progress bar counts
    while waiting:
        claim = min(waiting, key=lambda c: plan.estimate(c.id, finished))  # the cheapest first: the most verdicts
        waiting.remove(claim)
        need = plan.estimate(claim.id, finished)
        why = budget.stop_reason(need)
        if why:
            remedy = "" if why == INTERRUPTED else f"; {RESUME}"
            outcomes[claim.id] = (Outcome(verdicts.not_measured(why + remedy), ""), 0.0)
            stopped.add(claim.id)
            continue
        if progress is not None:
            left = sum(plan.estimate(c.id, finished) for c in [claim, *waiting])
            progress(max(total - round(left), 0), total, f"{claim.id}: about {_minutes(left * budget.drift())} left")
        began = time.perf_counter()
        try:
            outcome = claim.judge(ctx)
        except NeedsRun as missing:
            outcome = Outcome(verdicts.not_measured(str(missing)), "")
        except CannotRun as missing:
            outcome = Outcome(verdicts.cannot_run(str(missing)), "")
        except KeyboardInterrupt:
            budget.interrupted = True
            stopped.add(claim.id)
            outcome = Outcome(verdicts.not_measured(INTERRUPTED), "")
        except Exception as err:  # noqa: BLE001 -- one claim's failure must not lose the others
            stopped.add(claim.id)
            outcome = Outcome(verdicts.not_measured(failure(err)), "")
        seconds = time.perf_counter() - began
        if outcome.verdict.word not in (verdicts.NOT_MEASURED, verdicts.CANNOT):
            budget.measured(need, seconds)
            finished |= {u.key for u in plan.units[claim.id]}
        outcomes[claim.id] = (outcome, round(seconds, 1))
    if progress is not None:
        progress(total, total, "done")
    return _board(plan, outcomes, budget, budget_seconds, stopped)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _board(plan: Plan, outcomes: dict, budget, budget_seconds, stopped=frozenset()) -> dict:
    facts, ctx = plan.ctx.backbone.facts, plan.ctx
    rows = []
    for claim in plan.claims:
        outcome, seconds = outcomes[claim.id]
        rows.append({**claim.describe(), "verdict": outcome.verdict.as_json(), "source": outcome.source,
                     "values": dict(outcome.values), "beside": list(outcome.beside), "seconds": seconds,
                     "deviations": [d for s in claim.deviations for d in deviations_of(s)]})
    counts = {w: sum(r["verdict"]["word"] == w for r in rows) for w in verdicts.WORDS}
    return {"schema": SCHEMA, "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "model": {"name": short_name(facts), "title": facts.title or short_name(facts),
                      "identity": ctx.backbone.identity, "n_layers": facts.n_layers},
            "settings": asdict(ctx.settings), "papers": {k: {"title": p.title, "cite": p.cite,
                                                             "coverage": p.coverage()} for k, p in PAPERS.items()},
            "plan": plan.as_dict(), "budget_seconds": budget_seconds, "spent_seconds": round(budget.elapsed(), 1),
            "complete": not stopped, "interrupted": budget.interrupted, "counts": counts,
            "claims": rows}


def summary(board: dict) -> str:
    """"12 hold here, 5 reversed here, 6 not resolved, 6 cannot run here": the board in one line."""
    return ", ".join(f"{n} {word}" for word, n in board["counts"].items() if n)
