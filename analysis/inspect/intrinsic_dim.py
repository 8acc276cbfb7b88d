"""Intrinsic dimension (ID) per layer with TwoNN, and KV-Embedding's rules for picking layers from it.

Layer convention (as everywhere in this tool): hidden state 0 is the embedding output; decoder layer l
(0-based) produces hidden state l+1; hidden state L is the final layer after the final norm. An ID trajectory is
indexed by hidden state 0..L. KV re-routing happens inside decoder layers, and the pair re-routed at decoder
layer l is a projection of hidden state l (that layer's input), so a window over hidden states s..e becomes the
re-routing set "decoder layers s..e".

    est = twonn(points)                                  # Estimate(value, n_unique, reason)
    df = trajectory(backbone, method, texts)             # one forward pass per batch for all layers
    sel = select_window(df["id"].to_numpy(), L)          # Selection(rule, start, end, layers, reason)

Selection rules (KV-Embedding, Tang & Yang 2026), over the candidate hidden states 1..L-1 (the inputs of decoder
layers 1..L-1; decoder layer 0 reads bare token embeddings, whose final-token key knows nothing of the text):
* "u-shape": the trajectory has a CLEAR U-SHAPE, tested explicitly as: among the candidates there is exactly one
  interior local minimum whose prominence (how far the curve rises on BOTH sides before it meets a lower value)
  is at least PROMINENCE = 25% of the ID range, and it is the global minimum l*. Window: l* .. min(L-1, l* + w),
  w = floor(0.1 L) by the paper's Eq. 4 as this project read it (`width="eq4"`, the default: 4 layers on SmolLM2's
  30), or w = round(L / 4) - 1 (`width="reported"`): the paper's own windows are 7-10 layers on its 28-36-layer
  backbones, about a quarter of the depth, wider than its Eq. 4 gives them (`WIDTHS`, `window_width`; both readings
  this project's, not verified against the full text).
* "several-minima": otherwise (no clear U), the lowest-ID layer l* among the middle-to-late candidates, i.e.
  excluding the first floor(0.2 L) hidden states; window l* .. min(L-1, l* + w).
* "flat": the ID range is below FLAT = 5% of the median ID, so the estimates carry no usable minimum; the
  window is computed as for "several-minima" and the reason says the choice is arbitrary.
* "undefined": fewer than 3 candidates have a defined ID; no window.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Callable, NamedTuple

import numpy as np
import pandas as pd

from analysis.core.errors import UserError
from analysis.core.tokens import check_texts
from analysis.core.versions import source_digest
from analysis.data.corpora import demo_texts, lee_documents, polarity

MIN_POINTS = 10  # TwoNN below this many distinct points is noise, so the estimate is reported as undefined
PROMINENCE = 0.25  # fraction of the ID range a minimum must rise on both sides to count (clear U-shape test)
FLAT = 0.05  # ID range below this fraction of the median ID = flat trajectory
WIDTH_FRACTION, EXCLUDE_FRACTION = 0.1, 0.2  # the paper's Eq. 4: floor(0.1 L) window and floor(0.2 L) exclusion
REPORTED_SHARE = 0.25  # the paper's reported windows (7-10 layers of 28-36) span about a quarter of the depth
WIDTHS = ("eq4", "reported")  # how wide the window after the minimum is: Eq. 4's rule, or the windows it reports


def window_width(rule: str, n_layers: int) -> int:
    """w, the layers the window spans after its first (the window is l* .. l* + w): floor(0.1 L) by Eq. 4, or
    round(L / 4) - 1 so that the window holds about a quarter of the depth like the paper's reported windows."""
    if rule == "eq4":
        return int(np.floor(WIDTH_FRACTION * n_layers))
    if rule == "reported":
        return max(0, int(np.floor(REPORTED_SHARE * n_layers + 0.5)) - 1)  # round half up: 30 -> 8 layers
    raise ValueError(f"unknown window width rule {rule!r}; choose one of {WIDTHS}")


class Estimate(NamedTuple):
    value: float | None  # None when undefined
    n_unique: int  # distinct points that remained after removing duplicates
    reason: str | None  # why the value is undefined


# ---- TwoNN ---------------------------------------------------------------------------------------------------
def _unique(points: np.ndarray) -> np.ndarray:
    return np.unique(np.asarray(points, dtype=np.float64), axis=0)


def _distances(points: np.ndarray) -> np.ndarray:
    """(m, d) -> (m, m) Euclidean distances, self-distances set to +inf."""
    sq = (points**2).sum(1)
    dist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * points @ points.T, 0.0))  # (m, m)
    np.fill_diagonal(dist, np.inf)
    return dist


def _twonn_from_distances(dist: np.ndarray) -> Estimate:
    """TwoNN (scikit-dimension, Facco et al. 2017) from a distance matrix of distinct points."""
    with warnings.catch_warnings():  # skdim's FisherS module turns every warning off, process-wide, on import
        from skdim.id import TwoNN  # lazy: keeps scipy, skdim, sklearn off the pages' and the command line's start

    m = dist.shape[0]
    if m < MIN_POINTS:
        return Estimate(None, m, f"only {m} distinct point(s); TwoNN needs at least {MIN_POINTS}")
    r12 = np.partition(dist, 1, axis=1)[:, :2]  # (m, 2): first and second nearest-neighbour distances
    if not np.all(r12[:, 0] > 0):  # numerically coincident points the exact deduplication could not see
        keep = r12[:, 0] > 0
        r12 = r12[keep]
        if len(r12) < MIN_POINTS:
            return Estimate(None, int(keep.sum()), "too many (near-)coincident points")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = float(TwoNN(dist=True).fit(r12).dimension_)
    except ValueError as err:
        return Estimate(None, m, f"TwoNN failed: {err}")
    if not np.isfinite(value):
        return Estimate(None, m, "TwoNN returned a non-finite estimate")
    return Estimate(value, m, None)


def twonn(points) -> Estimate:
    """TwoNN intrinsic dimension of a point cloud (n, d), duplicates removed first.

    Identical points (e.g. the final-token state of a fixed prompt at hidden state 0) have a zero
    nearest-neighbour distance and would make TwoNN return NaN: they are removed and `n_unique` says how many
    points remained. Returns Estimate(value or None, n_unique, reason or None)."""
    points = np.asarray(points)
    if points.ndim != 2:
        raise ValueError(f"points must be (n, d), got shape {points.shape}")
    if not np.all(np.isfinite(points)):
        return Estimate(None, 0, "the points contain NaN or infinity")
    uniq = _unique(points)
    return _twonn_from_distances(_distances(uniq))


def bootstrap_twonn(points, n_boot: int, seed: int = 0, level: float = 0.9) -> tuple[Estimate, float, float]:
    """Estimate plus a percentile band from `n_boot` resamples (with replacement) of the distinct points.
    A resample's repeated points are removed again before TwoNN (a duplicate carries no neighbour
    information), so each resample holds about 63% of the distinct points. TwoNN depends a little on the sample
    size, so the band describes the estimator at ~63% of the points: it is wider than the full-sample
    uncertainty and can sit slightly off the full-sample value (seen on real layers: up to ~1 unit below)."""
    points = np.asarray(points)
    uniq = _unique(points)
    dist = _distances(uniq)
    est = _twonn_from_distances(dist)
    if est.value is None or n_boot <= 0:
        return est, np.nan, np.nan
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_boot):
        pick = np.unique(rng.integers(0, len(uniq), len(uniq)))
        b = _twonn_from_distances(dist[np.ix_(pick, pick)])
        if b.value is not None:
            values.append(b.value)
    if len(values) < 2:
        return est, np.nan, np.nan
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return est, float(lo), float(hi)


# ---- trajectories ----------------------------------------------------------------------------------------------
READOUTS = ("last", "mean")


def layer_states(backbone, method, texts, readout: str = "last", *, batch_size: int = 16,
                 progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """(n, L+1, d) readouts of every hidden state in one pass per batch, through `method.encode_layers`, with
    the method's prompt and intervention but the pooling replaced by `readout` ("last" token or "mean")."""
    if readout not in READOUTS:
        raise UserError(f"readout must be one of {READOUTS}, not {readout!r}")
    return method.encode_layers(backbone, texts, "all", batch_size=batch_size, progress=progress, readout=readout)


def trajectory_from_states(states: np.ndarray, *, bootstrap: int = 0, seed: int = 0,
                           progress: Callable[[int, int], None] | None = None):
    """(n, L+1, d) states -> DataFrame(layer, id, lo, hi, n_points, n_unique, defined, reason)."""
    rows = []
    n_layers = states.shape[1]
    for k in range(n_layers):
        est, lo, hi = bootstrap_twonn(states[:, k], bootstrap, seed + k)
        rows.append({"layer": k, "id": np.nan if est.value is None else est.value, "lo": lo, "hi": hi,
                     "n_points": states.shape[0], "n_unique": est.n_unique, "defined": est.value is not None,
                     "reason": est.reason or ""})
        if progress is not None:
            progress(k + 1, n_layers)
    return pd.DataFrame(rows)


def trajectory(backbone, method, texts, readout: str = "last", *, bootstrap: int = 20, seed: int = 0,
               batch_size: int = 16, progress: Callable[[int, int], None] | None = None):
    """ID of every hidden state 0..L over `texts`.

    Returns a DataFrame with one row per hidden state: layer, id (NaN if undefined), lo/hi (90% bootstrap band,
    NaN without bootstrap), n_points, n_unique (after removing duplicates), defined, reason (why undefined).
    `progress(done, total)` covers the forward passes (first 80%) and the estimates (last 20%).
    """
    texts = check_texts(texts)
    n = len(texts)
    total = 5 * n  # forward ~ 4/5 of the work
    fwd = (lambda d, t: progress(4 * d, total)) if progress else None
    states = layer_states(backbone, method, texts, readout, batch_size=batch_size, progress=fwd)
    est = (lambda d, t: progress(4 * n + round(n * d / t), total)) if progress else None
    return trajectory_from_states(states, bootstrap=bootstrap, seed=seed, progress=est)


COLUMNS = ("layer", "id", "lo", "hi", "n_points", "n_unique", "defined", "reason")


def to_arrays(df) -> dict[str, np.ndarray]:
    """A trajectory DataFrame as plain arrays (no object dtype), for the compute cache."""
    return {c: (df[c].to_numpy().astype(str) if c == "reason" else df[c].to_numpy()) for c in COLUMNS}


def from_arrays(arrays):
    return pd.DataFrame({c: arrays[c] for c in COLUMNS})


# ---- selection -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Selection:
    rule: str  # "u-shape", "several-minima", "flat" or "undefined"
    start: int | None  # first hidden state of the window (= first decoder layer re-routed)
    end: int | None  # last one, inclusive
    layers: tuple[int, ...]  # decoder layers to re-route
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


def _interior_minima(y: np.ndarray) -> list[tuple[int, float]]:
    """(index, prominence) of each interior local minimum of y (plateaus count once, at their first index)."""
    from scipy.signal import find_peaks  # lazy: keeps scipy off the pages' and the command line's start

    peaks, props = find_peaks(-y, prominence=0)
    return [(int(i), float(p)) for i, p in zip(peaks, props["prominences"])]


def select_window(ids, n_layers: int, width: str = "eq4") -> Selection:
    """Pick the re-routing window from an ID trajectory over hidden states 0..L (NaN/None = undefined).
    The rules and the clear-U-shape test are in this module's docstring; `width` is one of `WIDTHS`."""
    L = int(n_layers)
    ids = np.array([np.nan if v is None else float(v) for v in ids], dtype=np.float64)
    if len(ids) != L + 1:
        raise ValueError(f"expected {L + 1} values (hidden states 0..{L}), got {len(ids)}")
    rule_width = width
    width, exclude = window_width(width, L), int(np.floor(EXCLUDE_FRACTION * L))
    cand = np.arange(1, L)  # hidden states 1..L-1 = inputs of decoder layers 1..L-1
    y = ids[cand]
    ok = np.isfinite(y)
    if ok.sum() < 3:
        return Selection("undefined", None, None, (), f"only {int(ok.sum())} layer(s) have a defined ID; need 3")

    def window(best: int, rule: str, reason: str) -> Selection:
        end = min(L - 1, best + width)
        return Selection(rule, best, end, tuple(range(best, end + 1)), reason)

    yi = np.interp(np.arange(len(y)), np.flatnonzero(ok), y[ok])  # undefined layers bridged for the shape test
    lo, hi = float(y[ok].min()), float(y[ok].max())
    span, median = hi - lo, float(np.median(y[ok]))
    late = cand >= max(1, exclude)

    def late_min() -> int:
        yl = np.where(ok & late, y, np.inf)
        return int(cand[int(np.argmin(yl))]) if np.isfinite(yl).any() else int(cand[int(np.nanargmin(y))])

    if span < FLAT * abs(median):
        best = late_min()
        return window(best, "flat", f"ID varies by only {span:.2f} (< {FLAT:.0%} of its median {median:.1f}): "
                      f"no usable minimum, so the window after the first {exclude} layers at the lowest "
                      f"estimate ({best}) is arbitrary")
    minima = [(int(cand[i]), p) for i, p in _interior_minima(yi) if p >= PROMINENCE * span]
    global_min = int(cand[int(np.nanargmin(y))])
    if len(minima) == 1 and minima[0][0] == global_min:
        return window(global_min, "u-shape", f"clear U-shape: one prominent minimum at hidden state {global_min} "
                      f"(rises {minima[0][1]:.1f} on both sides, >= {PROMINENCE:.0%} of the ID range "
                      f"{span:.1f}); window {global_min}..{global_min}+{_WIDTH_TEXT[rule_width].format(L=L)}")
    best = late_min()
    found = ", ".join(str(l) for l, _ in minima) or "none interior"
    return window(best, "several-minima", f"no clear U-shape (prominent minima: {found}); lowest ID after "
                  f"excluding the first floor(0.2*{L})={exclude} hidden states is at {best}")


_WIDTH_TEXT = {"eq4": "floor(0.1*{L})",
               "reported": "round({L}/4)-1 (about a quarter of the depth, as the paper's reported windows)"}


# ---- 'auto' for KV-Embedding ---------------------------------------------------------------------------------
AUTO_DESCRIPTION = ("the ID trajectory of final-token states (prompt only, no re-routing) over the built-in texts: "
                    "112 demo sentences, the 50 Lee documents and 200 polarity sentences (362 texts)")
_AUTO: dict[tuple, tuple] = {}  # in-memory memo: (model, method, params, code) -> (Selection, ids)


def auto_corpus() -> list[str]:
    return list(dict.fromkeys(demo_texts("all").texts + lee_documents().texts + polarity().texts))


def auto_trajectory(backbone, prompt_method, progress: Callable[[int, int], None] | None = None
                    ) -> tuple[Selection, list[float | None]]:
    """(Selection, ID per hidden state 0..L, None = undefined) behind KV-Embedding's `layers=auto`: AUTO_DESCRIPTION's
    trajectory under `prompt_method` (the method's prompt without re-routing), computed here, without touching
    the disk. `cache.auto_window` keeps it in the store; this function only remembers it for the process."""
    code = source_digest([__name__, type(prompt_method).__module__])  # the code that computes the window
    memo = (backbone.identity, prompt_method.name, repr(prompt_method.params), code)
    if memo not in _AUTO:
        df = trajectory(backbone, prompt_method, auto_corpus(), "last", bootstrap=0, progress=progress)
        sel = select_window(df["id"].to_numpy(), backbone.facts.n_layers, width_rule(prompt_method))
        if not sel.layers:
            raise UserError(f"layers=auto: no window could be chosen ({sel.reason}); give the layers explicitly.")
        _AUTO[memo] = (sel, [None if not np.isfinite(v) else float(v) for v in df["id"]])
    return _AUTO[memo]


def width_rule(method) -> str:
    """The window-width rule a method asks for (KV-Embedding's `width`; Eq. 4's for a method without one)."""
    return getattr(method.params, "width", "eq4")


def auto_window(backbone, prompt_method, progress: Callable[[int, int], None] | None = None) -> Selection:
    """The window KV-Embedding's `layers=auto` uses: `select_window` on AUTO_DESCRIPTION's trajectory."""
    return auto_trajectory(backbone, prompt_method, progress)[0]


def window_record(sel: Selection, ids) -> tuple[dict[str, np.ndarray], dict]:
    """(arrays, meta) of a window for the compute cache: the trajectory as arrays, the selection as meta."""
    arrays = {"ids": np.array([np.nan if v is None else v for v in ids], dtype=np.float64)}
    return arrays, {**sel.as_dict(), "layers": list(sel.layers), "corpus": AUTO_DESCRIPTION}


def window_from_record(arrays, meta, n_layers: int, width: str = "eq4") -> tuple[Selection, list[float | None]]:
    """Inverse of `window_record`. Raises ValueError unless the stored selection is exactly what the rules (with the
    `width` rule) pick from the stored trajectory (a hand-edited or damaged record must be recomputed, never
    trusted)."""
    ids = np.asarray(arrays["ids"], dtype=np.float64)
    if ids.shape != (n_layers + 1,):
        raise ValueError(f"window record has {ids.shape} IDs for {n_layers + 1} hidden states")
    expected = select_window(ids, n_layers, width)
    layers = meta.get("layers")
    if not isinstance(layers, list) or not all(type(l) is int for l in layers):
        raise ValueError(f"window record: layers {layers!r} are not a list of layer numbers")
    stored = Selection(meta.get("rule"), meta.get("start"), meta.get("end"), tuple(layers), meta.get("reason"))
    if stored != expected or not expected.layers:
        raise ValueError("window record does not match the rules applied to its own trajectory")
    return expected, [None if not np.isfinite(v) else float(v) for v in ids]
