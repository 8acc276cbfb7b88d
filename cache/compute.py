"""Every compute-and-store function of the cache: one per kind of stored result (`cache.keys`), and a reader where a
page only looks a result up. The pages (`ui`), the command line (`cli`) and the report call these, never
`Store.get_or_compute` with a computation of their own, so a result's key, its arrays' layout and the way it is
computed are written once.

Conventions, the same for each:
    store      a `cache.Store`, or None to compute and store nothing (`--no-cache`)
    progress   `progress(done, total, message)` (`cache.progress`); not part of any key
    returns    (value, meta, hit): the result, its entry's meta ("seconds" it took to compute, "warnings" raised
               while computing, re-emitted here on a miss and only recorded on a hit), whether it was stored

    emb, meta, hit = cached_encode(default_store(), backbone, method, texts, progress=progress)
    df, meta, hit = trajectory(default_store(), backbone, method, texts, "last", bootstrap=20)
"""

from __future__ import annotations

import functools
import inspect
import json
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from analysis.core import precision
from analysis.core.errors import TruncationWarning
from analysis.eval.tasks import score_from_record, score_record, score_task
from analysis.inspect import geometry as G
from analysis.sweep.windows import spearman_of
from analysis.weights.adapters import adapter_spec
from cache import keys
from cache.keys import make_key
from cache.progress import Meter, Progress, counting
from cache.vectors import Row, VectorStore

FLUSH_SECONDS = 20.0  # while encoding a corpus, a shard at least this often: a crash loses at most this much work
FLUSH_DOCUMENTS = 512  # ... or every this many documents, whichever comes first


_LEDGER: ContextVar[dict | None] = ContextVar("cache_ledger", default=None)


@contextmanager
def ledger():
    """While open, counts the entries `computed` read back and those it computed, with the seconds each took when it
    was computed (its meta's): a measurement resumed from the cache can then say that its own wall time is not what
    its numbers cost."""
    book = {"read": 0, "read_seconds": 0.0, "computed": 0, "computed_seconds": 0.0}
    token = _LEDGER.set(book)
    try:
        yield book
    finally:
        _LEDGER.reset(token)


def computed(store, namespace: str, parts: dict, compute: Callable, progress: Progress | None = None,
             validate: Callable | None = None) -> tuple[dict, dict, bool]:
    """(arrays, meta, hit): the entry stored under `parts`, or `compute(progress) -> (arrays, meta)` run and stored,
    its meta completed with "seconds" (unless it gave them) and "warnings" (messages raised while it ran). The one
    get-or-compute of the functions below."""
    caught: list[warnings.WarningMessage] = []

    def run(told=progress):
        began = time.perf_counter()
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")  # a warning already shown once must still be recorded here
            arrays, meta = compute(told)
        caught.extend(record)
        meta = dict(meta or {})
        meta.setdefault("seconds", time.perf_counter() - began)
        meta["warnings"] = list(dict.fromkeys([*meta.get("warnings", []), *(str(w.message) for w in record)]))
        return arrays, meta

    if store is None:
        (arrays, meta), hit = run(), False
    else:
        entry, hit = store.get_or_compute(parts, run, namespace, validate, progress=progress or _silent)
        arrays, meta = entry.arrays, entry.meta
    for w in caught:
        warnings.warn(w.message, stacklevel=3)  # the Warning instance keeps its category
    book = _LEDGER.get()
    if book is not None:
        kind = "read" if hit else "computed"
        book[kind] += 1
        book[f"{kind}_seconds"] += float(meta.get("seconds") or 0.0)
    return arrays, meta, hit


def _silent(done: int, total: int, message: str = "") -> None:
    """A progress nobody reads: the computation still publishes its own to whoever waits for it."""


# ---- embeddings: a page's exact list of texts (EMBEDDINGS) over every document's vector (VECTORS) -----------------
def cached_encode(store, backbone, method, texts: list[str], *, namespace: str = keys.EMBEDDINGS, batch_size: int = 16,
                  progress: Progress | None = None, **encode_kwargs) -> tuple[np.ndarray, dict, bool]:
    """Embed `texts` with `method`, reusing what was computed before: the same list, or the same documents.

    Args:
        store: Where results live (None: compute, store nothing).
        backbone: Anything with `identity` (str) naming the exact weights.
        method: Anything with `name`, `params` (frozen dataclass) and `encode(backbone, texts, progress=...,
            **kwargs) -> (n, d) array`.
        texts: The texts, exactly as embedded; one changed character is a different entry.
        batch_size: Texts per forward pass; not part of the key (results do not depend on it).
        **encode_kwargs: Passed to `method.encode` and part of the key.

    Returns:
        `(embeddings, meta, hit)`: float32 (n, d); meta with "seconds", "warnings" and "n"; whether nothing was
        computed (the list was stored, or every document of it was).

    The list's entry (`encode_parts`, the key pages have always used) is a thin index: on a miss the vectors come
    from `encode_documents`, which computes only the documents no earlier list or corpus had.
    """
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    texts = list(texts)
    per_document = set(encode_kwargs) <= {"normalize"}  # what the vector store keys; anything else: one encode

    def compute(progress):
        if per_document:
            emb, meta, _ = encode_documents(store, backbone, method, texts, batch_size=batch_size, progress=progress,
                                            normalize=encode_kwargs.get("normalize", True))
            return {"embeddings": emb}, {"n": len(texts), "seconds": meta["seconds"], "computed": meta["computed"]}
        ready = resolve_method(store, backbone, method)
        emb = np.asarray(ready.encode(backbone, texts, batch_size=batch_size, progress=counting(progress, "texts"),
                                      **encode_kwargs), dtype=np.float32)  # (n, d)
        if emb.ndim != 2 or emb.shape[0] != len(texts):
            raise ValueError(f"{method.name}.encode returned shape {emb.shape} for {len(texts)} texts")
        return {"embeddings": emb}, {"n": len(texts)}

    parts = keys.encode_parts(backbone, method, texts, encode_kwargs)
    arrays, meta, hit = computed(store, namespace, parts, compute, progress)
    return arrays["embeddings"], meta, hit or meta.get("computed") == 0


def encoded_stored(store, backbone, method, texts: list[str]) -> bool:
    """Whether `cached_encode(store, backbone, method, texts)` would compute nothing: the list is stored, or every
    document of it is. Nothing is computed to answer, so a method still choosing its `layers=auto` window is
    resolved only from a stored window (else False)."""
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    if store is None:
        return False
    if needs_window(method, backbone):
        found = auto_window(store, backbone, method, compute=False)
        if found is None or not found[0].layers:
            return False
        method = method.with_window(backbone, found[0].layers)
    texts = list(texts)
    if store.contains(make_key(keys.encode_parts(backbone, method, texts, {})), keys.EMBEDDINGS):
        return True
    digests = list(dict.fromkeys(keys.text_digest(t) for t in texts))
    return len(VectorStore(store, backbone, method).find(digests)) == len(digests)


def encode_documents(store, backbone, method, texts: list[str], *, normalize: bool = True, batch_size: int = 16,
                     max_tokens: int | None = None, progress: Progress | None = None) -> tuple[np.ndarray, dict, bool]:
    """Embed a corpus, each document's vector kept in the method's vector store (`cache.vectors`) by text digest.

    Only the documents the store lacks are computed, longest first in batches under a token budget (`max_tokens`,
    None: the method's default), and their vectors are stored in shards as batches finish (at least every
    `FLUSH_SECONDS` or `FLUSH_DOCUMENTS`, and whatever is done when the run stops, an exception included): so a
    re-run or a second task on the same corpus costs nothing, and a stopped run resumes where it stopped, with
    the same vectors. Repeated texts are computed once. Progress: documents and tokens done and the time left.

    Returns:
        `(vectors (n, d) float32 in input order, meta, hit)`; meta: "n", "documents" (distinct), "computed",
        "cached", "tokens", "seconds" (what these vectors cost when computed), "warnings" (a truncation warning
        counts every text, stored or computed); hit: nothing was computed.
    """
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.core.tokens import check_texts, truncation_message

    texts = check_texts(texts)
    digests = [keys.text_digest(t) for t in texts]
    first = dict(zip(digests, texts))  # digest -> its text
    unique = list(dict.fromkeys(digests))
    vs = VectorStore(store, backbone, method, normalize) if store is not None else None
    rows: dict[str, Row] = vs.find(unique) if vs is not None else {}
    missing = [d for d in unique if d not in rows]
    meter = Meter(progress, len(unique), len(rows), sum(rows[d].tokens for d in rows))
    meter.start()
    pending: list[Row] = []
    clock = {"flushed": time.perf_counter()}

    def flush():
        if vs is not None:
            vs.add(pending)
        pending.clear()
        clock["flushed"] = time.perf_counter()

    def on_batch(step):
        tokens = np.asarray(step.tokens, dtype=float)
        share = tokens / tokens.sum() if tokens.sum() > 0 else np.full(len(tokens), 1 / len(tokens))
        for k, i in enumerate(step.indices):
            row = Row(missing[i], np.array(step.vectors[k], dtype=np.float32), int(step.tokens[k]),
                      bool(step.truncated[k]), float(step.seconds * share[k]))
            rows[row.digest] = row
            pending.append(row)
        if len(pending) >= FLUSH_DOCUMENTS or time.perf_counter() - clock["flushed"] >= FLUSH_SECONDS:
            flush()
        meter.step(len(step.indices), int(tokens.sum()), int(step.tokens_total))

    caught = []
    if missing:
        ready = resolve_method(store, backbone, method)
        budget = {} if max_tokens is None else {"max_tokens": max_tokens}
        began = time.perf_counter()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = np.asarray(ready.encode(backbone, [first[d] for d in missing], batch_size=batch_size,
                                              normalize=normalize, on_batch=on_batch, **budget), dtype=np.float32)
            if out.ndim != 2 or out.shape[0] != len(missing):
                raise ValueError(f"{method.name}.encode returned shape {out.shape} for {len(missing)} texts")
            unseen = [i for i, d in enumerate(missing) if d not in rows]  # an encode that gives no batches
            for i in unseen:
                rows[missing[i]] = Row(missing[i], out[i], 0, False, (time.perf_counter() - began) / len(unseen))
                pending.append(rows[missing[i]])
        finally:
            flush()  # what is done is kept, also when the run stops here

    known = all(rows[d].tokens > 0 for d in missing)  # batches reported each document's truncation
    kept = [w for w in caught if not (known and issubclass(w.category, TruncationWarning))]
    for w in kept:
        warnings.warn(w.message, stacklevel=2)  # the Warning instance keeps its category
    messages = [str(w.message) for w in kept]
    n_cut = sum(rows[d].truncated for d in digests)
    if known and n_cut:  # one sentence for the whole list, stored documents included, as the library words it
        messages.append(truncation_message(n_cut, len(texts), getattr(getattr(backbone, "facts", None),
                                                                      "max_length", None)))
        warnings.warn(messages[-1], TruncationWarning, stacklevel=2)
    vectors = np.stack([rows[d].vector for d in digests]).astype(np.float32, copy=False)  # (n, d)
    meta = {"n": len(texts), "documents": len(unique), "computed": len(missing), "cached": len(unique) - len(missing),
            "tokens": int(sum(rows[d].tokens for d in unique)),
            "seconds": float(sum(rows[d].seconds for d in unique)), "warnings": messages}
    return vectors, meta, not missing


# ---- KV-Embedding's layers=auto window (AUTO_LAYERS) ----------------------------------------------------------
def auto_window(store, backbone, method, progress: Progress | None = None, *, compute: bool = True):
    """(Selection, ID per hidden state) behind a method's `layers=auto` (KV-Embedding), as a store entry.

    `method` is the method itself (any with `prompt_only()`); the entry is keyed by the model and the prompt-only
    method. A stored record whose selection differs from what the rules pick from its own trajectory (damaged or
    hand-edited) is removed and recomputed. With compute=False, None when it has not been computed yet; with store
    None, computed in memory.
    """
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    from analysis.inspect import intrinsic_dim as idm  # lazy: keeps torch off the pages' and the command line's start

    prompt = method.prompt_only()
    if store is None:
        return idm.auto_trajectory(backbone, prompt, counting(progress, "steps"))
    L, width = backbone.facts.n_layers, idm.width_rule(prompt)
    parts = keys.auto_window_parts(backbone, prompt)
    validate = lambda entry: idm.window_from_record(entry.arrays, entry.meta, L, width)  # noqa: E731 - may raise
    if not compute:
        entry = store.get(make_key(parts), keys.AUTO_LAYERS, validate)
        return None if entry is None else idm.window_from_record(entry.arrays, entry.meta, L, width)
    entry, _ = store.get_or_compute(
        parts, lambda: idm.window_record(*idm.auto_trajectory(backbone, prompt, counting(progress, "steps"))),
        keys.AUTO_LAYERS, validate)
    return idm.window_from_record(entry.arrays, entry.meta, L, width)


def needs_window(method, backbone) -> bool:
    """Whether `method` still has a `layers=auto` window to resolve on `backbone` (KV-Embedding's
    `needs_window`; a method without one never has)."""
    return getattr(method, "needs_window", lambda backbone: False)(backbone)


def resolve_method(store, backbone, method, progress: Progress | None = None):
    """The method ready to run on `backbone`: a `layers=auto` window looked up in (or computed into) the store.
    Methods without such a choice are returned as they are."""
    if not needs_window(method, backbone):
        return method
    sel, _ = auto_window(store, backbone, method, progress)
    return method.with_window(backbone, sel.layers)


# ---- an intrinsic-dimension trajectory (INTRINSIC_DIM): the ID page, its lesson step, `id` ----------------------
def trajectory(store, backbone, method, texts: list[str], readout: str, bootstrap: int, seed: int = 0, *,
               batch_size: int = 16, progress: Progress | None = None):
    """(DataFrame, meta, hit): `analysis.inspect.intrinsic_dim.trajectory` of `texts`, one row per hidden state."""
    backbone, _ = precision.for_method(backbone, "view:intrinsic dimension")  # --dtype auto: this view's dtype
    from analysis.inspect import intrinsic_dim as idm  # lazy: keeps torch off the pages' and the command line's start

    def compute(progress):
        df = idm.trajectory(backbone, method, texts, readout, bootstrap=bootstrap, seed=seed, batch_size=batch_size,
                            progress=counting(progress, "steps (forward passes, then estimates)"))
        return idm.to_arrays(df), {}

    parts = keys.trajectory_parts(backbone, method, texts, readout, bootstrap, seed)
    arrays, meta, hit = computed(store, keys.INTRINSIC_DIM, parts, compute, progress)
    return idm.from_arrays(arrays), meta, hit


def stored_trajectory(store, backbone, method, texts: list[str], readout: str, bootstrap: int, seed: int = 0):
    """The stored trajectory (a DataFrame), or None when it has not been computed."""
    backbone, _ = precision.for_method(backbone, "view:intrinsic dimension")  # --dtype auto: this view's dtype
    from analysis.inspect import intrinsic_dim as idm  # lazy: keeps torch off the pages' and the command line's start

    parts = keys.trajectory_parts(backbone, method, texts, readout, bootstrap, seed)
    entry = store.get(make_key(parts), keys.INTRINSIC_DIM)
    return None if entry is None else idm.from_arrays(entry.arrays)


# ---- one Spearman score on a pair set (STS_SCORE): the Layer explorer, `sweep` and its cells --------------------
def sts_score(store, backbone, pairs, method, *, batch_size: int = 16,
              progress: Progress | None = None) -> tuple[float, dict, bool]:
    """(Spearman of cosine similarity against the gold scores, meta, hit), each distinct text encoded once."""
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    def compute(progress):
        rho = spearman_of(backbone, method, pairs, counting(progress, "texts"), batch_size=batch_size)
        return {"spearman": np.array([rho])}, {}

    arrays, meta, hit = computed(store, keys.STS_SCORE, keys.sts_score_parts(backbone, pairs, method), compute,
                                 progress)
    return float(arrays["spearman"][0]), meta, hit


def stored_cell_score(store, backbone, data, method) -> float | None:
    """The stored score of `method` on `data` (pairs: Spearman; a retrieval task: nDCG@10, `keys.cell_score_parts`),
    or None."""
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    if store is None:
        return None
    entry = store.get(make_key(keys.cell_score_parts(backbone, data, method)), keys.STS_SCORE)
    return None if entry is None else float(entry.arrays["spearman"][0])


def put_cell_score(store, backbone, data, method, value: float, seconds: float) -> None:
    """Store a score computed elsewhere: a sweep's cell, scored by the sweep runner (`cache.sweep`). (The array keeps
    its first name, "spearman", on retrieval too: the entries the Layer explorer has always read.)"""
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    if store is not None:
        parts = keys.cell_score_parts(backbone, data, method)
        store.put(make_key(parts), {"spearman": np.array([value])}, {"seconds": seconds, "warnings": []}, parts=parts,
                  namespace=keys.STS_SCORE)


# ---- one benchmark cell (BENCH): the Benchmark page and `bench`; Compare models reads them ----------------------
def bench_cell(store, backbone, method, task, *, n_boot: int, seed: int = 0, embed: Callable | None = None,
               batch_size: int = 16, progress: Progress | None = None):
    """(`analysis.eval.tasks.Score`, meta, hit) of `method` on `task`, any family; meta has "encode_seconds".

    Each side of the task is embedded by the method as that side (`method.as_role`: retrieval queries as queries,
    everything else as documents), so a method whose paper embeds queries differently is scored that way and its two
    sides are stored apart. `embed(side_method, texts) -> (emb, seconds)` embeds (the command line's, which prints its
    warnings); by default `cached_encode` through the same store. `progress`: the embedding's, and a streamed
    corpus's documents over the whole corpus (`Task.streamed`: its batches' own progress would restart the bar at
    every batch), the time left included."""
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    def compute(progress):
        seconds = []

        def through(texts, role):
            side = method.as_role(role)
            if embed is not None:
                emb, s = embed(side, texts)
            else:
                told = None if task.streamed and role == "document" else progress
                emb, meta, _ = cached_encode(store, backbone, side, texts, batch_size=batch_size, progress=told)
                s = float(meta.get("seconds", 0.0))
            seconds.append(s)
            return emb

        arrays, meta = score_record(score_task(task, through, n_boot=n_boot, seed=seed, progress=progress))
        return arrays, {**meta, "encode_seconds": sum(seconds)}

    parts = keys.bench_parts(backbone.identity, method, task, n_boot=n_boot, seed=seed)
    arrays, meta, hit = computed(store, keys.BENCH, parts, compute, progress)
    return score_from_record(arrays, meta), meta, hit


def bench_cell_stored(store, backbone, method, task, *, n_boot: int, seed: int = 0) -> bool:
    """Whether `bench_cell` with these arguments would be read from `store` (no computing): a page asks before it
    starts work that takes minutes."""
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    if store is None:
        return False
    parts = keys.bench_parts(backbone.identity, method, task, n_boot=n_boot, seed=seed)
    return store.contains(make_key(parts), keys.BENCH)


def put_bench_cell(store, backbone, method, task, arrays: dict, meta: dict, *, n_boot: int, seed: int = 0):
    """Store a benchmark cell computed elsewhere (a Ray worker of the benchmark grid: `score_record`'s arrays and meta
    with "encode_seconds"), under the key `bench_cell` reads; returns its Score."""
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    if store is not None:
        parts = keys.bench_parts(backbone.identity, method, task, n_boot=n_boot, seed=seed)
        store.put(make_key(parts), arrays, {**meta, "warnings": list(meta.get("warnings", []))}, parts=parts,
                  namespace=keys.BENCH)
    return score_from_record(arrays, meta)


def stored_bench_cell(store, backbone, method, task, *, n_boot: int, seed: int = 0):
    """(Score, meta) of a stored benchmark cell, or None. `backbone` only needs its `identity`."""
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    entry = store.get(make_key(keys.bench_parts(backbone.identity, method, task, n_boot=n_boot, seed=seed)),
                      keys.BENCH)
    return None if entry is None else (score_from_record(entry.arrays, entry.meta), entry.meta)


# ---- context compression: answers (COMPRESSION) and attention to the pools (POOL_ATTENTION) ---------------------
def cached_compress_predict(store, system, items: list, mode: str, *, ids: bool = False,
                            progress: Progress | None = None) -> tuple[list[dict], bool]:
    """Context-compression answers (`CompressionSystem.predict`) for `items`, cached per model, weights digest,
    mode, identifier option and the exact items. `system` may stand for one unloaded (`ui.traces.Compression`).
    Returns (per-item dicts, hit)."""
    rows = [it if isinstance(it, dict) else it.to_json() for it in items]

    def compute(progress):
        preds = system.predict(rows, mode, ids=ids, progress=counting(progress, "items"))
        arrays = {k: np.asarray([p[k] for p in preds], dtype=np.int64)
                  for k in ("exact", "first_token_ok", "context_tokens", "context_positions")}
        return arrays, {"answers": json.dumps([p["answer"] for p in preds])}

    a, meta, hit = computed(store, keys.COMPRESSION, keys.compress_parts(system, rows, mode, ids), compute, progress)
    answers = json.loads(meta["answers"])
    preds = [{"answer": s, "exact": bool(e), "first_token_ok": bool(f), "context_tokens": int(t),
              "context_positions": int(p)}
             for s, e, f, t, p in zip(answers, a["exact"], a["first_token_ok"], a["context_tokens"],
                                      a["context_positions"])]
    return preds, hit


def pool_attention(store, system, item: dict, mode: str = "sentence", ids: bool = False,
                   progress: Progress | None = None):
    """((L, n_positions) attention of the answer to one item's context, pool indices), meta, hit."""

    def compute(progress):
        loaded = system.system() if callable(getattr(system, "system", None)) else system  # a stand-in loads it
        att, pools = loaded.pool_attention(item, mode, ids=ids)
        return {"attention": att, "pools": np.asarray(pools, dtype=np.int64)}, {}

    arrays, meta, hit = computed(store, keys.POOL_ATTENTION, keys.pool_attention_parts(system, item, mode, ids),
                                 compute, progress)
    return (arrays["attention"], [int(i) for i in arrays["pools"]]), meta, hit


# ---- one text's traces: attention maps (ATTENTION), Jacobians (SENSITIVITY) -------------------------------------
def attention_maps(store, backbone, method, text: str, progress: Progress | None = None):
    """(arrays, meta, hit) of one text's attention: tokens, the final token's rows "final" (L, H, S), KV-Embedding's
    prefix mass "mass" (L, H, T), TP/HTP "placeholders" (T,), Causal2Vec's "contextual" (L, H) and "c_index"."""
    backbone, _ = precision.for_method(backbone, "view:attention")  # --dtype auto: this view's dtype
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.inspect.attention import contextual_mass

    def compute(progress):
        _, tr = method.encode(backbone, [text], trace=True, attention=True, progress=counting(progress, "texts"))
        att = tr["attention"][0]  # (L, H, T, S)
        arrays = {"tokens": np.array(tr.tokens[0], dtype=str), "final": att[:, :, -1, :]}  # final: (L, H, S)
        if "kv.prefix_mass" in tr:
            arrays["mass"] = tr["kv.prefix_mass"][0]  # (L, H, T)
        if "placeholders" in tr:
            arrays["placeholders"] = tr["placeholders"][0]  # (T,) TP/HTP summary positions
        if "c2v.contextual_index" in tr and int(tr["c2v.contextual_index"][0]) >= 0:
            c = int(tr["c2v.contextual_index"][0])
            arrays["contextual"] = contextual_mass(att, tr["segments"][0], c)  # (L, H) text -> C
            arrays["c_index"] = np.array(c)
        return arrays, {}

    return computed(store, keys.ATTENTION, keys.attention_parts(backbone, method, text), compute, progress)


def jacobians(store, backbone, method, text: str, layer: int, probes: int, exact: bool,
              progress: Progress | None = None):
    """(arrays, meta, hit): Jacobian norms of both readouts and the attention-product bound for one text; meta has
    the tokens, the layer, the bound's agreement, the decay and the sensitivity's own seconds."""
    backbone, _ = precision.for_method(backbone, "view:sensitivity")  # --dtype auto: this view's dtype
    from analysis.inspect import sensitivity as S  # lazy: keeps torch off the pages' and the command line's start

    def compute(progress):
        s = S.jacobian_norms(backbone, method, text, layer=layer, probes=probes, exact=exact,
                             progress=counting(progress, "probes"))
        b = S.attention_bound(backbone, method, text, layer=layer)
        arrays = {**s.arrays(), "bound_last": b.last, "bound_mean": b.mean}
        meta = {"tokens": s.tokens, "layer": s.layer, "agreement": S.compare(s, b), "decay": S.decay(s),
                "sensitivity_seconds": s.seconds}
        return arrays, meta

    parts = keys.sensitivity_parts(backbone, method, text, layer, probes, exact)
    return computed(store, keys.SENSITIVITY, parts, compute, progress)


def jacobians_stored(store, backbone, method, text: str, layer: int, probes: int, exact: bool) -> bool:
    """Whether `jacobians(...)` would compute nothing. A stored result passed the token budget when it was computed,
    so a page checks the budget (which tokenizes) only before real work."""
    backbone, _ = precision.for_method(backbone, "view:sensitivity")  # --dtype auto: this view's dtype
    parts = keys.sensitivity_parts(backbone, method, text, layer, probes, exact)
    return store is not None and store.contains(make_key(parts), keys.SENSITIVITY)


# ---- geometry: alignment and uniformity (GEOMETRY), anisotropy by layer (ANISOTROPY), maps (EMBEDDING_MAP) ------
def geometry(store, backbone, method, positives, n_boot: int, *, batch_size: int = 16,
             progress: Progress | None = None):
    """(values, meta, hit): alignment, its interval, uniformity, its interval, anisotropy, its interval (9 floats)
    of `method` over `positives` (`analysis.inspect.geometry.PositivePairs`); meta has n_texts and n_pairs."""
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    def compute(progress):
        emb, _, _ = cached_encode(store, backbone, method, positives.texts, batch_size=batch_size, progress=progress)
        g = G.measure(emb, positives.left_index, positives.right_index, n_boot=n_boot, seed=0)
        values = [g.alignment, *g.alignment_ci, g.uniformity, *g.uniformity_ci, g.anisotropy, *g.anisotropy_ci]
        return {"values": np.array(values)}, {"n_texts": g.n_texts, "n_pairs": g.n_pairs}

    parts = keys.geometry_parts(backbone, method, positives.texts, positives.left_index, positives.right_index, n_boot)
    arrays, meta, hit = computed(store, keys.GEOMETRY, parts, compute, progress)
    return arrays["values"], meta, hit


def anisotropy(store, backbone, method, texts: list[str], progress: Progress | None = None):
    """(anisotropy at every hidden state (L+1,), meta, hit)."""
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    def compute(progress):
        return {"curve": G.anisotropy_by_layer(backbone, method, texts, progress=counting(progress, "texts"))}, {}

    arrays, meta, hit = computed(store, keys.ANISOTROPY, keys.anisotropy_parts(backbone, method, texts), compute,
                                 progress)
    return arrays["curve"], meta, hit


def embedding_map(store, backbone, method, texts: list[str], kind: str, seed: int, *, batch_size: int = 16,
                  progress: Progress | None = None):
    """((n, 2) PCA or UMAP map of the method's embeddings of `texts`, meta, hit)."""
    backbone, _ = precision.for_method(backbone, method.name)  # --dtype auto: this method's dtype
    def compute(progress):
        emb, _, _ = cached_encode(store, backbone, method, texts, batch_size=batch_size, progress=progress)
        return {"xy": G.embedding_map(emb, kind, seed=seed)}, {}

    arrays, meta, hit = computed(store, keys.EMBEDDING_MAP, keys.embedding_map_parts(backbone, method, texts, kind,
                                                                                      seed), compute, progress)
    return arrays["xy"], meta, hit


# ---- soft tokens: one text's generation report (SOFT_GENERATION), the scaling curve (SOFT_SCALING) ---------------
def soft_generation(store, backbone, text: str, instruction: str, progress: Progress | None = None, **settings):
    """(report, meta, hit): `generate_soft_tokens`'s report for one text, its arrays stored as arrays and the rest
    as JSON, so a stored report is read back without loading the adapter. Settings left out and settings given at
    their defaults read the same entry."""
    backbone, _ = precision.for_method(backbone, "soft_tokens")  # --dtype auto: this method's dtype
    from analysis.inspect import generation  # lazy: keeps torch off the pages' and the command line's start
    settings = soft_settings(**settings)
    adapter = settings.pop("adapter")

    def compute(progress):
        report = generation.generate_soft_tokens(backbone, text, instruction, adapter=adapter, **settings)
        arrays = {k: v for k, v in report.items() if isinstance(v, np.ndarray)}
        return arrays, {"report": {k: v for k, v in report.items() if k not in arrays}}

    parts = keys.soft_generation_parts(backbone, text, instruction, settings, adapter_spec(adapter))
    arrays, meta, hit = computed(store, keys.SOFT_GENERATION, parts, compute, progress)
    return {**meta["report"], **arrays}, meta, hit


def soft_settings(**settings) -> dict:
    """`generate_soft_tokens`'s settings with its defaults filled in (what `soft_generation` keys)."""
    return {**_soft_defaults(), **settings}


@functools.cache
def _soft_defaults() -> dict:
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.inspect.generation import generate_soft_tokens

    return {name: p.default for name, p in inspect.signature(generate_soft_tokens).parameters.items()
            if p.default is not inspect.Parameter.empty and name != "instruction"}


def soft_scaling(store, backbone, pairs, ks: list[int], params: dict, *, batch_size: int | None = None,
                 progress: Progress | None = None):
    """(arrays ks, spearman, ci (m, 2), ..., meta, hit): STS Spearman of soft-token embeddings at every K in `ks`
    (`scaling_curve`, one generation of max K tokens); `params` are its settings (the adapter among them)."""
    backbone, _ = precision.for_method(backbone, "soft_tokens")  # --dtype auto: this method's dtype
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.inspect.generation import scaling_curve
    ks = sorted(ks)
    extra = {} if batch_size is None else {"batch_size": batch_size}  # not in the key: results do not depend on it

    def compute(progress):
        return scaling_curve(backbone, pairs, ks, progress=counting(progress, "texts"), **params, **extra), {}

    parts = keys.soft_scaling_parts(backbone, pairs, ks, params, adapter_spec(params.get("adapter", "shipped")))
    return computed(store, keys.SOFT_SCALING, parts, compute, progress)
