"""Issue 52, the cache under many users: the same computation asked by several sessions or processes at once runs
once, concurrent writers of the same document vectors store each once, one model is loaded however many sessions
ask, and a waiting session is told whose work it waits for. No real model: fake methods and tiny random ones."""

import functools
import multiprocessing as mp
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cache import Store, cached_encode, encode_documents, keys
from cache.flight import Status, estimate_left, flight, waiting_message
from cache.vectors import VectorStore


@dataclass(frozen=True)
class Params:
    layer: int = -1


class Backbone:
    identity = "fake-model@sha256:faults"


class SlowMethod:
    """Embeds each text as (len, count of 'a') after a pause, and counts the texts it embedded in `log`."""

    name, params = "fake", Params()

    def __init__(self, log: Path | None = None, pause: float = 0.3):
        self.log, self.pause = log, pause

    def encode(self, backbone, texts, progress=None, **kwargs):
        time.sleep(self.pause)
        if self.log is not None:
            with open(self.log, "a", encoding="utf-8") as fh:
                fh.write("".join(t + "\n" for t in texts))
        return np.array([[len(t), t.count("a")] for t in texts], dtype=np.float32)


DOCS = [f"document number {i} about a cat" for i in range(12)]


def _overlapping_writer(root, index, barrier, done):
    barrier.wait()  # all three miss and compute at the same moment
    texts = DOCS[2 * index: 2 * index + 8]  # 8 documents, 6 of them shared with a neighbour
    encode_documents(Store(root), Backbone(), SlowMethod(), texts)
    done.put(index)


def test_concurrent_writers_of_overlapping_corpora_store_each_document_once(tmp_path):
    """Three processes embedding overlapping corpora at once: every document's vector is stored in exactly one shard
    (before issue 52 each process stored its own copy of the shared ones)."""
    ctx = mp.get_context("fork")  # the children run no torch: forking spares them 15 s of imports each
    barrier, done = ctx.Barrier(3), ctx.Queue()
    procs = [ctx.Process(target=_overlapping_writer, args=(str(tmp_path), i, barrier, done)) for i in range(3)]
    for p in procs:
        p.start()
    assert sorted(done.get(timeout=120) for _ in procs) == [0, 1, 2]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    store = Store(tmp_path)
    vs = VectorStore(store, Backbone(), SlowMethod())
    stored = Counter(d.decode() for s in vs.shards() for d in store.get(s, keys.VECTORS).arrays["digests"])
    assert set(stored) == {keys.text_digest(t) for t in DOCS[:12]} and set(stored.values()) == {1}
    again, meta, hit = encode_documents(store, Backbone(), SlowMethod(), DOCS)
    assert hit and meta["computed"] == 0 and again[3].tolist() == [len(DOCS[3]), DOCS[3].count("a")]


def _same_list(root, barrier, done):
    barrier.wait()
    emb, _, hit = cached_encode(Store(root), Backbone(), SlowMethod(Path(root) / "embedded.txt", 1.0), DOCS[:5])
    done.put((hit, emb.tolist()))


def test_three_processes_asking_the_same_list_compute_it_once(tmp_path):
    """The issue's case: three processes computing the same result on one cache. One computes and stores one shard;
    the others wait for it and read it."""
    ctx = mp.get_context("fork")  # the children run no torch: forking spares them 15 s of imports each
    barrier, done = ctx.Barrier(3), ctx.Queue()
    procs = [ctx.Process(target=_same_list, args=(str(tmp_path), barrier, done)) for _ in range(3)]
    for p in procs:
        p.start()
    results = [done.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert (tmp_path / "embedded.txt").read_text().splitlines() == DOCS[:5]  # each document embedded once
    assert sorted(hit for hit, _ in results) == [False, True, True]
    assert len({str(emb) for _, emb in results}) == 1
    assert len(VectorStore(Store(tmp_path), Backbone(), SlowMethod()).shards()) == 1


def test_two_sessions_embedding_the_same_texts_compute_once(tmp_path):
    """Two app sessions (threads of one server) asking the same embeddings at once: one forward pass, and the
    waiting one is told so before it reads the result."""
    store, log = Store(tmp_path), tmp_path / "embedded.txt"
    told, out = [], {}

    def session(name, progress):
        out[name] = cached_encode(store, Backbone(), SlowMethod(log, 1.5), DOCS[:4], progress=progress)

    first = threading.Thread(target=session, args=("first", None))
    first.start()
    time.sleep(0.3)
    second = threading.Thread(target=session, args=("second", lambda d, t, m: told.append(m)))
    second.start()
    first.join(30)
    second.join(30)
    assert log.read_text().splitlines() == DOCS[:4]
    assert out["first"][2] is False and out["second"][2] is True
    np.testing.assert_array_equal(out["first"][0], out["second"][0])
    assert told and told[0].startswith("Waiting for the same computation, started")


def test_a_flight_is_free_again_when_its_holder_dies(tmp_path):
    """A process killed while computing holds nothing: the kernel drops its lock, and the next caller computes; the
    progress the dead one published is removed (before, the next holder's waiters were told it until it reported)."""
    ctx = mp.get_context("spawn")
    proc = ctx.Process(target=_hold_forever, args=(str(tmp_path),))
    proc.start()
    lock = tmp_path / ".locks" / "default" / "abc.lock"
    deadline = time.time() + 60
    while not lock.with_suffix(".json").exists() and time.time() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.join(30)
    began = time.monotonic()
    assert lock.with_suffix(".json").exists()
    with flight(tmp_path, "default", "abc") as held:
        assert held.waited is False and not lock.with_suffix(".json").exists()
    assert time.monotonic() - began < 5


def _hold_forever(root):
    with flight(root, "default", "abc") as held:
        from cache import flight as module

        module.PUBLISH_SECONDS = 0  # the status file tells the test the lock is held
        held.progress(1, 2, "half")
        time.sleep(600)


def test_waiting_message_says_how_far_and_how_long():
    s = Status(started=100.0, done=25, total=100, message="25/100 texts")
    assert estimate_left(s, now=110.0) == 30.0
    assert waiting_message(s, now=110.0) == ("Waiting for the same computation, started 10 s ago by another "
                                             "session: 25/100 texts, about 30 s left; its result will be read from "
                                             "the cache.")
    assert "no estimate yet" in waiting_message(Status(started=100.0), now=101.0)


def _together(n, call):
    """`call()` from n threads released at the same moment; their results."""
    gate, out = threading.Barrier(n), []

    def run():
        gate.wait()
        out.append(call())

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def test_one_model_in_memory_however_many_sessions(monkeypatch):
    """Eight sessions opening the app at once on a fresh server load the model once (st.cache_resource's lock per
    key), and the handle every session holds (`LazyBackbone`) loads its weights once."""
    from ui import model as M

    calls = []

    class Loaded:
        model = "weights"

    def load(name, device="cpu", dtype="float32"):
        calls.append(name)
        time.sleep(0.5)
        return Loaded()

    monkeypatch.setattr(M.backbone_module, "load_backbone", load)
    M._load.clear()
    try:
        loaded = _together(8, lambda: M._load("faults-model", "cpu", "float32"))
        assert len(calls) == 1 and all(b is loaded[0] for b in loaded)

        class Described:
            identity, facts = "faults@1", None

        lazy = M.LazyBackbone(Described(), lambda: load("lazy"))
        models = _together(8, lambda: lazy.model)  # the first use of the weights, in every session at once
        assert calls == ["faults-model", "lazy"] and len(models) == 8
    finally:
        M._load.clear()


def test_the_sentence_encoder_is_loaded_once_by_concurrent_sessions(monkeypatch):
    from analysis.models import minilm

    calls = []

    def slow_load():
        calls.append(1)
        time.sleep(0.5)
        return object()

    monkeypatch.setattr(minilm, "_load_encoder", functools.lru_cache(maxsize=1)(slow_load))
    encoders = _together(6, minilm.load_encoder)
    assert len(calls) == 1 and all(e is encoders[0] for e in encoders)
