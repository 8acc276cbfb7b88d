"""Classification with MTEB v2's logistic-regression protocol (`AbsTaskClassification`), exactly.

MTEB's protocol: `n_experiments` = 10 experiments; in each, the train side is undersampled to `samples_per_label`
= 8 texts per label (MTEB's `_undersample_data`: one list of train indices, shuffled in place by a fresh
`np.random.RandomState(42)` before every experiment, so experiment e sees the (e + 1)-th shuffle; the first 8 of
each label in that order are taken); `LogisticRegression(max_iter=100, random_state=42)` is fitted on their
embeddings as the model returns them (no scaling) and predicts every text of the evaluation side; accuracy and
macro-F1 (and weighted F1) are averaged over the experiments. Texts are embedded as documents (a symmetric task).

Sides. Where a set has MTEB's own test split (Banking77 fetched: `banking77-test`), the classifier trains on MTEB's
train split and is evaluated on the test split, MTEB's Banking77Classification to the protocol. The test splits are
not on the development machine, so on a part of train (`banking77-report`, `banking77-select`) the part is cut once,
stratified by label and seeded (`held_out`), into a train side and an evaluation side of min(3,080, 40%) texts
(3,080 is the size of Banking77's test split: about 40 per intent); the classifier trains on the undersampled train
side and is scored on the evaluation side, which no experiment trains on.

For a paired comparison each evaluation text's correctness is averaged over the experiments (its mean over texts is
the mean accuracy), so two methods are compared on the same texts; the interval of the accuracy resamples texts.

    split = held_out(banking77.part("report"))            # Split(train: 4,923 texts, test: 3,080 texts)
    s = score_classification(split, lambda texts, role: method.encode(backbone, texts))
    s.value, s.ci, s.metrics["macro-F1"]

Cost: one embedding of each train text any experiment uses (at most 10 x 8 per label, fewer once shuffles overlap:
about 3,000 for Banking77) and of the evaluation side, then 10 small logistic regressions (seconds).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score

from analysis.core.errors import UserError
from analysis.data.corpora import Texts
from analysis.data.samples import fixed_split, subset
from analysis.eval.score import Score, mean_score

N_EXPERIMENTS = 10  # MTEB's AbsTaskClassification defaults
SAMPLES_PER_LABEL = 8
MAX_ITER = 100
MTEB_SEED = 42  # MTEB's task seed: the undersampling's RandomState and the classifier's random_state
EVAL_SIZE = 3080  # Banking77's test split: the evaluation side cut from a part of train is at most this big
EVAL_SHARE = 0.4  # ... and at most this share of the part
SIDES_SEED = 20261124  # fixed once, like every selection/report cut of this project


@dataclass(frozen=True)
class Split:
    """The two sides of a classification task: what the classifier may train on, and what it is scored on."""

    name: str
    train: Texts
    test: Texts
    how: str  # how the sides were made, for records and captions

    def content(self) -> list:
        return [self.train.texts, self.train.labels, self.test.texts, self.test.labels]


def given(train: Texts, test: Texts, name: str) -> Split:
    """A set's own train and test splits (MTEB's setting)."""
    return Split(name, train, test, f"trained on {train.name} ({len(train):,}), evaluated on {test.name} "
                                    f"({len(test):,})")


def held_out(data: Texts, n_eval: int | None = None, seed: int = SIDES_SEED) -> Split:
    """A labelled set cut into a train side and an evaluation side (stratified by label, seeded, fixed)."""
    if data.labels is None:
        raise UserError(f"{data.name} has no labels to classify.")
    n_eval = n_eval or min(EVAL_SIZE, round(EVAL_SHARE * len(data)))
    test_rows, train_rows = fixed_split(len(data), data.labels, n_eval, seed)
    train = subset(data, train_rows, f"{data.name}, train side")
    test = subset(data, test_rows, f"{data.name}, held out")
    return Split(data.name, train, test, f"trained on {len(train):,} texts of {data.name}, evaluated on the other "
                                         f"{len(test):,} (stratified by label, seed {seed})")


def undersample(labels, n_experiments: int = N_EXPERIMENTS, per_label: int = SAMPLES_PER_LABEL,
                seed: int = MTEB_SEED) -> list[list[int]]:
    """The train indices of each experiment, as MTEB's `_undersample_data` draws them."""
    order = list(range(len(labels)))
    chosen = []
    for _ in range(n_experiments):
        np.random.RandomState(seed).shuffle(order)  # a fresh generator each time, on the list as last shuffled
        counts: dict = {}
        picked = []
        for i in order:
            if counts.get(labels[i], 0) < per_label:
                picked.append(i)
                counts[labels[i]] = counts.get(labels[i], 0) + 1
        chosen.append(picked)
    return chosen


def score_classification(split: Split, embed: Callable[[list[str], str], np.ndarray], *, n_boot: int = 1000,
                         seed: int = 0, level: float = 0.95, n_experiments: int = N_EXPERIMENTS,
                         samples_per_label: int = SAMPLES_PER_LABEL, name: str | None = None) -> Score:
    """Mean accuracy over MTEB's experiments with a bootstrap interval over evaluation texts; macro-F1 beside it."""
    train, test = split.train, split.test
    if train.labels is None or test.labels is None or len(set(train.labels)) < 2:
        raise UserError(f"{split.name}: classification needs labelled texts of at least 2 labels on the train side.")
    experiments = undersample(train.labels, n_experiments, samples_per_label)
    union = sorted(set().union(*experiments))
    row = {i: r for r, i in enumerate(union)}
    start = time.perf_counter()
    train_emb = embed([train.texts[i] for i in union], "document")  # (len(union), d), as the model returns them
    test_emb = embed(test.texts, "document")  # (n_test, d)
    seconds = time.perf_counter() - start
    y_test = np.array(test.labels)
    correct = np.zeros((n_experiments, len(test)))
    accuracy, macro, weighted = [], [], []
    for e, picked in enumerate(experiments):
        clf = LogisticRegression(max_iter=MAX_ITER, random_state=MTEB_SEED)
        with warnings.catch_warnings():  # MTEB's 100 iterations often stop short; the protocol keeps them
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(train_emb[[row[i] for i in picked]], [train.labels[i] for i in picked])
        predicted = clf.predict(test_emb)
        correct[e] = predicted == y_test
        accuracy.append(accuracy_score(y_test, predicted))
        macro.append(f1_score(y_test, predicted, average="macro"))
        weighted.append(f1_score(y_test, predicted, average="weighted"))
    return mean_score(name or split.name, "classification", "accuracy", correct.mean(axis=0), test.texts,
                      unit="texts", n_boot=n_boot, seed=seed, level=level, seconds=seconds,
                      metrics={"macro-F1": float(np.mean(macro)), "weighted-F1": float(np.mean(weighted))},
                      detail={"sides": split.how, "experiments": n_experiments, "samples_per_label": samples_per_label,
                              "train_texts_embedded": len(union), "accuracy_per_experiment": accuracy,
                              "macro_f1_per_experiment": macro, "mean_accuracy": float(np.mean(accuracy))})
