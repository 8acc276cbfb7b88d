"""The report's answer, each part with its reason: the best method, the best per unit of cost, whether
KV-Embedding's intrinsic-dimension rule is to be trusted on this model, and what is not significantly different
from the best. Pure: it reads the measured sections and computes nothing new.

Any section may be missing or partial (the budget ran out, the run was interrupted, a method failed): an answer it
cannot give is None ("unknown") and its reason names what is missing and why (`missing`, the report's
{section: reason}), so a partial report still says what it knows. A difference is called significant, or not,
only for a method whose paired test was run (its p is a number); without a test (--n-boot 0, too few pairs) no
sentence speaks of significance.

The best is the best method on the model. A reference row (MiniLM alone, a 22M encoder that does not use the model:
`sections.REFERENCE_METHODS`) is never the best, tied or worse; `reference` says how it compares with the best, on
the same resampled pairs, and one reason says it in words ("a 22M encoder beats every method on this model here;
use it unless you need the decoder"), because a reader choosing a decoder method should know when not to.
"""

from __future__ import annotations

import math

from analysis.report.sections import NOT_DIFFERENT_P, why_untested

TRUST_GAP = 0.01  # Spearman the ID window may trail the map's best cell by and still be "as good"
TRUST_RANK = 0.25  # or: it ranks within the best quarter of the map's cells


def recommend(quality: dict | None, cost: dict | None, layers: dict | None, missing: dict | None = None) -> dict:
    missing = missing or {}
    out = {"best": None, "not_different": [], "reasons": [], "best_per_cost": None,
           "id_rule": id_rule(layers, missing), "reference": None}
    every = {r["label"]: r for r in (quality or {}).get("methods", [])}
    rows = {k: r for k, r in every.items() if not r.get("reference")}  # the methods on the model
    best = (quality or {}).get("best")
    if not rows or best is None or not _finite(rows[best]["spearman"]):
        out["reasons"].append("Which method is best is unknown, since " + (
            f"no method was measured: {why(missing, 'quality')}." if not rows else
            "no method's Spearman is defined on these pairs (each gave one similarity to every pair)."))
        out["reasons"].append(out["id_rule"]["reason"])
        return out
    verdict = {k: _verdict(r["p"]) for k, r in rows.items() if k != best}  # "tied", "worse" or None (not tested)
    tied = [k for k, v in verdict.items() if v == "tied"]
    worse = [k for k, v in verdict.items() if v == "worse"]
    untested = [k for k, v in verdict.items() if v is None]
    out.update(best=best, not_different=tied)
    b = rows[best]
    interval = f", 95% interval {_ci(b['ci'])}" if _ci(b["ci"]) else ""
    out["reasons"].append(f"{best} has the highest Spearman ({b['spearman']:.3f}{interval}) on {quality['n_pairs']} "
                          "pairs" + (f" among the {len(rows)} methods measured; {why(missing, 'quality')}"
                                     if quality.get("not_measured") else "") + ".")
    if tied:
        out["reasons"].append(f"Not significantly different from it (paired bootstrap, p >= {NOT_DIFFERENT_P}): "
                              + ", ".join(f"{k} ({rows[k]['difference_to_best']:+.3f}, p = {rows[k]['p']:.2f})"
                                          for k in tied) + ".")
    if any(r.get("reference") for r in every.values()):
        out["reference"] = reference(next(r for r in every.values() if r.get("reference")), best, b)
        out["reasons"].append(out["reference"]["reason"])
    if worse:
        out["reasons"].append(
            f"Every other method is significantly worse (paired bootstrap, p < {NOT_DIFFERENT_P})."
            if len(worse) == len(verdict) else
            f"Significantly worse (paired bootstrap, p < {NOT_DIFFERENT_P}): {', '.join(worse)}.")
    if untested:
        no_test = why_untested(quality["n_boot"], quality["n_pairs"]) or "the bootstrap gave no defined difference"
        out["reasons"].append(
            f"No paired test was run ({no_test}), so no method is called different from the best or tied with it."
            if len(untested) == len(verdict) else
            f"Not tested against it (the bootstrap gave no defined difference): {', '.join(untested)}.")
    out["best_per_cost"], reason = best_per_cost(best, tied, untested, cost, missing, exclude=set(every) - set(rows))
    out["reasons"].append(reason)
    out["reasons"].append(out["id_rule"]["reason"])
    return out


def reference(row: dict, best: str, best_row: dict) -> dict:
    """{"label", "verdict": "better" | "tied" | "worse" | None (no test), "reason"}: the reference row (MiniLM alone)
    against the best method on the model, from its paired difference to the best."""
    d, p = row["difference_to_best"], row["p"]
    said = f"{row['label']} (all-MiniLM-L6-v2 alone, a 22M sentence encoder that does not use this model)"
    numbers = f"{row['spearman']:.3f} against {best_row['spearman']:.3f} for {best}"
    if d is None or not _finite(d):
        return {"label": row["label"], "verdict": None, "reason": f"The reference {said} scores {numbers}."}
    interval = f", paired 95% interval {_ci(row['difference_ci'])}" if row.get("difference_ci") and \
        _ci(row["difference_ci"]) else ""
    verdict = _verdict(p)
    if verdict is None:
        return {"label": row["label"], "verdict": None,
                "reason": f"The reference {said} scores {numbers} ({d:+.3f}); no paired test was run, so neither is "
                          "called better."}
    if verdict == "worse" and d > 0:
        return {"label": row["label"], "verdict": "better",
                "reason": f"A 22M encoder beats every method on this model here: {said} scores {numbers} "
                          f"({d:+.3f}{interval}, p = {p:.2g}). Use it unless you need the decoder."}
    if verdict == "tied":
        return {"label": row["label"], "verdict": "tied",
                "reason": f"The reference {said} is not significantly different from the best ({numbers}, {d:+.3f}, "
                          f"p = {p:.2f}): it does as well at a fraction of the cost, so use it unless you need the "
                          "decoder."}
    return {"label": row["label"], "verdict": "worse",
            "reason": f"{best} beats the reference {said}: {numbers} ({d:+.3f}{interval}, p = {p:.2g})."}


def best_per_cost(best: str, tied: list, untested: list, cost: dict | None, missing: dict,
                  exclude: set = frozenset()) -> tuple[str | None, str]:
    """(the cheapest method as good as the best within the test's resolution, or None; the sentence). The best
    and the methods tied with it are the candidates; when a method not tested against the best is cheaper than
    the cheapest candidate, it might be as good, so the answer is unknown. `exclude`: rows that are not methods on
    the model (the reference), which are no candidates."""
    if cost is None:
        return None, f"Per unit of cost: unknown, since the cost section is missing: {why(missing, 'cost')}."
    ratio = {r["label"]: r["ratio"] for r in cost["rows"] if r["label"] != cost["baseline"] and r["label"] not in
             exclude}
    if best not in ratio:
        return None, f"Per unit of cost: unknown, since {best} is not in the cost table: {why(missing, 'cost')}."
    cheapest = min((k for k in [best, *tied] if k in ratio), key=lambda k: ratio[k])
    cheaper_untested = [k for k in untested if k in ratio and ratio[k] < ratio[cheapest]]
    if cheaper_untested:
        return None, (f"Per unit of cost: unknown: {', '.join(cheaper_untested)} cost less than {cheapest} but "
                      f"{'was' if len(cheaper_untested) == 1 else 'were'} not tested against the best, so none can "
                      "be called as good.")
    if cheapest != best:
        return cheapest, (f"Per unit of cost: {cheapest} ({ratio[cheapest]:.2f}x the plain forward, against "
                          f"{ratio[best]:.2f}x for {best}) is as good as the best within the test's resolution.")
    cheaper = any(r < ratio[best] for r in ratio.values())  # each one tested and worse, or returned above
    return best, (f"Per unit of cost: {best} itself ({ratio[best]:.2f}x the plain forward); "
                  + ("no cheaper method is statistically tied with it." if cheaper else
                     "no method measured costs less."))


def id_rule(layers: dict | None, missing: dict | None = None) -> dict:
    """{"trusted": True/False/None, "reason"}: the ID window against the layer map's best cell; trusted when it
    trails the best cell by at most TRUST_GAP or ranks in the best TRUST_RANK of the cells."""
    missing = missing or {}
    unknown = "Whether the ID rule can be trusted is unknown, since "
    if layers is None:
        return {"trusted": None, "reason": f"{unknown}the layers section is missing: {why(missing, 'layers')}."}
    m = layers.get("map")
    if m is None:
        return {"trusted": None, "reason": f"{unknown}the layer map is missing: {why(missing, 'layers')}."}
    window, best = m.get("id_window"), m.get("best")
    if not window or window.get("spearman") is None or not best:
        return {"trusted": None, "reason": f"{unknown}the ID window was not scored in the layer map."}
    n = len(m["cells"])
    rank, gap = window["rank_among_cells"], window["gap_to_best"]
    trusted = gap <= TRUST_GAP or rank <= max(1, math.ceil(TRUST_RANK * n))
    where = (f"The ID window (decoder layers {window['layers'][0]}-{window['layers'][-1]}) scores "
             f"{window['spearman']:.3f}, rank {rank} of {n} map cells, {against_best(gap)} "
             f"({best['start']}+{best['width']}, bias {best['bias']:g}: {best['spearman']:.3f})")
    verdict = ("so the ID rule can be trusted on this model" if trusted else
               "so the ID rule is NOT to be trusted on this model: use the map's best window instead")
    return {"trusted": bool(trusted), "reason": f"{where}; {verdict}."}


def against_best(gap: float) -> str:
    """The ID window's score against the map's best cell, in words: the window is not one of the map's cells, so it
    can score above the best of them (a negative gap), which "-0.001 below" said backwards."""
    if round(gap, 3) == 0:
        return "level with the best cell"
    return f"{abs(gap):.3f} {'below' if gap > 0 else 'above'} the best cell"


def why(missing: dict, section: str) -> str:
    """The report's reason for `section` being missing or partial, as a clause."""
    return str(missing.get(section) or "no reason was recorded").rstrip(".")


def _verdict(p) -> str | None:
    if p is None or not _finite(p):
        return None
    return "tied" if p >= NOT_DIFFERENT_P else "worse"


def _finite(v) -> bool:
    return v is not None and math.isfinite(v)


def _ci(ci) -> str:
    lo, hi = ci
    return "" if not (_finite(lo) and _finite(hi)) else f"[{lo:.3f}, {hi:.3f}]"
