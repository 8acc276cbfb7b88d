"""Cache keys: one place for what determines a stored result, and under which namespace it is stored.

A key is the sha256 of the canonical JSON of its *parts*. The builders below name the parts every caller shares
(the app pages, the command line and the scripts build the same parts for the same computation, and so reuse
each other's entries); each kind of result has its builder and its namespace constant here, nowhere else.
Large contents (texts, pairs, data sets) enter a key as a `digest`, not verbatim.

The code rule: every builder puts the code version of the modules that compute its result into the parts
(`"code"`: `analysis.code_version(modules)`, the package version plus a digest of those modules' source and of
every project module they import, lazy imports included). An embedding names the method's own module
(`type(method).__module__`); a score or a trajectory adds the module that computes it from the embeddings
(`analysis.eval.sts`, `analysis.inspect.intrinsic_dim`, ...). So editing a method invalidates that method's
results, and editing a help string, a page or another method invalidates nothing. A page's own arithmetic
after the library call is not in the key: put computations worth caching in the library.

    parts = trajectory_parts(backbone, method, texts, "last", bootstrap=20)
    entry, hit = store.get_or_compute(parts, compute, namespace=INTRINSIC_DIM)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading

import numpy as np

from analysis import code_version

# ---- namespaces: one per kind of stored result (a folder under the cache root) -----------------------------------
EMBEDDINGS = "embeddings"  # encode_parts: one entry per exact list of texts (what a page asked for)
VECTORS = "vectors"  # vectors_parts + shard_key: every document's vector, in shards (cache.vectors)
INTRINSIC_DIM = "intrinsic_dim"  # trajectory_parts
AUTO_LAYERS = "auto_layers"  # auto_window_parts: KV-Embedding's layers=auto window, one per model and prompt
BENCH = "bench"  # bench_parts
STS_SCORE = "kv_explorer"  # cell_score_parts (named after the Layer explorer, its first user)
COMPRESSION = "compression"  # compress_parts
POOL_ATTENTION = "compression_pool_attention"  # pool_attention_parts
SENSITIVITY = "sensitivity"  # sensitivity_parts
ATTENTION = "attention_trace"  # attention_parts
GEOMETRY = "geometry"  # geometry_parts
ANISOTROPY = "anisotropy_layers"  # anisotropy_parts
EMBEDDING_MAP = "embedding_map"  # embedding_map_parts
SOFT_SCALING = "soft_scaling_ci"  # soft_scaling_parts
SOFT_GENERATION = "soft_generation"  # soft_generation_parts
VALUES = "values"  # value_parts: a JSON value `Compute.remember` keeps (a timing, a count: what vectors cannot redo)
CLAIMS_BOARD = "claims_board"  # claims_board_key: every claims board of a model (the newest is read)


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
    """sha256 hex of the canonical JSON of ``parts`` (a builder's parts carry their code version).

    Raises:
        TypeError: parts that are not a dict, or hold values without a stable canonical form (sets, arrays).
    """
    if not isinstance(parts, dict):
        raise TypeError(f"cache key parts must be a dict, got {type(parts).__name__}")
    return _sha256(jsonable(parts))


_CODE_LOCK = threading.Lock()


def code(*modules: str) -> str:
    """The code version of the modules that compute a result (dotted names), for a key's "code" part.

    One caller at a time: the digest's memo (`functools.lru_cache` in `analysis.core.versions`) let each of 16 app
    sessions opening one lesson step on a new server parse all the package's modules itself, one after another, most
    of the class's wait; now the first parses and the others then read its memo. The lock is here, where sessions
    ask, because versions.py is in every key's import closure: editing it would change every stored key."""
    with _CODE_LOCK:
        return code_version(sorted(set(modules)))


def digest(*objects) -> str:
    """Content hash of JSON-like data (numpy arrays become lists), for keys that would otherwise hold every text."""
    return _sha256(json.loads(json.dumps(objects, ensure_ascii=False, default=lambda a: np.asarray(a).tolist())))


def pairs_digest(pairs) -> str:
    """Content hash of an `analysis.data.corpora.Pairs` (left, right, scores)."""
    return digest(pairs.left, pairs.right, np.asarray(pairs.scores))


def task_digest(task) -> str:
    """Content hash of an `analysis.eval.tasks.Task`'s data, any family (`Task.content`)."""
    return digest(task.kind, task.content())


def method_parts(backbone, method, *modules: str) -> dict:
    """Model identity (name + revision or weights digest), method name and parameters, the side it embeds when the
    method embeds queries otherwise than documents (`EmbeddingMethod.role_key`: "query"; absent for documents and
    symmetric methods, so their two sides share entries), and the code version of the method's module plus `modules`
    (what turns its embeddings into the result)."""
    side = getattr(method, "role_key", lambda: "")()
    return {"model": backbone.identity, "method": method.name, "params": method.params,
            **({"role": side} if side else {}), "code": code(type(method).__module__, *modules)}


# ---- the parts of each kind of stored result ------------------------------------------------------------------
ID_MODULE, GEOMETRY_MODULE = "analysis.inspect.intrinsic_dim", "analysis.inspect.geometry"
COMPRESSION_MODULE = "analysis.compression.system"


def encode_parts(backbone, method, texts: list[str], encode_kwargs: dict) -> dict:
    """Embeddings of the exact texts (EMBEDDINGS)."""
    return {**method_parts(backbone, method), "texts": list(texts), "kwargs": encode_kwargs}


def vectors_parts(backbone, method, normalize: bool) -> dict:
    """A method's per-document vector store (VECTORS): model, method, parameters and code version; each document
    is then found by its `text_digest`. Batch size, padding side and token budget are left out: results do not
    depend on them (tests/test_corpus.py)."""
    return {**method_parts(backbone, method), "kind": "document-vectors", "normalize": bool(normalize)}


def text_digest(text: str) -> str:
    """sha256 hex of one document's exact text: its address in a vector store."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def shard_key(store_key: str, digests) -> str:
    """The key of one shard of the vector store `store_key` (its `make_key`): the store's key, then a digest of the
    shard's documents, so every shard of a store sits in one folder (`Store.scan(store_key)`) and two processes
    writing the same documents write the same shard."""
    return f"{store_key}-{_sha256(sorted(digests))[:32]}"


def trajectory_parts(backbone, method, texts, readout: str, bootstrap: int, seed: int = 0) -> dict:
    """An intrinsic-dimension trajectory (INTRINSIC_DIM): the ID page and the `id` command."""
    return {**method_parts(backbone, method, ID_MODULE), "texts": digest(list(texts)), "readout": readout,
            "bootstrap": int(bootstrap), "seed": int(seed)}


def auto_window_parts(backbone, prompt_method) -> dict:
    """The window KV-Embedding's `layers=auto` uses (AUTO_LAYERS): model and prompt-only method."""
    return {**method_parts(backbone, prompt_method, ID_MODULE), "corpus": "auto_corpus"}


def bench_parts(model_identity: str, method, task, *, n_boot: int, seed: int, folds: int = 5) -> dict:
    """One (method, task) benchmark cell (BENCH): the Benchmark page and the `bench` command."""
    return {"model": model_identity, "method": method.name, "params": method.params, "task": task.name,
            "kind": task.kind, "data": task_digest(task), "n_boot": n_boot, "seed": seed,
            "folds": folds if task.kind == "probe" else None,
            "code": code(type(method).__module__, "analysis.eval.tasks")}


def sts_score_parts(backbone, pairs, method) -> dict:
    """One Spearman score on a pair set (STS_SCORE): the Layer explorer page, the `sweep` command and scripts.
    A sweep's runner and a plain encode both write these entries, so both paths are in the code version."""
    return {**method_parts(backbone, method, "analysis.eval.sts", "analysis.sweep.runner"),
            "pairs": pairs_digest(pairs), "task": "sts_spearman"}


def cell_score_parts(backbone, data, method) -> dict:
    """One score of one method configuration (STS_SCORE): Spearman on pairs (`sts_score_parts`, the keys the Layer
    explorer has always used) or nDCG@10 on a retrieval task (`analysis.eval.tasks.Task`, a nano one in the Layer
    explorer: its content's digest; the method's query side is its own `role_key`, so both sides are in the params)."""
    if getattr(data, "kind", None) != "retrieval":
        return sts_score_parts(backbone, data.data if hasattr(data, "kind") else data, method)
    return {**method_parts(backbone, method, "analysis.eval.retrieval", "analysis.sweep.runner"),
            "task": task_digest(data), "metric": "nDCG@10"}


def compress_parts(system, items: list[dict], mode: str, ids: bool) -> dict:
    """Context-compression answers (COMPRESSION): the page, the lesson, `compress-qa` and the report script.
    `system` is a `CompressionSystem` or what stands for one unloaded (`ui.traces.Compression`): only its model,
    weights digest and config enter the key, so both find the same entries."""
    return {"kind": "compress-qa", "model": system.backbone.identity, "weights": system.weights_digest,
            "config": system.config, "mode": mode, "ids": bool(ids), "items": digest(items),
            "code": code(COMPRESSION_MODULE)}


def pool_attention_parts(system, item: dict, mode: str, ids: bool) -> dict:
    """The answer's attention to one item's pools, per layer (POOL_ATTENTION): the page and the lesson."""
    return {"kind": "pool-attention", "model": system.backbone.identity, "weights": system.weights_digest,
            "config": system.config, "mode": mode, "ids": bool(ids), "item": item, "code": code(COMPRESSION_MODULE)}


def sensitivity_parts(backbone, method, text: str, layer: int, probes: int, exact: bool) -> dict:
    """Jacobian norms and the attention bound for one text (SENSITIVITY): the Sensitivity page."""
    return {**method_parts(backbone, method, "analysis.inspect.sensitivity"), "text": text, "layer": layer,
            "probes": probes, "probe": "rademacher", "seed": 0, "exact": exact}


def attention_parts(backbone, method, text: str) -> dict:
    """One text's attention maps and prefix masses (ATTENTION): the Attention page."""
    return {**method_parts(backbone, method, "analysis.inspect.attention"), "text": text}


def geometry_parts(backbone, method, texts: list[str], left, right, n_boot: int) -> dict:
    """Alignment, uniformity and anisotropy with intervals (GEOMETRY); `left`/`right` index the positive pairs."""
    return {**method_parts(backbone, method, GEOMETRY_MODULE), "texts": digest(texts), "positives": digest(left, right),
            "n_boot": n_boot}


def anisotropy_parts(backbone, method, texts: list[str]) -> dict:
    """Anisotropy at every hidden state (ANISOTROPY): the Geometry page."""
    return {**method_parts(backbone, method, GEOMETRY_MODULE), "texts": list(texts)}


def embedding_map_parts(backbone, method, texts: list[str], kind: str, seed: int) -> dict:
    """A 2-D PCA or UMAP map of a method's embeddings (EMBEDDING_MAP): the Geometry page."""
    return {**method_parts(backbone, method, GEOMETRY_MODULE), "texts": list(texts), "kind": kind, "seed": seed}


def soft_scaling_parts(backbone, pairs, ks: list[int], params: dict, adapter: str) -> dict:
    """Soft-token test-time scaling: Spearman per K with intervals (SOFT_SCALING); `params` are the generation's
    settings, `adapter` the adapter's key part (`adapter_spec`)."""
    return {"pairs": pairs.name, "left": pairs.left, "right": pairs.right, "scores": [float(x) for x in pairs.scores],
            "ks": list(ks), **params, "adapter": adapter, "model": backbone.identity,
            "code": code("analysis.inspect.generation")}


def soft_generation_parts(backbone, text: str, instruction: str, settings: dict, adapter: str) -> dict:
    """One text's soft-token generation report (SOFT_GENERATION): the Soft tokens page and the lessons; `settings`
    are `generate_soft_tokens`'s other arguments (its defaults filled in, so a lesson step and the page share an
    entry), `adapter` the adapter's key part (`adapter_spec`), so a retrained adapter is a new entry."""
    return {"text": text, "instruction": instruction, **settings, "adapter": adapter, "model": backbone.identity,
            "code": code("analysis.inspect.generation")}


def value_parts(parts: dict, modules=()) -> dict:
    """A value `Compute.remember` keeps (VALUES): the caller's parts (model, methods with their parameters, texts,
    rounds, ...) and the code version of the modules that compute it."""
    return {**parts, "code": code(*modules)}


def claims_board_key(identity: str, board: dict) -> str:
    """One claims board of a model (CLAIMS_BOARD): every board of the model sits under one prefix
    (`claims_board_prefix`, `Store.scan`), each under a digest of its content, so a later run never replaces an
    earlier one in place and the newest is found by its date."""
    return f"{claims_board_prefix(identity)}-{_sha256(board)[:32]}"


def claims_board_prefix(identity: str) -> str:
    return make_key({"claims_board": identity})
