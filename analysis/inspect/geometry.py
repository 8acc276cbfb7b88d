"""Geometry of an embedding space: alignment and uniformity (Wang & Isola, 2020), anisotropy, 2-D maps.

All measures work on L2-normalised embeddings (they normalise their input, so raw readouts are fine):

* alignment  = mean ||f(x) - f(y)||^alpha over positive pairs (alpha = 2): 0 when paraphrases coincide,
  lower is better, at most 4 (antipodal pairs).
* uniformity = log mean exp(-t ||f(x_i) - f(x_j)||^2) over all pairs i < j (t = 2): 0 when every text has
  the same embedding, more negative = spread more evenly over the sphere.
* anisotropy = mean cosine similarity of two different texts (Ethayarajh, 2019): about 0 for an
  isotropic space, near 1 when all embeddings point into one narrow cone.

    from analysis.inspect.geometry import alignment, uniformity, positive_pairs, measure
    pos = positive_pairs(pairs)                 # gold >= 4 of 5 (STS-B) or >= 0.8 of 1 (Lee, demo pairs)
    g = measure(emb, pos.left_index, pos.right_index)   # emb: (n_texts, d) rows of pos.texts

Bootstrap intervals resample texts (uniformity, anisotropy) or positive pairs (alignment) with replacement.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.core.vectors import normalize
from analysis.eval.stats import bootstrap_mean_ci, percentile_ci

UMAP_NEIGHBOURS = 15  # umap-learn's default; clipped to n - 1 for small corpora





# ---- the three measures ----------------------------------------------------------------------------------
def alignment(x, y, alpha: float = 2) -> float:
    """Mean ||x_i - y_i||^alpha over the rows of two (n, d) arrays of positive pairs, after normalising."""
    return float(np.mean(_pair_distances(x, y, alpha)))


def uniformity(x, t: float = 2) -> float:
    """log mean over pairs i < j of exp(-t ||x_i - x_j||^2), after normalising the rows of (n, d) `x`."""
    k = _kernel(normalize(_at_least_two(x)), t)  # (n, n), zero diagonal
    n = k.shape[0]
    return float(np.log(k.sum() / (n * (n - 1))))  # sum over i != j counts each pair twice, as does n(n-1)


def anisotropy(x, n_pairs: int | None = None, seed: int = 0) -> float:
    """Mean cosine similarity of pairs of different rows of (n, d) `x`.

    With `n_pairs=None` the mean is exact over all n(n-1)/2 pairs, in O(n d) by the identity
    sum_{i != j} u_i.u_j = ||sum_i u_i||^2 - sum_i ||u_i||^2 for unit rows u. With `n_pairs` it is the mean
    over that many random pairs (i != j), drawn with `seed`.
    """
    u = normalize(_at_least_two(x))
    n = u.shape[0]
    if n_pairs is None:
        total = u.sum(axis=0)  # (d,)
        return float((total @ total - (u * u).sum()) / (n * (n - 1)))
    if n_pairs < 1:
        raise UserError(f"n_pairs must be a positive number of pairs, got {n_pairs}.")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, size=n_pairs)
    j = (i + rng.integers(1, n, size=n_pairs)) % n  # a uniform j != i
    return float(np.mean(np.einsum("pd,pd->p", u[i], u[j])))


# ---- bootstrap ------------------------------------------------------------------------------------------------
def bootstrap_pairs_ci(matrix, transform: Callable[[np.ndarray], np.ndarray] = lambda m: m, n_boot: int = 1000,
                       seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Interval of transform(mean over pairs of different texts of `matrix`) under resampling texts.

    `matrix` is (n, n), symmetric, any diagonal. A resample draws n texts with replacement, i.e. counts c
    (multinomial); a text drawn twice must not be paired with itself (its distance 0 would pull the
    estimate towards "collapsed"), so each replicate is the mean over pairs of different original texts:
    sum_{i != j} c_i c_j M_ij / (n^2 - sum_i c_i^2).
    """
    m = np.array(matrix, dtype=np.float64)
    np.fill_diagonal(m, 0.0)
    n = m.shape[0]
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(np.float64)  # (n_boot, n)
    num = np.einsum("bi,bi->b", counts @ m, counts)  # (n_boot,) c^T M c
    den = n * n - (counts**2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return percentile_ci(transform(num / den), level)


# ---- positive pairs from labelled data ------------------------------------------------------------------
@dataclass(frozen=True)
class PositivePairs:
    """Rows of `texts` that form positive pairs: texts[left_index[k]] ~ texts[right_index[k]]."""

    texts: list[str]  # every text of the pair set once (uniformity and anisotropy use all of them)
    left_index: np.ndarray  # (n_pos,) int
    right_index: np.ndarray  # (n_pos,) int
    threshold: float  # gold score a pair needed to count as positive
    rule: str  # the threshold in words, for captions and reports


def positive_threshold(scores) -> tuple[float, str]:
    """Gold score from which a pair counts as a paraphrase, relative to the score scale.

    STS-B scores run 0-5 and Wang & Isola-style evaluations take gold >= 4 ("mostly equivalent"). Scores in
    [0, 1] (the Lee corpus's mean human ratings, the demo pairs' 0/1 labels) use the same fraction, 0.8: for
    Lee that keeps the 18 most highly rated of 1225 document pairs, for the demo set its 10 paraphrases.
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.size and s.max() > 1.0:
        return 4.0, "gold >= 4 of 5"
    return 0.8, "gold >= 0.8 of 1 (4 of 5 rescaled)"


def positive_pairs(pairs, threshold: float | None = None, marked=None) -> PositivePairs:
    """Positive pairs of a `Pairs` set: gold >= threshold (default: `positive_threshold`), or, when
    `marked` (a boolean mask or index list over the pairs) is given, exactly the pairs the user marked."""
    texts = pairs.unique_texts()
    row = {t: i for i, t in enumerate(texts)}
    if marked is not None:
        mask = np.zeros(len(pairs), dtype=bool)
        marked = np.asarray(marked)
        if marked.dtype == bool:
            if marked.shape != mask.shape:
                raise UserError(f"The mark column has {marked.size} entries for {len(pairs)} pairs.")
            mask = marked
        else:
            mask[marked.astype(int)] = True
        threshold, rule = float("nan"), "pairs marked by the user"
    else:
        if threshold is None:
            threshold, rule = positive_threshold(pairs.scores)
        else:
            rule = f"gold >= {threshold:g}"
        mask = pairs.scores >= threshold
    keep = np.flatnonzero(mask)
    if len(keep) < 2:
        raise UserError(f"{pairs.name}: only {len(keep)} pair(s) count as positive ({rule}); alignment needs at "
                        "least 2: choose a larger set or a lower threshold.")
    left = np.array([row[pairs.left[k]] for k in keep], dtype=np.int64)
    right = np.array([row[pairs.right[k]] for k in keep], dtype=np.int64)
    return PositivePairs(texts, left, right, float(threshold), rule)


# ---- everything at once ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Geometry:
    alignment: float
    alignment_ci: tuple[float, float]
    uniformity: float
    uniformity_ci: tuple[float, float]
    anisotropy: float
    anisotropy_ci: tuple[float, float]
    n_texts: int
    n_pairs: int


def measure(emb, left_index, right_index, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
            alpha: float = 2, t: float = 2) -> Geometry:
    """Alignment over the positive pairs (rows left_index[k], right_index[k] of `emb`), uniformity and
    anisotropy over all rows, each with a bootstrap interval (`n_boot=0`: intervals are NaN)."""
    u = normalize(_at_least_two(emb))
    budgets.check("map_points", len(u), "the number of texts for this all-pairs measure (an (n, n) matrix)")
    budgets.check("bootstrap", n_boot, "the number of bootstrap replicates")
    left_index, right_index = np.asarray(left_index), np.asarray(right_index)
    dist = _pair_distances(u[left_index], u[right_index], alpha)  # (n_pos,)
    k = _kernel(u, t)  # (n, n)
    cos = u @ u.T  # (n, n)
    nan = (float("nan"), float("nan"))
    return Geometry(
        alignment=float(dist.mean()),
        alignment_ci=bootstrap_mean_ci(dist, n_boot, seed, level) if n_boot else nan,
        uniformity=float(np.log(k.sum() / (len(u) * (len(u) - 1)))),
        uniformity_ci=bootstrap_pairs_ci(k, np.log, n_boot, seed, level) if n_boot else nan,
        anisotropy=float((cos.sum() - np.trace(cos)) / (len(u) * (len(u) - 1))),
        anisotropy_ci=bootstrap_pairs_ci(cos, n_boot=n_boot, seed=seed, level=level) if n_boot else nan,
        n_texts=len(u),
        n_pairs=len(dist),
    )


def anisotropy_by_layer(backbone, method, texts, *, batch_size: int = 16, progress=None) -> np.ndarray:
    """Anisotropy of the method's readout at every hidden state 0..L: (L+1,) from one pass per batch.

    The readout (pooling, prompt) is the method's own; only the layer varies. Hidden state 0 under a prompt
    with last-token pooling is the same token embedding for every text, so its anisotropy is exactly 1.
    """
    per_layer = method.encode_layers(backbone, texts, "all", batch_size=batch_size, progress=progress)
    return anisotropy_of_layers(per_layer)


def anisotropy_of_layers(per_layer) -> np.ndarray:
    """(n, L+1, d) readouts -> (L+1,) anisotropy per layer."""
    per_layer = np.asarray(per_layer)
    return np.array([anisotropy(per_layer[:, l]) for l in range(per_layer.shape[1])])


# ---- 2-D maps ---------------------------------------------------------------------------------------------------
def embedding_map(emb, kind: str = "umap", seed: int = 0, n_neighbors: int = UMAP_NEIGHBOURS) -> np.ndarray:
    """(n, 2) coordinates of the normalised embeddings: PCA (first two components) or UMAP (cosine metric).

    Both are reproducible: PCA is deterministic (scikit-learn fixes component signs), UMAP gets
    `random_state=seed`, which also makes it single-threaded. n_neighbors is clipped to n - 1.
    """
    u = normalize(emb)
    n = len(u)
    if n < 3:
        raise UserError(f"A map needs at least 3 texts, got {n}.")
    budgets.check("map_points", n, "the number of points of one map")
    if kind == "pca":
        from sklearn.decomposition import PCA  # lazy: keeps scipy, sklearn off the pages' and the command line's start

        xy = PCA(n_components=2, svd_solver="full").fit_transform(u)
        return np.ascontiguousarray(xy, dtype=np.float32)
    if kind != "umap":
        raise UserError(f"Unknown map kind {kind!r}: choose 'umap' or 'pca'.")
    import umap  # umap-learn; slow to import (numba), so only when asked

    # Spectral initialisation needs a connected graph of a few points; tiny corpora start at random.
    init = "spectral" if n > 2 * n_neighbors else "random"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "n_jobs overridden by random_state", tiny-graph notes
        reducer = umap.UMAP(n_components=2, n_neighbors=max(2, min(n_neighbors, n - 1)), metric="cosine",
                            random_state=seed, init=init)
        xy = reducer.fit_transform(u.astype(np.float32))
    return np.ascontiguousarray(xy, dtype=np.float32)


# ---- helpers ----------------------------------------------------------------------------------------------------
def _at_least_two(x) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2 or len(x) < 2:
        raise UserError(f"This measure needs at least 2 embeddings, got shape {x.shape}.")
    return x


def _pair_distances(x, y, alpha: float) -> np.ndarray:
    x, y = normalize(x), normalize(y)
    if x.shape != y.shape or len(x) == 0:
        raise UserError(f"Positive pairs need two equally long, non-empty lists of embeddings: {x.shape} vs {y.shape}.")
    return np.linalg.norm(x - y, axis=1) ** alpha  # (n_pairs,)


def _kernel(u: np.ndarray, t: float) -> np.ndarray:
    """exp(-t ||u_i - u_j||^2) for unit rows, with ||u_i - u_j||^2 = 2 - 2 u_i.u_j; zero diagonal."""
    d2 = np.clip(2.0 - 2.0 * (u @ u.T), 0.0, 4.0)  # (n, n); clip rounding below 0
    k = np.exp(-t * d2)
    np.fill_diagonal(k, 0.0)
    return k
