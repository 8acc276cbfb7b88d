"""Corpus-scale encoding (issue 34): batches under a token budget that never change a vector, and every document's
vector kept in the store by text digest, so a re-run costs nothing and an interrupted run resumes with the same
vectors. Tiny random models only."""

import random
import warnings

import numpy as np
import pytest

import analysis
from analysis.core.tokens import TOKEN_BUDGET, batches_by_length
from analysis.methods import list_methods
from analysis.models.tiny import tiny_backbone
from cache import Store, cached_encode, encode_documents, keys
from cache.progress import Meter, duration
from cache.vectors import VectorStore
from tests.conftest import tiny_method

METHODS = [m.name for m in list_methods()]
# Settings that keep the known-answer test short without touching batching: a fixed KV-Embedding window (auto runs
# an intrinsic-dimension trajectory first), two soft tokens instead of five.
FAST = {"kv_embedding": {"layers": "1,2"}, "soft_tokens": {"k": 2}}
# 13 distinct texts of 2 to 25 words, so budgets of a few dozen tokens regroup them.
WORDS = "the bank raised its rates while a quick brown fox jumps over the lazy dog near the river bank".split()
DOCS = [" ".join(WORDS[(3 * i) % len(WORDS):] + WORDS[: (5 * i) % 17]) for i in range(11)] + ["a bank", "Hello!"]


class Stop(Exception):
    pass


# ---- batches under a token budget -----------------------------------------------------------------------------
def test_batches_respect_the_count_and_the_token_budget():
    rng = random.Random(0)
    for _ in range(500):
        lengths = [rng.randint(1, 300) for _ in range(rng.randint(1, 40))]
        size, budget = rng.randint(1, 16), rng.randint(1, 2000)
        old = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        assert batches_by_length(lengths, size) == [old[i:i + size] for i in range(0, len(old), size)]  # as before
        groups = batches_by_length(lengths, size, budget)
        assert sum(groups, []) == old  # every text once, longest first
        for g in groups:
            assert len(g) <= size and (len(g) == 1 or len(g) * max(lengths[i] for i in g) <= budget)
    # 16 documents of 4,096 tokens: two per pass under the default budget, not one pass of 64k tokens
    assert [len(g) for g in batches_by_length([4096] * 16, 16, TOKEN_BUDGET)] == [2] * 8
    assert batches_by_length([512] * 16 + [20] * 3, 16) == batches_by_length([512] * 16 + [20] * 3, 16, TOKEN_BUDGET)


@pytest.mark.parametrize("name", METHODS)
def test_a_token_budget_never_changes_an_embedding(tiny_llama, name):
    """Known answer: each text embedded alone (no padding, no neighbours) is what every batching gives, fixed
    count as before or any token budget, either padding side."""
    method = tiny_method(name, **FAST.get(name, {}))
    alone = np.stack([method.encode(tiny_llama, [t])[0] for t in DOCS])  # (n, d)
    before = method.encode(tiny_llama, DOCS, batch_size=4, max_tokens=None)  # the fixed count of 4 of old
    assert not np.allclose(alone[0], alone[1], atol=1e-3)  # different texts differ, or nothing is proved
    np.testing.assert_allclose(before, alone, atol=1e-4)
    for budget, side in ((40, "right"), (40, "left"), (90, "left"), (TOKEN_BUDGET, "right")):
        got = method.encode(tiny_llama, DOCS, batch_size=4, max_tokens=budget, padding_side=side)
        np.testing.assert_allclose(got, alone, atol=1e-4, err_msg=f"max_tokens={budget} {side}")


def test_batches_report_their_documents_tokens_and_vectors(tiny_llama):
    method = tiny_method("mean")
    steps = []
    emb = method.encode(tiny_llama, DOCS, batch_size=3, max_tokens=60, on_batch=steps.append)
    assert sorted(i for s in steps for i in s.indices) == list(range(len(DOCS)))
    lengths = [len(e) for e in method.prepare(tiny_llama, DOCS)]
    for s in steps:
        np.testing.assert_array_equal(s.vectors, emb[s.indices])  # the rows encode returns, normalised
        assert s.tokens == [lengths[i] for i in s.indices] and s.tokens_total == sum(lengths)
        assert len(s.indices) == 1 or len(s.indices) * max(s.tokens) <= 60
        assert s.truncated == [False] * len(s.indices) and s.seconds >= 0


# ---- every document's vector in the store ---------------------------------------------------------------------
def counted(method):
    """`method` whose encode records the texts it is asked for (the instance keeps its type: same cache keys)."""
    asked = []
    encode = method.encode

    def spy(backbone, texts, **kwargs):
        asked.append(list(texts))
        return encode(backbone, texts, **kwargs)

    method.encode = spy
    return method, asked


def test_an_interrupted_encode_resumes_with_only_the_rest_and_the_same_vectors(tiny_llama, tmp_path):
    store = Store(tmp_path)
    method, asked = counted(tiny_method("mean"))
    seen = []

    def stop_after_two_batches(done, total, message):
        seen.append(done)
        if len(seen) == 3:  # the start, then two batches
            raise Stop

    with pytest.raises(Stop):
        encode_documents(store, tiny_llama, method, DOCS, batch_size=3, progress=stop_after_two_batches)
    assert len(asked) == 1 and len(asked[0]) == len(DOCS) and seen[-1] == 6
    lengths = [len(e) for e in method.prepare(tiny_llama, DOCS)]
    done = {DOCS[i] for i in batches_by_length(lengths, 3)[0] + batches_by_length(lengths, 3)[1]}  # the 6 longest

    again, meta, hit = encode_documents(store, tiny_llama, method, DOCS, batch_size=3)
    assert not hit and meta["computed"] == len(DOCS) - 6 and meta["cached"] == 6
    assert sorted(asked[1]) == sorted(set(DOCS) - done)  # only the rest was computed: kept though the run stopped
    whole = encode_documents(Store(tmp_path / "fresh"), tiny_llama, tiny_method("mean"), DOCS, batch_size=3)[0]
    np.testing.assert_array_equal(again, whole)  # identical to a run never stopped

    third, meta, hit = encode_documents(store, tiny_llama, method, DOCS, batch_size=3)
    assert hit and meta["computed"] == 0 and len(asked) == 2  # a re-run costs nothing
    np.testing.assert_array_equal(third, whole)


def test_lists_tasks_and_repeats_share_document_vectors(tiny_llama, tmp_path):
    store = Store(tmp_path)
    method, asked = counted(tiny_method("prompteol"))
    corpus, meta, _ = encode_documents(store, tiny_llama, method, DOCS[:8] + DOCS[:2])  # repeats computed once
    assert meta["documents"] == 8 and meta["computed"] == 8 and len(asked[0]) == 8
    np.testing.assert_array_equal(corpus[8:], corpus[:2])
    # A page's list of texts (its own key, as always) reuses the documents: only the new one is computed.
    emb, meta, hit = cached_encode(store, tiny_llama, method, [DOCS[3], DOCS[9], DOCS[0]])
    assert not hit and asked[1] == [DOCS[9]] and meta["computed"] == 1
    np.testing.assert_array_equal(emb[[0, 2]], corpus[[3, 0]])
    emb2, meta2, hit2 = cached_encode(store, tiny_llama, method, [DOCS[3], DOCS[0]])  # all stored: nothing computed
    assert hit2 and len(asked) == 2 and meta2["computed"] == 0
    assert store.get(keys.make_key(keys.encode_parts(tiny_llama, method, [DOCS[3], DOCS[0]], {})),
                     keys.EMBEDDINGS) is not None  # the list's entry, under the key pages have always used
    # another method, or other parameters, is another store
    other, asked_other = counted(tiny_method("prompteol", layer=2))
    encode_documents(store, tiny_llama, other, DOCS[:2])
    assert len(asked_other) == 1


def test_a_damaged_shard_is_computed_again(tiny_llama, tmp_path):
    store = Store(tmp_path)
    method, asked = counted(tiny_method("last"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("cache.compute.FLUSH_DOCUMENTS", 4)  # a shard per 4 documents
        first = encode_documents(store, tiny_llama, method, DOCS, batch_size=4)[0]
    vs = VectorStore(store, tiny_llama, method)
    shards = vs.shards()
    assert len(shards) == 4  # 4 + 4 + 4 + 1
    n = len(store.get(shards[1], keys.VECTORS).arrays["digests"])
    damaged = store.path_for(shards[1], keys.VECTORS) / "data.npz"
    damaged.write_bytes(damaged.read_bytes()[:-7] + b"garbage")
    assert len(vs.find([keys.text_digest(t) for t in DOCS])) == len(DOCS) - n
    assert len(vs.shards()) == 3  # the store removed the damaged one
    again, meta, _ = encode_documents(store, tiny_llama, method, DOCS, batch_size=4)
    assert meta["computed"] == n and len(asked[-1]) == n
    np.testing.assert_array_equal(again, first)


def test_truncation_is_told_for_stored_documents_too(tmp_path):
    bb = tiny_backbone("llama", max_length=32)
    store = Store(tmp_path)
    long = " ".join(WORDS * 4)
    method = tiny_method("mean")
    with pytest.warns(analysis.TruncationWarning, match="1 of 2 text"):
        _, meta, _ = encode_documents(store, bb, method, [long, "a bank"])
    with pytest.warns(analysis.TruncationWarning, match="2 of 3 text"):  # one computed, two stored (one cut)
        _, meta, hit = encode_documents(store, bb, method, [long, "a river bank", long])
    assert meta["computed"] == 1 and meta["warnings"] == [
        "2 of 3 text(s) exceeded the model's limit of 32 tokens and were truncated."]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encode_documents(store, bb, method, ["a bank"])  # nothing cut, nothing said


def test_progress_tells_documents_tokens_and_time_left(tiny_llama, tmp_path):
    store = Store(tmp_path)
    method = tiny_method("mean")
    encode_documents(store, tiny_llama, method, DOCS[:4])
    reports = []
    encode_documents(store, tiny_llama, method, DOCS, batch_size=2, progress=lambda *a: reports.append(a))
    assert reports[0][0] == 4 and "4/13 documents (4 from the cache)" in reports[0][2]
    assert [r[0] for r in reports] == sorted(r[0] for r in reports) and reports[-1][0] == len(DOCS)
    assert "tokens" in reports[1][2] and "left" in reports[1][2] and "left" not in reports[-1][2]
    assert duration(42) == "42 s" and duration(600) == "10 min" and duration(3 * 3600 + 300) == "3 h 5 min"
    meter = Meter(None, 10)
    meter.step(5, 500, 1000)
    assert meter.seconds_left() is not None and "500/1,000 tokens" in meter.message()


def test_without_a_store_nothing_is_written(tiny_llama, tmp_path):
    emb, meta, hit = encode_documents(None, tiny_llama, tiny_method("mean"), DOCS[:3])
    assert emb.shape == (3, tiny_llama.facts.hidden_size) and not hit and meta["computed"] == 3
    assert not any(tmp_path.iterdir())
