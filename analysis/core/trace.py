"""Named captures from an `encode(..., trace=True)` call, in the spirit of TransformerLens' ActivationCache.

| name                 | per text                 | meaning                                                     |
|----------------------|--------------------------|-------------------------------------------------------------|
| `hidden`             | (L+1, T, d) float32      | hidden states 0..L (0 = embeddings, L = after final norm)    |
| `attention`          | (L, H, T, S) float32     | attention weights per decoder layer and head (eager backend) |
| `segments`           | (T,) int8                | 0 template, k = k-th copy of the text                        |
| `pool_mask`          | (T,) float32             | weight of each token in the mean readout                     |
Methods add their own names (documented in their modules), e.g. `kv.prefix_mass` (L, H, T).
T counts the tokens the model saw for that text (padding removed); S >= T when a method adds attended
positions (S - T extra columns come first).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Trace:
    texts: list[str]
    tokens: list[list[str]] = field(default_factory=list)  # per text, the token strings the model saw
    captures: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def add(self, name: str, per_text: list[np.ndarray]) -> None:
        self.captures.setdefault(name, []).extend(per_text)

    def __getitem__(self, name: str) -> list[np.ndarray]:
        if name not in self.captures:
            raise KeyError(f"no capture named {name!r}; have {sorted(self.captures)}")
        return self.captures[name]

    def __contains__(self, name: str) -> bool:
        return name in self.captures

    def hidden(self, text: int, layer: int) -> np.ndarray:
        """(T, d) hidden state of one text at one hidden-state index (negative allowed)."""
        return self["hidden"][text][layer]

    def shapes(self) -> dict[str, list[tuple]]:
        return {k: [v.shape for v in vals] for k, vals in self.captures.items()}
