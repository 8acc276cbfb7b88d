"""The claims board in the cache: every finished board of a model kept, so the Claims page, the model report and
Compare models show the newest one without running anything (a cost claim's timing is kept by `Cached.remember`).

    save_board(store, board)                      # after `python -m analysis claims` or the page's run
    latest_board(store, backbone.identity)        # the newest board of this model, or None
    stored_board(store, backbone)                 # ... else its published record: (board, where it comes from)
    report_summary(store, backbone)               # the model report's Claims section
"""

from __future__ import annotations

import numpy as np

from analysis.core.finite import finite
from analysis.experiments.claims.context import short_name
from analysis.experiments.claims.record import record_source, report_section
from analysis.experiments.machinery.records import read
from cache import keys


def save_board(store, board: dict) -> None:
    """Keep `board` (`analysis.experiments.claims.board`'s dict) among its model's boards."""
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


def stored_board(store, backbone) -> tuple[dict | None, str]:
    """(board, where it comes from) of the model: the newer of the newest board in `store` and the published record
    `claims_<model>` when that was measured on exactly these weights; (None, "") when neither exists. `backbone`
    only needs its `identity` and `facts` (a described model will do)."""
    found = []
    board = latest_board(store, backbone.identity)
    if board is not None:
        found.append((board, f"the newest board in this cache ({board['created']})"))
    rec = read("claims_" + short_name(backbone.facts).replace("-", "_"))
    if rec is not None and rec.extra.get("board", {}).get("model", {}).get("identity") == backbone.identity:
        found.append((rec.extra["board"], record_source(rec)))
    return max(found, key=lambda x: x[0]["created"], default=(None, ""))


def report_summary(store, backbone) -> dict:
    """The model report's Claims section from the stored board (`analysis.experiments.claims.record.report_section`)."""
    return report_section(*stored_board(store, backbone))
