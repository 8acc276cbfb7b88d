"""Vector helpers shared by methods, evaluation and geometry (numpy only, so light modules can use them)."""

from __future__ import annotations

import numpy as np

from analysis.core.errors import UserError

NORM_FLOOR = 1e-12  # a zero vector stays zero instead of becoming NaN


def l2_normalize(x, axis: int = -1) -> np.ndarray:
    """The project's one L2 normalisation: vectors along `axis` scaled to unit length, dtype kept."""
    x = np.asarray(x)
    return x / np.maximum(np.linalg.norm(x, axis=axis, keepdims=True), NORM_FLOOR)


def normalize(x) -> np.ndarray:
    """Rows of a (texts, dimensions) matrix scaled to unit length (float64); zero rows stay zero."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise UserError(f"Embeddings must be a (texts, dimensions) matrix, got shape {x.shape}.")
    return l2_normalize(x, axis=1)
