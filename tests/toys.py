"""Toy data and stand-ins the training tests share: three short texts, a hashed-trigram stand-in for MiniLM, and
seeded pairs small enough for a few training steps on a tiny model. One copy, imported by every test that trains."""

import hashlib

import numpy as np
import torch

from analysis.data.corpora import Pairs

TEXTS = ["A cat sat on the mat.", "Dogs run.", "The bank by the river raised its rates."]


class HashEncoder:
    """A tiny deterministic stand-in for MiniLM: hashed character trigrams, 32-d, unit norm."""

    dim, n_layers, identity = 32, 0, "hash-encoder"

    def embed(self, texts, layers=None, normalize=True, batch_size=64):
        out = torch.zeros(len(texts), self.dim)
        for i, t in enumerate(texts):
            for j in range(len(t) - 2):
                out[i, int(hashlib.md5(t[j : j + 3].encode()).hexdigest(), 16) % self.dim] += 1.0
        return torch.nn.functional.normalize(out, dim=-1)


def toy_pairs(n: int = 48, seed: int = 0) -> Pairs:
    """n seeded STS-style pairs: even ones a sentence and itself with a mark (score 5), odd ones two random
    sentences (scores 0.5-2.5), so a contrastive loss has positives and graded negatives."""
    rng = np.random.default_rng(seed)
    words = "cat dog bank river money fox runs sleeps jumps quick lazy old".split()
    left, right, scores = [], [], []
    for i in range(n):
        a = " ".join(rng.choice(words, 4))
        same = i % 2 == 0
        left.append(a + ".")
        right.append((a if same else " ".join(rng.choice(words, 4))) + " !")
        scores.append(5.0 if same else 0.5 + (i % 3))
    return Pairs("toy", left, right, scores)


def toy_genre_pairs() -> Pairs:
    """Twelve pairs with a genre column (GIRCSE's trainer stratifies by it): eight positives, four negatives."""
    words = "cat dog bank river money fox runs sleeps".split()
    rng = np.random.default_rng(0)
    left = [" ".join(rng.choice(words, 3)) for _ in range(12)]
    return Pairs("toy", left, [t + " !" for t in left], [5.0] * 8 + [0.5] * 4, ["a"] * 12)
