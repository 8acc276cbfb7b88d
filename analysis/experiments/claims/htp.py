"""HTP's main claims (Ding et al., 2025): block summaries and a mean readout help on long inputs (Table 2, Fig. 1) and
on retrieval (Table 1), at a fraction of Echo's cost (Tables 1-2), while Token Prepending with a prompt stays ahead on
short STS sentences (Table 3). Long inputs are held-out STS-B pairs concatenated k at a time (`long_sts`: HTP's own
Fig. 1 construction, this project's version of it), Spearman per length with the chance level beside; retrieval is
the board's SciFact set (nDCG@10 per query). The ablations (Tables 4-6, 16, Fig. 8) are in `htp_ablations`.

Sources checked (November 2026): the paper's full text (../shared/papers/htp.txt) and its reference code's README,
configs and parser (github.com/snap-research/HTP); quotes and numbers in `papers.htp`.
"""

from __future__ import annotations

from analysis.data.corpora import lee_documents
from analysis.experiments.claims import (
    Claim,
    Evidence,
    Outcome,
    long_sts,
    tasks,
    timing,
)
from analysis.experiments.claims.context import STS_HOW, configured
from analysis.experiments.machinery import verdicts

HERE = "measured here"
DEVIATIONS = ("method:htp",)
BENCHMARK = Evidence("Benchmark: sentences", "benchmark", {"family": "sts"})
LESSON = Evidence("Lesson: HTP, one summary per sentence", "lessons", {"lesson": "summary-tokens", "step": 2})
LONG_HOW = ("Held-out STS-B pairs concatenated k at a time from one gold-score bin (HTP's Fig. 1 construction, this "
            "project's version: `long_sts`), Spearman per length, the chance band beside; judged only where every "
            "compared method is above chance")
SINGLE = {"TP w. Mean": ("token_prepending", {"pooling": "mean"}), "PromptEOL": ("prompteol", {}),
          "Echo": ("echo", {})}  # Table 2's single-summary-token and repetition methods


def _long(ctx) -> list[int]:
    return [k for k in ctx.long_lengths() if k > 1]


def _ends(ctx) -> tuple[int, int]:
    ks = ctx.long_lengths()
    return ks[0], ks[-1]


def _configs(names: dict) -> list:
    return [configured(n, **p) for n, p in names.values()]


def _methods(ctx, names: dict) -> dict:
    return {label: ctx.method(n, **p) for label, (n, p) in names.items()}


# ---- HTP against vanilla mean pooling on long inputs (Table 2) ----------------------------------------------------
def _vs_mean_work(ctx):
    return long_sts.units(ctx, [configured("htp"), configured("mean")], _long(ctx))


def _vs_mean(ctx) -> Outcome:
    methods, ks = {"HTP": ctx.method("htp"), "vanilla mean": ctx.method("mean")}, _long(ctx)
    values = long_sts.rhos(ctx, methods, ks)
    gate = long_sts.at_chance(ctx, methods, ks)
    if gate is not None:
        return Outcome(gate, HERE, values)
    parts = [long_sts.difference(ctx, methods["HTP"], methods["vanilla mean"], k) for k in ks]
    return Outcome(verdicts.all_of(parts, [f"HTP minus mean at k={k}" for k in ks]), HERE, values)


# ---- the gap over single-token methods grows with length; over mean it shrinks (Table 2) --------------------------
def _gap_work(ctx):
    return long_sts.units(ctx, [configured("htp"), configured("mean"), *_configs(SINGLE)], _ends(ctx))


def _gap(ctx) -> Outcome:
    short, longest = _ends(ctx)
    htp, others = ctx.method("htp"), _methods(ctx, SINGLE)
    values = long_sts.rhos(ctx, {"HTP": htp, **others, "vanilla mean": ctx.method("mean")}, (short, longest))
    gate = long_sts.at_chance(ctx, {"HTP": htp, **others}, (short, longest))
    if gate is not None:
        return Outcome(gate, HERE, values)
    parts = [long_sts.growth(ctx, htp, m, short, longest) for m in others.values()]
    verdict = verdicts.all_of(parts, [f"gap over {label} grows" for label in others])
    shrink = long_sts.growth(ctx, htp, ctx.method("mean"), short, longest, direction=-1)
    beside = (f"The gap over vanilla mean pooling, which the paper's Table 2 shows shrinking: {shrink.number} "
              f"(judged by the same rule in that direction: {shrink.word}).",)
    return Outcome(verdict, HERE, values, beside)


# ---- the mean readout against the last token as inputs grow (Theorem 3.1, Fig. 1, Table 1) -----------------------
def _readout_work(ctx):
    return long_sts.units(ctx, [configured("mean"), configured("last"), configured("htp"),
                                configured("htp", pooling="last")], _long(ctx))


def _readout(ctx) -> Outcome:
    ks = _long(ctx)
    mean, last = ctx.method("mean"), ctx.method("last")
    values = long_sts.rhos(ctx, {"vanilla mean": mean, "vanilla last": last}, ks)
    gate = long_sts.at_chance(ctx, {"vanilla mean": mean}, ks)  # the last token at chance is the claim itself
    if gate is not None:
        return Outcome(gate, HERE, values)
    parts = [long_sts.difference(ctx, mean, last, k) for k in ks]
    derived = [long_sts.difference(ctx, ctx.method("htp"), ctx.method("htp", pooling="last"), k) for k in ks]
    beside = tuple(f"HTP read at its mean minus at its last token (this project's derivation, no such row in the "
                   f"paper) at k={k}: {d.number} ({d.word})" for k, d in zip(ks, derived))
    return Outcome(verdicts.all_of(parts, [f"mean minus last at k={k}" for k in ks]), HERE, values, beside)


# ---- Fig. 1: the last token falls behind mean pooling as the concatenated inputs grow ------------------------------
def _fig1_work(ctx):
    return long_sts.units(ctx, [configured("mean"), configured("last"), configured("prompteol")], _ends(ctx))


def _fig1(ctx) -> Outcome:
    short, longest = _ends(ctx)
    mean, last, peol = ctx.method("mean"), ctx.method("last"), ctx.method("prompteol")
    values = long_sts.rhos(ctx, {"vanilla mean": mean, "vanilla last": last, "PromptEOL": peol}, (short, longest))
    gate = long_sts.at_chance(ctx, {"vanilla mean": mean}, (short, longest))
    if gate is not None:
        return Outcome(gate, HERE, values)
    return Outcome(long_sts.growth(ctx, mean, last, short, longest), HERE, values)


# ---- retrieval (Table 1) ------------------------------------------------------------------------------------------
def _retrieval_work(ctx):
    return [tasks.unit(ctx, "retrieval", configured("htp")), tasks.unit(ctx, "retrieval", configured("mean"))]


def _retrieval(ctx) -> Outcome:
    htp, mean = ctx.method("htp"), ctx.method("mean")
    return Outcome(tasks.compared(ctx, "retrieval", htp, mean), HERE,
                   tasks.values(ctx, "retrieval", {"HTP": htp, "vanilla mean": mean}))


# ---- short sentences: the others stay ahead (Table 3) -------------------------------------------------------------
STS_OTHERS = {"TP w. PromptEOL": ("token_prepending", {}), "PromptEOL": ("prompteol", {}), "Echo": ("echo", {})}


def _sts_work(ctx):
    return [ctx.sts_unit(configured("htp")), *(ctx.sts_unit(c) for c in _configs(STS_OTHERS))]


def _sts(ctx) -> Outcome:
    htp, others = ctx.method("htp"), _methods(ctx, STS_OTHERS)
    parts = [ctx.sts_paired(m, htp) for m in others.values()]
    values = {"HTP (bare text, mean)": round(ctx.spearman(htp), 4),
              **{label: round(ctx.spearman(m), 4) for label, m in others.items()}}
    return Outcome(verdicts.all_of(parts, [f"{label} minus HTP" for label in others]), HERE, values)


# ---- cost against Echo (Tables 1-2) -------------------------------------------------------------------------------
def _documents(ctx) -> list[str]:
    return lee_documents().texts[: ctx.settings.timing_texts]


def _cost_work(ctx):
    return [timing.unit(ctx, "htp-cost", {"HTP": configured("htp"), "Echo": configured("echo")}, _documents(ctx))]


def _cost(ctx) -> Outcome:
    t = timing.timed(ctx, "htp-cost", {"HTP": ctx.method("htp"), "Echo": ctx.method("echo")}, _documents(ctx))
    ratio, spread = t.ratio("HTP", "Echo")
    return Outcome(verdicts.below(ratio, bar=1.0, spread=spread, what="HTP / Echo"), t.source(),
                   {"HTP / Echo (paper 0.32-0.73)": t.shown("HTP", "Echo"),
                    "HTP / plain forward (paper 1.08x-1.50x)": t.shown("HTP"),
                    "Echo / plain forward (paper 1.84x-3.50x)": t.shown("Echo")})


RETRIEVAL = ("The board's SciFact set (the task_families record's: 100 seeded report-part claims, their abstracts and "
             "150 seeded others), nDCG@10 per query, queries and documents embedded alike")
CLAIMS = [
    Claim("htp-long-mean", "htp", "On long inputs HTP beats vanilla mean pooling at every length.",
          f"{LONG_HOW}: HTP at its defaults against mean pooling of the plain forward, at each length above one pair.",
          "all of: paired HTP minus mean > 0 at each length; not judged at chance", _vs_mean, _vs_mean_work,
          DEVIATIONS + ("method:mean",), (BENCHMARK, LESSON)),
    Claim("htp-long-gap", "htp", "HTP's lead over single-token and repetition methods (TP w. Mean, PromptEOL, Echo) "
          "grows with input length.",
          f"{LONG_HOW}: per method, (HTP minus it at the longest length) minus (the same at the shortest); the gap "
          "over vanilla mean pooling, which Table 2 shows shrinking, beside.",
          "all of: the gap over each of TP w. Mean, PromptEOL and Echo grows (> 0); not judged at chance", _gap,
          _gap_work, DEVIATIONS + ("method:mean", "method:token_prepending", "method:prompteol", "method:echo"),
          (BENCHMARK,)),
    Claim("htp-long-readout", "htp", "Mean pooling beats the last token of the same forward on long inputs.",
          f"{LONG_HOW}: mean against last-token pooling of the plain forward (Table 1's Vanilla Mean and Last) at "
          "each length above one pair; HTP read both ways beside.",
          "all of: paired mean minus last > 0 at each length; not judged when mean pooling is at chance", _readout,
          _readout_work, DEVIATIONS + ("method:mean", "method:last"), (BENCHMARK, LESSON)),
    Claim("htp-long-sts-readout", "htp", "The last token falls further behind mean pooling as concatenated STS inputs "
          "grow longer (Fig. 1).",
          f"{LONG_HOW}: (mean minus last at the longest length) minus (the same at one pair); PromptEOL beside.",
          "paired over independent bootstraps: the gap grows (> 0); not judged when mean pooling is at chance",
          _fig1, _fig1_work, ("method:mean", "method:last", "method:prompteol"), (BENCHMARK,)),
    Claim("htp-retrieval", "htp", "HTP beats mean pooling of the plain model on retrieval.",
          f"{RETRIEVAL}: HTP against mean pooling of the plain forward.", "paired over queries: HTP minus mean > 0",
          _retrieval, _retrieval_work, DEVIATIONS + ("method:mean",),
          (Evidence("Benchmark: retrieval", "benchmark", {"family": "retrieval"}),)),
    Claim("htp-sts-tp", "htp", "On short STS sentences HTP lags behind TP with PromptEOL, PromptEOL and Echo.",
          f"{STS_HOW}, Spearman: Token Prepending (PromptEOL prompt), PromptEOL and Echo each against HTP at its "
          "defaults (no instruction, as the paper gives STS none).", "all of: paired each minus HTP > 0", _sts,
          _sts_work, DEVIATIONS + ("method:token_prepending", "method:prompteol", "method:echo"), (BENCHMARK, LESSON)),
    Claim("htp-cost", "htp", "HTP costs less than Echo.",
          "The Lee corpus' news documents (the board's timing count): HTP, Echo and the plain forward in the same "
          "interleaved rounds; a ratio per round, their spread as the interval; HTP against the plain forward "
          "beside.", "ratio HTP / Echo under 1 over every round (straddling: not resolved)", _cost, _cost_work,
          DEVIATIONS + ("method:echo",), (Evidence("Report: cost per method", "report"),)),
]
