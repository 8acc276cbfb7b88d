"""A classification probe on frozen embeddings: logistic regression under stratified k-fold cross-validation, for
small labelled sets (polarity, topics, a user's file) where no train/test split exists. Not MTEB's protocol (that
is `analysis.eval.classification`, for Banking77): every text is predicted once, out of fold, after standardising
the features.

    from analysis.eval.probe import classification_probe
    p = classification_probe(emb, labels)       # ProbeResult(accuracy, std, ci, folds, n, n_classes, majority, correct)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from analysis.core.errors import UserError
from analysis.eval.stats import bootstrap_mean_ci


@dataclass(frozen=True)
class ProbeResult:
    accuracy: float  # mean over folds
    std: float  # standard deviation over folds
    ci: tuple[float, float]  # bootstrap interval of the out-of-fold accuracy (texts resampled)
    folds: int
    n: int
    n_classes: int
    majority: float  # accuracy of always answering the most frequent label
    correct: np.ndarray  # (n,) bool: each text's out-of-fold prediction was right (what a paired comparison resamples)


def classification_probe(emb, labels, *, folds: int = 5, seed: int = 0, n_boot: int = 1000,
                         level: float = 0.95) -> ProbeResult:
    """Logistic regression on frozen embeddings, stratified `folds`-fold cross-validation.

    Features are standardised first: embeddings of a decoder are anisotropic (cosines near 1), so the
    label may live in directions of small variance that an L2 penalty on raw features would flatten.
    """
    x = np.asarray(emb, dtype=np.float64)
    y = np.asarray([str(v) for v in labels])
    if len(x) != len(y):
        raise UserError(f"{len(x)} embeddings but {len(y)} labels.")
    classes, counts = np.unique(y, return_counts=True)
    if len(classes) < 2:
        raise UserError("A classification probe needs at least 2 different labels.")
    if counts.min() < folds:
        rare = classes[counts.argmin()]
        raise UserError(f"Label {rare!r} has only {counts.min()} text(s); {folds}-fold cross-validation needs at "
                        f"least {folds} of each label.")
    correct = np.zeros(len(y), dtype=bool)
    accs = []
    for train, test in StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(x, y):
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        clf.fit(x[train], y[train])
        correct[test] = clf.predict(x[test]) == y[test]
        accs.append(correct[test].mean())
    nan = (float("nan"), float("nan"))
    return ProbeResult(
        accuracy=float(np.mean(accs)),
        std=float(np.std(accs)),
        ci=bootstrap_mean_ci(correct, n_boot, seed, level) if n_boot else nan,
        folds=folds,
        n=len(y),
        n_classes=len(classes),
        majority=float(counts.max() / counts.sum()),
        correct=correct,
    )
