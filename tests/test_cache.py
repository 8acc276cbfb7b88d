"""Tests for the on-disk compute cache: keys, corruption handling, no pickle, concurrent writers, clearing."""

import hashlib
import io
import json
import multiprocessing as mp
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import analysis
import cache
from cache import Entry, Store, cached_encode, default_store, make_key
from analysis.core import versions
from analysis.data.corpora import Pairs
from cache import keys
from cache import store as store_mod


@dataclass(frozen=True)
class Params:
    layer: int = -1
    prompt: str = 'This sentence : "{text}" means in one word:"'


class FakeBackbone:
    def __init__(self, identity="fake-model@sha256:abc"):
        self.identity = identity


class FakeMethod:
    """Counts encode calls; embeds each text as (len, number of 'a's, layer)."""

    def __init__(self, name="fake", params=Params(), warn=None):
        self.name, self.params, self.warn, self.calls = name, params, warn, 0

    def encode(self, backbone, texts, progress=None, **kwargs):
        self.calls += 1
        if self.warn:
            warnings.warn(self.warn, analysis.TruncationWarning)
        return np.array([[len(t), t.count("a"), self.params.layer] for t in texts], dtype=np.float64)


PARTS = {"model": "m@rev1", "method": "prompteol", "params": Params(), "texts": ["a cat", "a dog"]}


def compute_counter():
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "ids": np.array([3, 1])}, {"note": "hi"}

    return compute, calls


def only_entry_dir(store, namespace="default"):
    dirs = [d for d in (store.root / namespace).glob("*/*") if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


# ---------------------------------------------------------------- keys


def test_same_parts_hit_once(tmp_path):
    store = Store(tmp_path)
    compute, calls = compute_counter()
    e1, hit1 = store.get_or_compute(dict(PARTS), compute)
    e2, hit2 = store.get_or_compute(dict(PARTS), compute)
    assert (hit1, hit2) == (False, True) and len(calls) == 1
    np.testing.assert_array_equal(e2.arrays["x"], np.arange(6, dtype=np.float32).reshape(2, 3))
    assert e2.arrays["x"].dtype == np.float32 and e2.meta == {"note": "hi"} and e1.key == e2.key
    assert e1.created == pytest.approx(e2.created)


def test_contains_answers_without_computing(tmp_path):
    store = Store(tmp_path)
    key = make_key(dict(PARTS))
    assert not store.contains(key)
    store.get_or_compute(dict(PARTS), compute_counter()[0])
    assert store.contains(key) and not store.contains(key, "auto_layers")


@pytest.mark.parametrize("change", [
    {"model": "m@rev2"},
    {"method": "pcoteol"},
    {"params": Params(layer=-2)},
    {"params": Params(prompt='This sentence : "{text}" means in one word:')},
    {"texts": ["a cat", "a dog."]},
    {"texts": ["a cat", "a  dog"]},
    {"texts": ["a dog", "a cat"]},
])
def test_any_change_is_a_new_key_and_a_miss(tmp_path, change):
    store = Store(tmp_path)
    compute, calls = compute_counter()
    store.get_or_compute(dict(PARTS), compute)
    changed = {**PARTS, **change}
    assert make_key(changed) != make_key(PARTS)
    _, hit = store.get_or_compute(changed, compute)
    assert not hit and len(calls) == 2


class LastLike(FakeMethod):
    """A fake whose code lives, for the key, in analysis/methods/last.py (keys name `type(method).__module__`)."""

    __module__ = "analysis.methods.last"


def test_library_version_is_in_the_key(monkeypatch):
    parts = keys.encode_parts(FakeBackbone(), LastLike(), ["a cat"], {})
    monkeypatch.setattr(analysis, "__version__", analysis.__version__ + ".post1")
    assert make_key(keys.encode_parts(FakeBackbone(), LastLike(), ["a cat"], {})) != make_key(parts)


def _source_copy(tmp_path, name: str, edit: str | None = None) -> Path:
    """A copy of the package's sources with one module appended to (a simulated edit)."""
    import shutil

    copy = tmp_path / name / "analysis"
    shutil.copytree(versions.ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "artefacts"))
    if edit is not None:
        with open(copy / edit, "a") as f:
            f.write("\n# an edit\n")
    return copy


def test_a_key_changes_with_the_code_that_computed_it_and_nothing_else(tmp_path, monkeypatch):
    """An edit to an unrelated module keeps a stored embedding; an edit to the method or to what it imports
    recomputes it; the STS score's key also follows the scoring module."""
    store, bb, method, texts = Store(tmp_path / "store"), FakeBackbone(), LastLike(), ["a cat", "dog"]

    def under(copy):
        monkeypatch.setattr(versions, "ROOT", copy)
        return cached_encode(store, bb, method, texts)[2]

    assert under(_source_copy(tmp_path, "same")) is False and method.calls == 1
    assert under(_source_copy(tmp_path, "unrelated", "eval/sts.py")) is True  # a scoring module, not the method
    assert under(_source_copy(tmp_path, "elsewhere", "compression/system.py")) is True
    assert under(_source_copy(tmp_path, "method", "methods/last.py")) is False and method.calls == 2
    assert under(_source_copy(tmp_path, "import", "core/pooling.py")) is False  # imported by methods/base.py
    pairs = Pairs("p", ["a"], ["b"], np.array([1.0]))
    scores = set()
    for name, edit in (("same", None), ("unrelated", "eval/sts.py"), ("method", "methods/last.py")):
        monkeypatch.setattr(versions, "ROOT", tmp_path / name / "analysis")
        scores.add(make_key(keys.sts_score_parts(bb, pairs, method)))
    assert len(scores) == 3


def test_keys_name_modules_that_exist():
    """A renamed module fails loudly instead of silently dropping out of every key."""
    import ast

    named = {n.value for n in ast.walk(ast.parse(Path(keys.__file__).read_text()))
             if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("analysis.")}
    files, _ = versions._graph(versions.ROOT)
    assert named and named <= files.keys()
    with pytest.raises(ValueError, match="not a module"):
        versions.source_digest(["analysis.methods.no_such_method"])


def test_sessions_asking_for_their_first_key_together_parse_the_package_once(monkeypatch):
    """Sixteen app sessions opening one lesson step at once each parsed every module of the package for their first
    cache key (the digest's memo was filled by whoever finished first), one at a time: most of the class's wait.
    Now the first parses and the others wait for it."""
    import threading

    versions._graph.cache_clear(), versions._digest.cache_clear()
    parsed, parse = [], versions.parse
    monkeypatch.setattr(versions, "parse", lambda source: (parsed.append(1), parse(source))[1])
    start = threading.Barrier(8)
    codes = []

    def session():
        start.wait()
        codes.append(keys.code("analysis.methods.last", "analysis.eval.sts"))

    threads = [threading.Thread(target=session) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    files, _ = versions._graph(versions.ROOT)
    assert len(set(codes)) == 1 and len(codes) == 8
    assert len(parsed) == len(files)  # every module once, not once per session


def test_source_is_parsed_one_thread_at_a_time():
    """CPython 3.11's ast keeps one recursion counter per interpreter: two app sessions parsing at once failed with
    "AST constructor recursion depth mismatch" (CI, the four-sessions test). A parse waits while another holds it."""
    import threading

    done = threading.Event()
    with versions._PARSING:
        worker = threading.Thread(target=lambda: (versions.parse("x = 1"), done.set()))
        worker.start()
        assert not done.wait(0.2)  # blocked while the lock is held
    worker.join(5)
    assert done.is_set()


def test_key_is_canonical_and_typed():
    assert make_key({"a": 1, "b": [1, 2]}) == make_key({"b": (1, 2), "a": 1})  # order, tuple vs list
    assert make_key({"a": np.int64(3), "f": np.float32(0.5)}) == make_key({"a": 3, "f": 0.5})
    assert make_key({"p": Params()}) == make_key({"p": {"layer": -1, "prompt": Params.prompt}})
    assert make_key({"t": "é"}) != make_key({"t": "e"})
    assert len(make_key({})) == 64
    for bad in ({"s": {1, 2}}, {"a": np.zeros(2)}, {"o": object()}, {1: "int key"}, ["not", "a dict"]):
        with pytest.raises(TypeError):
            make_key(bad)


# ---------------------------------------------------------------- corruption


def _truncate(d):
    data = (d / "data.npz").read_bytes()
    (d / "data.npz").write_bytes(data[: len(data) // 2])


def _garbage_meta(d):
    (d / "meta.json").write_text("{not json")


def _delete_npz(d):
    (d / "data.npz").unlink()


def _tamper(d):
    data = bytearray((d / "data.npz").read_bytes())
    data[-60] ^= 0xFF  # same length, still a plausible file: only the hash can tell
    (d / "data.npz").write_bytes(bytes(data))


def _swap_for_valid_npz(d):
    buf = io.BytesIO()  # a perfectly readable npz, just not the one the record describes
    np.savez(buf, x=np.zeros((2, 3), dtype=np.float32), ids=np.array([9, 9]))
    (d / "data.npz").write_bytes(buf.getvalue())


def _wrong_record(d):
    rec = json.loads((d / "meta.json").read_text())
    del rec["sha256"]
    (d / "meta.json").write_text(json.dumps(rec))


def _deeply_nested_meta(d):
    # Valid JSON nested 200,000 levels deep: the parser raises RecursionError, which must mean "damaged".
    (d / "meta.json").write_text("[" * 200_000 + "]" * 200_000)


@pytest.mark.parametrize("damage", [_truncate, _garbage_meta, _delete_npz, _tamper, _swap_for_valid_npz, _wrong_record,
                                    _deeply_nested_meta])
def test_damaged_entry_is_a_miss_then_valid_again(tmp_path, damage):
    store = Store(tmp_path)
    compute, calls = compute_counter()
    store.get_or_compute(PARTS, compute)
    damage(only_entry_dir(store))
    assert store.get(make_key(PARTS)) is None
    assert not store.path_for(make_key(PARTS)).exists()  # removed, not left to fail again
    _, hit = store.get_or_compute(PARTS, compute)
    assert not hit and len(calls) == 2
    entry, hit = store.get_or_compute(PARTS, compute)
    assert hit and len(calls) == 2 and entry.arrays["ids"].tolist() == [3, 1]


def test_object_arrays_rejected(tmp_path):
    store = Store(tmp_path)
    for bad in (np.array([{"a": 1}, None], dtype=object), [1, "two", None]):
        with pytest.raises(TypeError, match="object dtype"):
            store.put(make_key({"b": 1}), {"x": bad})
    assert store.count() == 0


def test_load_never_unpickles(tmp_path, monkeypatch):
    """An entry whose npz holds a pickled object array (hash and record consistent) is not trusted."""
    store = Store(tmp_path)
    key = make_key(PARTS)
    store.put(key, {"x": np.zeros(2)})
    d = store.path_for(key)
    buf = io.BytesIO()
    np.savez(buf, x=np.array([{"evil": 1}], dtype=object))  # written with pickle, as an attacker could
    blob = buf.getvalue()
    (d / "data.npz").write_bytes(blob)
    rec = json.loads((d / "meta.json").read_text())
    rec["sha256"] = hashlib.sha256(blob).hexdigest()
    (d / "meta.json").write_text(json.dumps(rec))

    seen = []
    real_load = np.load
    monkeypatch.setattr(np, "load", lambda *a, **kw: seen.append(kw.get("allow_pickle")) or real_load(*a, **kw))
    assert store.get(key) is None
    assert seen == [False]


# ---------------------------------------------------------------- concurrency


def _race_worker(root, parts, index, barrier, results, through="put"):
    store = Store(root)
    barrier.wait()  # everyone misses, computes and writes at the same moment

    def compute():
        time.sleep(0.2)
        with open(Path(root) / f"computed-{index}", "w"):  # counted by the test
            pass
        return {"x": np.full((256, 512), index, dtype=np.float32)}, {"writer": index}  # 512 KiB each

    if through == "put":  # the rename race itself: every writer has its own copy ready
        arrays, meta = compute()
        entry, hit = store.put(make_key(parts), arrays, meta, parts=parts), False
    else:
        entry, hit = store.get_or_compute(parts, compute)
    results.put((index, hit, float(entry.arrays["x"].min()), float(entry.arrays["x"].max()), entry.meta["writer"]))


def _race(tmp_path, n, through):
    ctx = mp.get_context("spawn")
    # Plain processes with a shared Barrier and Queue: no Manager server process to start (which failed
    # spuriously with EOFError on a heavily loaded machine).
    barrier, queue = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_race_worker, args=(str(tmp_path), PARTS, i, barrier, queue, through))
             for i in range(n)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in range(n)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return results


def test_concurrent_writers_leave_one_valid_entry(tmp_path):
    results = _race(tmp_path, 4, "put")
    store = Store(tmp_path)
    entry = store.get(make_key(PARTS))
    assert entry is not None and store.count() == 1
    winner = entry.meta["writer"]
    assert entry.arrays["x"].shape == (256, 512) and np.all(entry.arrays["x"] == winner)  # not a mix
    for _, _, lo, hi, writer in results:  # losers hand back the winner's entry, so all agree
        assert lo == hi == winner == writer
    leftovers = [p.name for p in tmp_path.rglob("*") if p.name.startswith(".") and p.name != ".locks"]
    assert leftovers == []


def test_concurrent_processes_compute_the_same_entry_once(tmp_path):
    """Three processes missing the same key at once: one computes, the two others wait for it and read its entry
    (before issue 52 each computed and stored its own copy)."""
    results = _race(tmp_path, 3, "get_or_compute")
    assert len(list(tmp_path.glob("computed-*"))) == 1
    assert sorted(hit for _, hit, *_ in results) == [False, True, True]
    assert len({writer for *_, writer in results}) == 1
    assert [p for p in (tmp_path / ".locks").rglob("*") if p.is_file()] == []  # nothing left per key


def test_concurrent_threads_compute_once_and_waiters_are_told(tmp_path):
    """Two app sessions (threads) asking the same result at once: it is computed once; the one that waits is told
    so, with the other's progress and an estimate, then reads the stored entry."""
    import threading

    store, calls, told = Store(tmp_path), [], []
    started = threading.Event()

    def compute(progress):
        calls.append(1)
        started.set()
        for i in range(1, 5):
            time.sleep(0.4)
            progress(i, 8, f"{i}/8 texts")
        return {"x": np.arange(3.0)}, {}

    out = {}

    def session(name, progress):
        out[name] = store.get_or_compute(PARTS, compute, progress=progress)

    first = threading.Thread(target=session, args=("first", lambda *a: None))
    first.start()
    started.wait(10)
    second = threading.Thread(target=session, args=("second", lambda d, t, m: told.append((d, t, m))))
    second.start()
    first.join(30)
    second.join(30)
    assert len(calls) == 1 and out["first"][1] is False and out["second"][1] is True
    assert np.array_equal(out["second"][0].arrays["x"], np.arange(3.0))
    assert told and all(m.startswith("Waiting for the same computation") for *_, m in told)
    assert any("texts" in m and "left" in m for *_, m in told)  # the holder's progress, with an estimate


# ---------------------------------------------------------------- size, count, clear


def test_size_count_clear_spare_models_and_runs(tmp_path):
    store = Store(tmp_path / "root")
    assert store.size_bytes() == 0 and store.count() == 0 and store.clear() == 0  # root does not exist yet
    for i in range(3):
        store.put(make_key({"i": i}), {"x": np.zeros(1000)})
    store.put(make_key({"i": 0}), {"x": np.ones(10)}, namespace="scores")
    weights = store.root / "models" / "smollm2-abc" / "model.safetensors"
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"w" * 5000)
    run = store.root / "runs" / "causal2vec" / "smollm2-135m" / "latest" / "manifest.json"  # a trained run
    run.parent.mkdir(parents=True)
    run.write_text("{}")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    (store.root / "default" / "ab").mkdir(parents=True, exist_ok=True)
    (store.root / "default" / "ab" / ("ab" + "0" * 62)).symlink_to(tmp_path)  # must be unlinked, not followed

    assert store.count() == 4
    assert store.size_bytes() > 3 * 8000 + 5000
    assert store.clear("scores") == 1 and store.count() == 3
    assert store.clear() == 3
    assert store.count() == 0 and weights.is_file() and run.is_file() and outside.read_text() == "keep me"
    assert not (store.root / "default").exists()  # emptied shard and namespace folders go too
    assert store.size_bytes() == 5000 + 2
    assert store.clear("models") == 1 and not weights.exists() and store.size_bytes() == 2
    with pytest.raises(ValueError):
        store.clear("../escape")


def test_clear_removes_records_of_the_old_auto_layers_layout(tmp_path):
    store = Store(tmp_path)
    legacy = tmp_path / "auto_layers" / ("0" * 32 + ".json")  # before the window became a store entry
    legacy.parent.mkdir()
    legacy.write_text('{"layers": [9, 10, 11, 12]}')
    store.put(make_key({"k": 1}), {"x": np.zeros(3)}, namespace="auto_layers")
    assert store.clear() == 2 and not (tmp_path / "auto_layers").exists()


def _busy_writer(root, seconds):
    store = Store(root)
    end, i = time.time() + seconds, 0
    while time.time() < end:
        store.put(make_key({"i": i % 50}), {"x": np.zeros(200)}, namespace=f"ns{i % 3}")
        i += 1


def test_clear_racing_another_process_writes_raises_nothing(tmp_path):
    proc = mp.get_context("spawn").Process(target=_busy_writer, args=(str(tmp_path), 4.0))
    proc.start()
    try:
        deadline = time.time() + 60
        while not any(tmp_path.iterdir()) and time.time() < deadline:  # the writer has started
            time.sleep(0.05)
        store, cleared, rounds = Store(tmp_path), 0, 0
        while proc.is_alive():
            cleared += store.clear()  # folders vanish and appear under it: never an exception
            store.count(), store.size_bytes()
            rounds += 1
    finally:
        proc.join(timeout=60)
    assert proc.exitcode == 0 and rounds > 1 and cleared > 0


def _unwritable_root(tmp_path) -> Path:
    """A cache root nothing can create, even as root (which ignores permission bits): its parent is a file."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    return blocker / "cache"


def test_unwritable_cache_folder_computes_without_storing_and_warns_once(tmp_path):
    store = Store(_unwritable_root(tmp_path))
    compute, calls = compute_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            entry, hit = store.get_or_compute(PARTS, compute)
            assert not hit and entry.arrays["ids"].tolist() == [3, 1]
        emb, meta, hit = cached_encode(store, FakeBackbone(), FakeMethod(), ["a", "b"])
    assert emb.shape == (2, 3) and not hit and len(calls) == 3
    msgs = [str(w.message) for w in caught if issubclass(w.category, cache.CacheWarning)]
    assert len(msgs) == 1 and "cannot be written" in msgs[0] and "computed but not stored" in msgs[0]
    assert store.count() == 0 and store.clear() == 0 and store.size_bytes() == 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders; the test above covers root")
def test_read_only_cache_folder_computes_without_storing(tmp_path):
    store = Store(tmp_path / "ro")
    store.put(make_key({"k": 1}), {"x": np.zeros(3)})
    for d in [store.root, *store.root.rglob("*")]:
        if d.is_dir():
            d.chmod(0o555)
    try:
        compute, calls = compute_counter()
        with pytest.warns(cache.CacheWarning, match="computed but not stored"):
            entry, hit = store.get_or_compute(PARTS, compute)
        assert not hit and store.get(make_key({"k": 1})) is not None  # reading still works
        assert store.clear() == 0  # nothing can be removed: no exception either
    finally:
        for d in [store.root, *store.root.rglob("*")]:
            if d.is_dir():
                d.chmod(0o755)


def test_full_disk_degrades_like_a_read_only_folder(tmp_path, monkeypatch):
    import errno

    store = Store(tmp_path)

    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.warns(cache.CacheWarning, match="No space left on device"):
        entry, hit = store.get_or_compute(PARTS, compute_counter()[0])
    assert not hit and entry.arrays["ids"].tolist() == [3, 1]
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []  # no half-written entry left behind


def test_clear_spares_fresh_temp_dirs_and_removes_stale_ones(tmp_path):
    store = Store(tmp_path)
    key = make_key({"k": 1})
    store.put(key, {"x": np.zeros(3)})
    shard = store.path_for(key).parent
    fresh, stale = shard / ".tmp-fresh", shard / ".tmp-stale"
    fresh.mkdir(), stale.mkdir()
    old = time.time() - 2 * store_mod.STALE_SECONDS
    os.utime(stale, (old, old))
    assert store.clear() == 1
    assert fresh.is_dir() and not stale.exists()


def test_bad_keys_and_namespaces_rejected(tmp_path):
    store = Store(tmp_path)
    for key in ("../x", "a/b", "", "x", ".." + "a" * 10):
        with pytest.raises(ValueError):
            store.path_for(key)
    with pytest.raises(ValueError):
        store.path_for(make_key({}), namespace="..")


def test_default_store_follows_env(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "a"))
    a = default_store()
    assert a is default_store() and a.root == tmp_path / "a"
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "b"))
    assert default_store().root == tmp_path / "b"
    monkeypatch.delenv("EMBEDSCOPE_CACHE")
    assert default_store().root == Path(cache.__file__).resolve().parent / "store"


# ---------------------------------------------------------------- cached_encode


def test_cached_encode_hits_and_replays_warnings(tmp_path):
    store = Store(tmp_path)
    bb, method = FakeBackbone(), FakeMethod(warn="1 text was cut to 512 tokens")
    texts = ["a cat sat", "dog"]
    with pytest.warns(analysis.TruncationWarning, match="cut to 512"):
        emb, meta, hit = cached_encode(store, bb, method, texts, max_length=512)
    assert not hit and emb.dtype == np.float32 and emb.shape == (2, 3)
    assert meta["warnings"] == ["1 text was cut to 512 tokens"] and meta["n"] == 2 and meta["seconds"] >= 0

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a hit re-emits nothing: the messages are in meta
        emb2, meta2, hit2 = cached_encode(store, bb, method, texts, max_length=512)
    assert hit2 and method.calls == 1 and meta2 == meta
    np.testing.assert_array_equal(emb2, emb)
    assert emb2.dtype == np.float32

    with pytest.warns(analysis.TruncationWarning):
        _, _, hit3 = cached_encode(store, bb, method, texts, max_length=256)  # kwargs are part of the key
    assert not hit3 and method.calls == 2
    with pytest.warns(analysis.TruncationWarning):
        _, _, hit4 = cached_encode(store, FakeBackbone("other"), method, texts, max_length=512)
    assert not hit4 and method.calls == 3
    assert isinstance(store.get(make_key(keys.encode_parts(bb, method, texts, {"max_length": 512})),
                                namespace=keys.EMBEDDINGS), Entry)
