"""The task families beyond STS that claims compare methods on, as the task_families record samples them (so their
vectors are shared through the cache): SciFact retrieval (nDCG@10 per query), Banking77 classification (MTEB's
logistic-regression protocol, accuracy per evaluation text) and Banking77 clustering (MTEB's k-means protocol,
V-measure per fit). Each is a function of a claims `Context`; every comparison is paired over the same units.

    score(ctx, "retrieval", ctx.method("htp"))          # eval.score.Score
    compared(ctx, "retrieval", htp, mean)              # verdicts.paired of HTP minus mean, over queries
"""

from __future__ import annotations

from analysis.core.errors import UserError
from analysis.eval.score import compare
from analysis.eval.tasks import load_task, nano_task, score_task
from analysis.experiments import task_families  # by module: tests replace family_tasks
from analysis.experiments.claims import CannotRun, Unit
from analysis.experiments.claims.context import method_key, relative_cost
from analysis.experiments.machinery.verdicts import non_inferior, paired
from analysis.experiments.task_families import Config

UNITS = {"retrieval": "queries", "classification": "evaluation texts", "clustering": "k-means fits"}


def task(ctx, family: str):
    """The family's task as the board samples it (retrieval: the board's retrieval set; the others: the
    task_families record's, or the settings' labelled file), memoised; CannotRun when its data is not installed."""
    if ("task", family) not in ctx.memo:
        s = ctx.settings
        try:
            if family == "retrieval":
                found = load_task(s.retrieval)
                if found.kind != "retrieval":
                    raise CannotRun(f"needs a retrieval set; {s.retrieval} is scored as {found.kind}")
                found = nano_task(found, s.retrieval_queries or len(found.data.queries), s.retrieval_distractors,
                                  s.seed)
            elif s.labelled == "banking77-report":
                found = task_families.family_tasks(Config(seed=s.seed))[family][0]
            else:
                found = load_task(f"{family}:{s.labelled}")
        except UserError as err:
            raise CannotRun(f"needs the {family} data ({str(err).rstrip('.')})") from None
        ctx.memo["task", family] = found
    return ctx.memo["task", family]


def unit(ctx, family: str, method) -> Unit:
    """Embedding the family's texts with `method` (both sides for retrieval): free when the cache holds them."""
    found = task(ctx, family)
    if family == "retrieval":
        data = found.data
        texts = [*data.corpus.values(), *data.queries.values()]
        if ("tokens", family) not in ctx.memo:
            ctx.memo["tokens", family] = ctx.tokens(texts)
        return ctx.two_sided_unit((family, method_key(method)),
                                  ctx.seconds(ctx.memo["tokens", family], relative_cost(method)), method, data)
    texts = found.texts()
    if ("tokens", family) not in ctx.memo:
        ctx.memo["tokens", family] = ctx.tokens(texts)
    return ctx.unit((family, method_key(method)), ctx.seconds(ctx.memo["tokens", family], relative_cost(method)),
                    method, texts)


def score(ctx, family: str, method):
    """`eval.score.Score` of `method` on the family's task, through the `Compute` door."""
    key = (family, method_key(method))
    if key not in ctx.memo:
        ready = ctx.ready(method)

        def embed(texts, role):
            return ctx.compute.encode(ctx.backbone, ready.as_role(role), texts).vectors

        ctx.memo[key] = score_task(task(ctx, family), embed, n_boot=ctx.settings.n_boot, seed=ctx.settings.seed)
    return ctx.memo[key]


def compared(ctx, family: str, a, b, *, margin: float | None = None):
    """`verdicts.paired` of A minus B on the family's units (or `non_inferior` with `margin`)."""
    sa, sb = score(ctx, family, a), score(ctx, family, b)
    d = compare(sa, sb, n_boot=ctx.settings.n_boot, seed=ctx.settings.seed)
    if margin is not None:
        return non_inferior(d.difference, d.ci, sa.n, margin=margin, unit=UNITS[family])
    return paired(d.difference, d.ci, sa.n, unit=UNITS[family])


def values(ctx, family: str, labelled: dict) -> dict:
    """{"<label> <metric>": value} as the board shows them."""
    metric = {"retrieval": "nDCG@10", "classification": "accuracy", "clustering": "V-measure"}[family]
    return {f"{name} {metric}": round(score(ctx, family, m).value, 4) for name, m in labelled.items()}
