"""The claims board in the cache: a cost claim's timing kept (`remember`, what `Context.timed` asks the hooks for,
since a timing cannot be recomputed from stored vectors), and every finished board of a model kept, so the Claims
page, the model report and Compare models show the newest one without running anything.

    hooks = cached_hooks(store)                   # cache.experiments: `remember` included
    save_board(store, board)                      # after `python -m analysis claims` or the page's run
    latest_board(store, backbone.identity)        # the newest board of this model, or None
"""

from __future__ import annotations

import numpy as np

from cache import keys
from cache.compute import computed


def remember(store, parts: dict, compute):
    """`compute()`'s JSON-able value, stored under `parts` (None: computed, not stored)."""
    def run(progress):
        return {"stored": np.zeros(1)}, {"value": compute()}

    _, meta, _ = computed(store, keys.CLAIMS_TIMING, keys.claims_timing_parts(parts), run)
    return meta["value"]


def save_board(store, board: dict) -> None:
    """Keep `board` (`analysis.experiments.claims.board`'s dict) among its model's boards."""
    from analysis.core.finite import finite

    if store is None:
        return
    board = finite(board)
    identity = board["model"]["identity"]
    store.put(keys.claims_board_key(identity, board), {"stored": np.zeros(1)}, {"board": board},
              parts={"claims_board": identity}, namespace=keys.CLAIMS_BOARD)


def latest_board(store, identity: str) -> dict | None:
    """The newest board stored for the model `identity` (by its creation date), or None."""
    if store is None:
        return None
    boards = []
    for key in store.scan(keys.claims_board_prefix(identity), keys.CLAIMS_BOARD):
        entry = store.get(key, keys.CLAIMS_BOARD)
        if entry is not None and isinstance(entry.meta.get("board"), dict):
            boards.append(entry.meta["board"])
    return max(boards, key=lambda b: b.get("created", ""), default=None)
