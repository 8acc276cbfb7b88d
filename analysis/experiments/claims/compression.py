"""Sentence-pool context compression's claims (the source this project's system follows): one MiniLM vector per
sentence keeps nearly what the full text gives at about a tenth of the positions, one vector per paragraph dilutes
the facts, names rescue picking the right person's pools, and accuracy falls slowly as people are added.

The single-person claims are read from the `compression` record (`python -m analysis measure compression`) when it
was measured on this model, else measured here with the weights shipped for it; the several-people claims and the
reconstruction need their training runs and are read from the `compression_people` and `compression_reconstruction`
records only. Exact match is a rate: Wilson
intervals, and Newcombe's interval for a difference of two rates.

The source is a write-up this project follows, not a paper; it was not available to the check of November 2026, so
each claim's `where` says which of its wording this project's own records quote (docs/RESULTS-old-protocol.md: 89.3%
exact match at 10x compression, per-sentence pools 33 points above one paragraph pool, a sub-linear decay from 5 to
1,000 pools) and which is this project's reading.
"""

from __future__ import annotations

from analysis.experiments.machinery import verdicts
from analysis.experiments.claims import CannotRun, Claim, Evidence, Outcome, Unit
from analysis.experiments.claims.context import recorded_rate, short_name
from analysis.experiments.compression_people import LONGER

HERE = "measured here"
DEVIATIONS = ("system:compression",)
PAGE = Evidence("Context compression", "context_compression")
NEAR = 0.9  # "near full-text accuracy": at least 90% of the full text's exact match on the same questions


def _lesson(step: int, label: str) -> Evidence:
    return Evidence(f"Lesson: {label}", "lessons", {"lesson": "compression", "step": step})


def _weights(ctx):
    """The compression weights shipped for this model, or CannotRun saying how to train them."""
    from analysis.core.errors import UserError
    from analysis.experiments.machinery.provenance import weights_folder

    try:
        return weights_folder("compression", ctx.backbone.facts, "shipped")
    except UserError:
        name = short_name(ctx.backbone.facts)
        raise CannotRun(f"needs the compression system trained for {name} (`python -m analysis train compression "
                        f"--model {name} --ship`)") from None


def heldout(ctx) -> tuple[dict, str]:
    """({mode: (matched, n, context tokens per position)}, source) of single-person held-out questions per way of
    giving the context: the compression record's table, or measured here through the `Compute` door."""
    found = ctx.record("compression")
    if found is not None and found[0].has_table("heldout"):
        rec, note = found
        return {r["mode"]: (recorded_rate(r["all"], r["n"]), r["n"], r["context tokens per position"])
                for r in rec.table("heldout").dicts()}, note
    if "compression" not in ctx.memo:
        from analysis.compression.system import CompressionSystem, split_mode
        from analysis.experiments.compression import heldout_scores

        system = CompressionSystem.from_artefact(ctx.backbone, _weights(ctx))

        def answer(items, mode, label):
            m, ids = split_mode(mode)
            return ctx.compute.compress_predict(system, items, m, ids)

        scores = heldout_scores(answer, ctx.settings.compression_n)
        ctx.memo["compression"] = {m: (round(r["exact_match"] * r["n"]), r["n"], r["compression"])
                                   for m, r in scores.items()}
    return ctx.memo["compression"], f"{HERE} (the weights shipped for this model)"


def _heldout_work(ctx):
    if ctx.record("compression") is not None:
        return []
    _weights(ctx)
    n = ctx.settings.compression_n  # five modes, each a short context and a few generated tokens per question
    return [Unit(("compression", "heldout"), 5 * ctx.seconds([120] * n, 3.0))]


def _percent(k: int, n: int) -> float:
    return round(100 * k / n, 1)


def _ratio(ctx) -> Outcome:
    table, source = heldout(ctx)
    (k_s, n, per_position), (k_t, n_t, _) = table["sentence"], table["text"]
    bar = NEAR * k_t / n_t
    return Outcome(verdicts.above_bar(k_s, n, bar), source,
                   {"per-sentence pools %": _percent(k_s, n), "full text %": _percent(k_t, n_t),
                    "context tokens per pool position": per_position})


def _paragraph(ctx) -> Outcome:
    table, source = heldout(ctx)
    (k_s, n_s, _), (k_p, n_p, _) = table["sentence"], table["paragraph"]
    return Outcome(verdicts.rate_difference(k_s, n_s, k_p, n_p), source,
                   {"per-sentence pools %": _percent(k_s, n_s), "one paragraph pool %": _percent(k_p, n_p)})


# ---- several people per context -----------------------------------------------------------------------------------
def _people(ctx):
    found = ctx.record("compression_people")
    if found is None:
        name = short_name(ctx.backbone.facts)
        raise CannotRun(f"needs the several-people runs trained for {name} (`python -m analysis train compression "
                        "--people 5` with and without `--names`, the scaling cascade) and their record (`python -m "
                        "analysis measure compression_people`)")
    return found


def _names(ctx) -> Outcome:
    rec, note = _people(ctx)
    rows = {r["condition"]: r for r in rec.table("experiment_b").dicts()}
    without, named = rows.get("five people"), rows.get("five people, names")
    if without is None or named is None:
        raise CannotRun("needs both Experiment B runs (five people without and with names) in the record")
    k_b2, k_b = recorded_rate(named["all"], named["n"]), recorded_rate(without["all"], without["n"])
    values = {"with names %": _percent(k_b2, named["n"]), "without names %": _percent(k_b, without["n"])}
    longer = rows.get(LONGER)  # B trained to the source's length: shown, not judged (B2 was trained as long as B)
    if longer is not None:
        values["without names, longer run %"] = _percent(recorded_rate(longer["all"], longer["n"]), longer["n"])
    return Outcome(verdicts.rate_difference(k_b2, named["n"], k_b, without["n"]), note, values)


def _sublinear(ctx) -> Outcome:
    rec, note = _people(ctx)
    rows = sorted(rec.table("scaling").dicts(), key=lambda r: r["people"])
    if len(rows) < 2:
        raise CannotRun("needs the scaling study at two people counts or more in the record")
    first, last = rows[0], rows[-1]
    k_first, k_last = recorded_rate(first["all"], first["n"]), recorded_rate(last["all"], last["n"])
    bar = (k_first / first["n"]) * first["people"] / last["people"]  # what a fall in proportion to N leaves
    return Outcome(verdicts.above_bar(k_last, last["n"], bar), note,
                   {f"{r['people']} people %": _percent(recorded_rate(r["all"], r["n"]), r["n"]) for r in rows})


def _reconstruction(ctx) -> Outcome:
    """Read from the compression_reconstruction record: the two token-F1 means with their intervals, their difference
    with an interval from the two (the square root of the sum of the squared half-widths: conservative, since both
    were measured on the same paragraphs and the record keeps no per-paragraph pairs)."""
    from analysis.experiments.compression_reconstruction import ID, MODES

    found = ctx.record(ID)
    if found is None:
        name = short_name(ctx.backbone.facts)
        raise CannotRun(f"needs Experiment C trained for {name} (`python -m analysis train compression --reconstruct "
                        f"0.5`: half the items ask for the paragraph back, content words weighted x3) and its record "
                        f"(`python -m analysis measure {ID} --weights RUN`)")
    rec, note = found
    rows = {r["context"]: r for r in rec.table("reconstruction").dicts()}
    pools, floor = rows[MODES["sentence"]], rows[MODES["none"]]
    d = pools["token F1"] - floor["token F1"]
    half = sum(((hi - lo) / 2) ** 2 for lo, hi in (pools["95% CI"], floor["95% CI"])) ** 0.5
    verdict = verdicts.paired(d, (d - half, d + half), pools["n"], unit="paragraphs",
                              interval="95% interval from the two means' intervals")
    return Outcome(verdict, note, {"token F1 from the pools": pools["token F1"],
                                   "token F1 without context": floor["token F1"]})


HELD = ("Held-out personas (names no training or selection saw), exact match per question, with the weights "
        "trained for this model")
CLAIMS = [
    Claim("comp-ratio", "compression", "Experiment A, as this project's records quote the source (89.3% exact match "
          "at 10x compression); the write-up itself was not re-checked, and the 90%-of-full-text bar is this "
          "project's",
          "Compressing each sentence into one vector (about 10x fewer positions) keeps accuracy near the full text's "
          "(the source reports 89.3% exact match at 10x compression, as this project's records quote it).",
          f"{HELD}: per-sentence pools against the full context as tokens, on the same questions.",
          f"rate against a bar: the per-sentence pools' Wilson interval above {NEAR:.0%} of the full text's rate",
          _ratio, _heldout_work, DEVIATIONS, (PAGE, _lesson(2, "one vector per sentence against one per paragraph"))),
    Claim("comp-paragraph", "compression", "Experiment A, as this project's records quote the source (per-sentence "
          "pools 33 points above one paragraph pool); the write-up itself was not re-checked",
          "One pool for a whole paragraph dilutes its facts: per-sentence pools answer far more questions (33 points "
          "more in the source, as this project's records quote it).",
          f"{HELD}: per-sentence pools against one pool for the whole paragraph.",
          "rate difference (Newcombe-Wilson): per-sentence minus paragraph > 0", _paragraph, _heldout_work,
          DEVIATIONS, (PAGE, _lesson(3, "pool dilution"))),
    Claim("comp-names", "compression", "Experiments B and B2 (several people per context), as this project's records "
          "name them; the source's wording was not available to re-check",
          "Without names the model cannot pick the right person's pools; each pool's name as tokens rescues the "
          "selection (B to B2), as this project reads the source.",
          "Five people per context, held-out items: the run trained with each pool's person as name tokens (B2) "
          "against the run trained without (B), both the same length, from the compression_people record (B trained "
          "longer, when recorded, is shown beside them, not judged: B2 was not trained as long).",
          "rate difference (Newcombe-Wilson): with names minus without > 0", _names, deviations=DEVIATIONS,
          evidence=(PAGE, _lesson(4, "picking the right person among many"))),
    Claim("comp-sublinear", "compression", "scaling study: this project's records quote the source's \"sub-linear "
          "decay from 5 to 1,000 pools\"; its wording for people per context was not available to re-check",
          "Accuracy degrades slowly, sub-linearly, as the context grows (the source's scaling claim as this project's "
          "records quote it, over pools; tested here over people per context).",
          "The scaling study with names (each N read by its own run), from the compression_people record: exact "
          "match at the largest N against what a fall in proportion to N from the smallest N would leave.",
          "rate against a bar: the largest N's Wilson interval above a(N_min) x N_min / N_max", _sublinear,
          deviations=DEVIATIONS, evidence=(PAGE,)),
    Claim("comp-reconstruction", "compression", "Experiment C (reconstruction), as this project's records name it; "
          "the source's wording was not available to re-check",
          "The pools keep the paragraph itself: the decoder can write it back from its sentence vectors (this "
          "project's reading of the source's Experiment C).",
          "Held-out paragraphs asked back from their per-sentence pools by the run trained for it (Experiment C): "
          "token F1 of the reconstruction against the no-context floor, from the compression_reconstruction record.",
          "difference of the two token-F1 means > 0, its interval from the two means' 95% intervals",
          _reconstruction, deviations=DEVIATIONS, evidence=(PAGE,)),
]
