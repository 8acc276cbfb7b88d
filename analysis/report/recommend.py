"""The report's answer, each part with its reason: the best method, the best per unit of cost, whether
KV-Embedding's intrinsic-dimension rule is to be trusted on this model, and what is not significantly different
from the best. Pure: it reads the measured sections and computes nothing new.
"""

from __future__ import annotations

import math

from analysis.report.sections import NOT_DIFFERENT_P

TRUST_GAP = 0.01  # Spearman the ID window may trail the map's best cell by and still be "as good"
TRUST_RANK = 0.25  # or: it ranks within the best quarter of the map's cells


def recommend(quality: dict, cost: dict | None, layers: dict | None) -> dict:
    rows = {r["label"]: r for r in quality["methods"]}
    best = quality["best"]
    tied = [k for k, r in rows.items() if k != best and r["p"] is not None and math.isfinite(r["p"])
            and r["p"] >= NOT_DIFFERENT_P]
    out = {"best": best, "not_different": tied, "reasons": []}
    b = rows[best]
    out["reasons"].append(f"{best} has the highest Spearman ({b['spearman']:.3f}, 95% interval "
                          f"{_ci(b['ci'])}) on {quality['n_pairs']} pairs.")
    if tied:
        out["reasons"].append(f"Not significantly different from it (paired bootstrap, p >= {NOT_DIFFERENT_P}): "
                              + ", ".join(f"{k} ({rows[k]['difference_to_best']:+.3f}, p = {rows[k]['p']:.2f})"
                                          for k in tied) + ".")
    else:
        out["reasons"].append(f"Every other method is significantly worse (paired bootstrap, p < {NOT_DIFFERENT_P}).")
    out["best_per_cost"] = None
    if cost is not None:
        ratio = {r["label"]: r["ratio"] for r in cost["rows"]}
        candidates = [k for k in [best, *tied] if k in ratio]
        cheapest = min(candidates, key=lambda k: ratio[k]) if candidates else None
        out["best_per_cost"] = cheapest
        if cheapest is not None and cheapest != best:
            out["reasons"].append(f"Per unit of cost: {cheapest} ({ratio[cheapest]:.2f}x the plain forward, against "
                                  f"{ratio[best]:.2f}x for {best}) is as good as the best within the test's "
                                  "resolution.")
        elif cheapest is not None:
            out["reasons"].append(f"Per unit of cost: {best} itself ({ratio[best]:.2f}x the plain forward); no "
                                  "cheaper method is statistically tied with it.")
    else:
        out["reasons"].append("Per unit of cost: unknown (the cost section is missing).")
    out["id_rule"] = id_rule(layers)
    out["reasons"].append(out["id_rule"]["reason"])
    return out


def id_rule(layers: dict | None) -> dict:
    """{"trusted": True/False/None, "reason"}: the ID window against the layer map's best cell."""
    window = (layers or {}).get("map", {}).get("id_window") if layers else None
    best = (layers or {}).get("map", {}).get("best") if layers else None
    if not window or window.get("spearman") is None or not best:
        return {"trusted": None, "reason": "Whether the ID rule can be trusted is unknown: the layer map is missing."}
    n = len(layers["map"]["cells"])
    rank, gap = window["rank_among_cells"], window["gap_to_best"]
    trusted = gap <= TRUST_GAP or rank <= max(1, math.ceil(TRUST_RANK * n))
    where = (f"The ID window (decoder layers {window['layers'][0]}-{window['layers'][-1]}) scores "
             f"{window['spearman']:.3f}, rank {rank} of {n} map cells, {gap:.3f} below the best cell "
             f"({best['start']}+{best['width']}, bias {best['bias']:g}: {best['spearman']:.3f})")
    verdict = ("so the ID rule can be trusted on this model" if trusted else
               "so the ID rule is NOT to be trusted on this model: use the map's best window instead")
    return {"trusted": bool(trusted), "reason": f"{where}; {verdict}."}


def _ci(ci) -> str:
    lo, hi = ci
    return "n/a" if not (math.isfinite(lo) and math.isfinite(hi)) else f"[{lo:.3f}, {hi:.3f}]"
