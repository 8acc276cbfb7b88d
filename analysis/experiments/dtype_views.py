"""The inspection views that differentiate or trace, computed in bfloat16 and in float32 on the same inputs, each
with the agreement it must reach to run in bfloat16 under `--dtype auto` (the `dtype` experiment's second table).

- sensitivity: per-token Jacobian norms of the mean and last-token readouts (`inspect.sensitivity`) on the view's
  sample text: the rank correlation of the two precisions' norms must be at least 0.95, so the view's ordering of
  tokens is the same;
- attention: KV-Embedding's attention mass on its re-routed prefix per decoder layer (the Attention view) on a few
  sentences: the largest difference must be at most 0.02 (masses lie in [0, 1]);
- intrinsic dimension: the TwoNN trajectory over 200 sentences at the last token (the ID view, and the window
  `layers=auto` picks): the window must be the same and no layer's ID may move by more than 5%.
"""

from __future__ import annotations

import numpy as np
from analysis.report.sections import prefix_mass

ID_TEXTS, ATTENTION_TEXTS = 200, 8


def compare_views(compute, fp32, bf16, pairs) -> dict:
    """{view: {"what", "agreement", "tolerance", "dtype"}} for the three views on these two backbones."""
    texts = pairs.unique_texts()
    window = compute.window(fp32)[0].layers  # KV-Embedding's layers=auto window, the same for both precisions
    return {"sensitivity": _sensitivity(fp32, bf16),
            "attention": _attention(fp32, bf16, texts[:ATTENTION_TEXTS], window),
            "intrinsic dimension": _intrinsic(fp32, bf16, texts[:ID_TEXTS])}


def _sensitivity(fp32, bf16) -> dict:
    from analysis.inspect.sensitivity import SAMPLE_TEXT, jacobian_norms  # lazy: torch stays off `measure --help`
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start

    norms = {d: jacobian_norms(b, get_method("mean"), SAMPLE_TEXT, probes=8) for d, b in (("32", fp32), ("16", bf16))}
    rho = min(_rank(norms["32"].last, norms["16"].last), _rank(norms["32"].mean, norms["16"].mean))
    return _view("Jacobian norms per token (mean and last-token readouts)", f"rank correlation {rho:.3f}", ">= 0.95",
                 rho >= 0.95)


def _rank(a, b) -> float:
    from scipy.stats import spearmanr  # lazy: scipy stays off `measure --help`

    ok = np.isfinite(a) & np.isfinite(b)
    return float(spearmanr(np.log(a[ok]), np.log(b[ok])).statistic)


def _attention(fp32, bf16, texts, window) -> dict:
    from analysis.methods import get_method  # lazy: torch stays off `measure --help`
    kv = get_method("kv_embedding")
    mass = {d: np.asarray(prefix_mass(b, kv.with_window(b, window), texts)["mass"])
            for d, b in (("32", fp32), ("16", bf16))}
    gap = float(np.max(np.abs(mass["32"] - mass["16"])))
    return _view("attention mass on KV-Embedding's prefix per layer", f"largest difference {gap:.4f}", "<= 0.02",
                 gap <= 0.02)


def _intrinsic(fp32, bf16, texts) -> dict:
    from analysis.inspect.intrinsic_dim import select_window, trajectory  # lazy: torch stays off `measure --help`
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start

    ids = {d: trajectory(b, get_method("last"), texts, "last", bootstrap=0)["id"].to_numpy(dtype=float)
           for d, b in (("32", fp32), ("16", bf16))}
    L = fp32.facts.n_layers
    same = select_window(ids["32"], L).layers == select_window(ids["16"], L).layers
    ok = np.isfinite(ids["32"]) & np.isfinite(ids["16"])
    moved = float(np.max(np.abs(ids["16"][ok] - ids["32"][ok]) / np.abs(ids["32"][ok])))
    return _view("TwoNN intrinsic dimension per layer and the window it picks",
                 f"{'same' if same else 'another'} window, largest change {moved:.1%}", "same window, <= 5%",
                 same and moved <= 0.05)


def _view(what: str, agreement: str, tolerance: str, ok: bool) -> dict:
    return {"what": what, "agreement": agreement, "tolerance": tolerance, "dtype": "bfloat16" if ok else "float32"}
