"""Cache keys: one place for what determines a stored result.

A key is the sha256 of the canonical JSON of its *parts* plus `analysis.code_version()`, so results computed
by other code are never served. The builders below name the parts every caller shares (the app pages, the
command line and the scripts build the same parts for the same computation, and so reuse each other's
entries). Large contents (texts, pairs, data sets) enter a key as a `digest`, not verbatim.

    parts = trajectory_parts(backbone, method, texts, "last", bootstrap=20)
    key = make_key(parts)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np


def jsonable(obj):
    """Plain JSON values for ``obj``, or TypeError; tuples become lists (JSON cannot tell them apart).

    Accepts str, int, float, bool, None, lists, tuples, str-keyed dicts, dataclass instances, numpy scalars.
    """
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return jsonable(dataclasses.asdict(obj))
    if isinstance(obj, (list, tuple)):
        return [jsonable(x) for x in obj]
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):  # json would make {1: x} and {"1": x} collide
            raise TypeError(f"cache key/meta dict keys must be str, got {list(obj)!r:.80}")
        return {k: jsonable(v) for k, v in obj.items()}
    raise TypeError(f"cannot put a {type(obj).__name__} into a cache key or meta: {obj!r:.80}")


def _sha256(obj) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def make_key(parts: dict) -> str:
    """sha256 hex of the canonical JSON of ``parts`` plus `code_version()` (other code never reuses results).

    Raises:
        TypeError: parts that are not a dict, or hold values without a stable canonical form (sets, arrays).
    """
    from analysis import code_version  # light: its heavy parts load lazily

    if not isinstance(parts, dict):
        raise TypeError(f"cache key parts must be a dict, got {type(parts).__name__}")
    return _sha256(jsonable({**parts, "__lib__": code_version()}))


def digest(*objects) -> str:
    """Content hash of JSON-like data (numpy arrays become lists), for keys that would otherwise hold every text."""
    return _sha256(json.loads(json.dumps(objects, ensure_ascii=False, default=lambda a: np.asarray(a).tolist())))


def pairs_digest(pairs) -> str:
    """Content hash of an `analysis.data.corpora.Pairs` (left, right, scores)."""
    return digest(pairs.left, pairs.right, np.asarray(pairs.scores))


def task_digest(task) -> str:
    """Content hash of an `analysis.eval.tasks.Task`'s data."""
    d = task.data
    if task.kind == "sts":
        content = [d.left, d.right, np.asarray(d.scores)]
    elif task.kind == "probe":
        content = [d.texts, d.labels]
    else:
        content = [d.corpus, d.queries, d.qrels]
    return digest(task.kind, content)


def method_parts(backbone, method) -> dict:
    """Model identity (name + revision or weights digest), method name and parameters."""
    return {"model": backbone.identity, "method": method.name, "params": method.params}


# ---- the parts of each kind of stored result ------------------------------------------------------------------
def encode_parts(backbone, method, texts: list[str], encode_kwargs: dict) -> dict:
    """Embeddings of the exact texts (namespace "embeddings")."""
    return {**method_parts(backbone, method), "texts": list(texts), "kwargs": encode_kwargs}


def trajectory_parts(backbone, method, texts, readout: str, bootstrap: int, seed: int = 0) -> dict:
    """An intrinsic-dimension trajectory (namespace "intrinsic_dim"): the ID page and the `id` command."""
    return {**method_parts(backbone, method), "texts": digest(list(texts)), "readout": readout,
            "bootstrap": int(bootstrap), "seed": int(seed)}


def auto_window_parts(backbone, prompt_method) -> dict:
    """The window KV-Embedding's `layers=auto` uses (namespace "auto_layers"): model and prompt-only method."""
    return {**method_parts(backbone, prompt_method), "corpus": "auto_corpus"}


def bench_parts(model_identity: str, method, task, *, n_boot: int, seed: int, folds: int = 5) -> dict:
    """One (method, task) benchmark cell (namespace "bench"): the Benchmark page and the `bench` command."""
    return {"model": model_identity, "method": method.name, "params": method.params, "task": task.name,
            "kind": task.kind, "data": task_digest(task), "n_boot": n_boot, "seed": seed,
            "folds": folds if task.kind == "probe" else None}


def sts_score_parts(backbone, pairs, method) -> dict:
    """One Spearman score on a pair set (namespace "kv_explorer"): the Layer explorer page and scripts."""
    return {**method_parts(backbone, method), "pairs": pairs_digest(pairs), "task": "sts_spearman"}


def compress_parts(system, items: list[dict], mode: str, ids: bool) -> dict:
    """Context-compression answers (namespace "compression"): the page, `compress-qa` and the report script."""
    return {"kind": "compress-qa", "model": system.backbone.identity, "weights": system.weights_digest,
            "config": system.config, "mode": mode, "ids": bool(ids), "items": digest(items)}
