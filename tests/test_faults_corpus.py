"""Issue 52, corpora past the budgets: a BEIR folder is counted before any of it is read (documents, bytes, tokens
with the model's tokenizer from a sample) and refused past a budget in one sentence naming it; `--no-budgets` lifts
it. A synthetic 100,000-document folder, written per test in a fraction of a second. With the budget lifted a corpus
past the app's budgets is streamed from disk (`analysis.data.corpus_stream`): the same scores, its texts never all
in memory."""

from __future__ import annotations

import json
import random
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.core.eta import Eta
from analysis.data import corpus_stream, files
from analysis.data.corpus_size import count_corpus
from analysis.data.corpus_stream import StreamedCorpus
from analysis.eval.tasks import Task, load_task, score_task
from analysis.models.tiny import tiny_tokenizer
from cache import Store, encode_documents
from cache.compute import bench_cell
from tests.conftest import tiny_method


def beir(root: Path, n: int, words: int = 12) -> Path:
    """A BEIR folder of `n` documents, 5 queries judged on the first 5."""
    (root / "qrels").mkdir(parents=True)
    body = " ".join(["the cat sat on the mat"] * (words // 6 + 1))
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": f"doc {i}", "text": body}) + "\n"
                                               for i in range(n)))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": f"cat {i}"}) + "\n"
                                                for i in range(5)))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n"
                                                                                      for i in range(5)))
    return root


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    return beir(tmp_path_factory.mktemp("corpus") / "big", 100_000)


def test_a_100000_document_folder_is_refused_before_a_line_of_it_is_parsed(big, monkeypatch):
    """Before: read whole into memory (and then embedded for hours) without a word. After: one sentence, in well
    under a second, naming the budget; nothing parsed."""
    monkeypatch.setattr(files, "_jsonl", lambda path: pytest.fail(f"{path.name} was read"))
    began = time.perf_counter()
    with pytest.raises(UserError) as err:
        load_task(f"beir:{big}")
    assert time.perf_counter() - began < 2.0
    message = str(err.value)
    assert "documents in the corpus of big is 100,000, and at most 10,000 is allowed" in message, message
    assert "--no-budgets" in message and "\n" not in message


def test_tokens_are_estimated_with_the_model_tokenizer_and_refused_past_their_budget(tmp_path):
    folder = beir(tmp_path / "long", 400, words=120)
    size = count_corpus(folder / "corpus.jsonl", tiny_tokenizer())
    exact = sum(len(tiny_tokenizer()(f"doc {i} " + " ".join(["the cat sat on the mat"] * 21),
                                     add_special_tokens=False)["input_ids"]) for i in range(400))
    assert size.documents == 400 and abs(size.tokens - exact) / exact < 0.1
    assert size.vector_bytes(576) == 400 * 576 * 4
    with budgets.override(corpus_tokens=exact // 2), pytest.raises(UserError, match=r"tokens in the corpus of long"):
        load_task(f"beir:{folder}", tokenizer=tiny_tokenizer())
    assert len(load_task(f"beir:{folder}").data.corpus) == 400  # without a tokenizer: documents and bytes only


def test_the_command_refuses_the_folder_before_the_model_loads_and_lifts_the_budget_on_request(big, tiny_folder,
                                                                                               capsys, monkeypatch,
                                                                                               tmp_path):
    from analysis.models import backbone

    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(backbone, "load_backbone", lambda *a, **k: pytest.fail("the model was loaded"))
    code, _, err = run_cli(capsys, "bench", "--models", tiny_folder, "--methods", "mean", "--data", f"beir:{big}",
                           "--n-boot", "0")
    assert code == 2 and err.count("\n") == 1 and "at most 10,000 is allowed" in err, err
    with budgets.lifted():
        assert len(files.load_beir(big).corpus) == 100_000


# ---- streamed from disk with the budget lifted ----------------------------------------------------------------
WORDS = ["the", "bank", "raised", "its", "rates", "while", "a", "quick", "brown", "fox", "jumps", "over", "the", "lazy",
         "dog", "near", "the", "river", "bank"]


def varied(root: Path, n: int, queries: int = 20, chars: int = 0) -> Path:
    """A BEIR folder of `n` documents of 3 to 20 words drawn at random (seed 0), padded to `chars` characters, and
    `queries` queries each judged on 3 documents: rankings a tiny model gets partly right, with ties unlikely."""
    rng = random.Random(0)
    (root / "qrels").mkdir(parents=True)
    docs = [" ".join(rng.choices(WORDS, k=rng.randint(3, 20))) for _ in range(n)]
    pad = "x" * max(chars - 20, 0)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": "", "text": f"{d} {pad}"
                                                           .strip()}) + "\n" for i, d in enumerate(docs)))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": docs[7 * i][:30]}) + "\n"
                                                for i in range(queries)))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"q{i}\td{(7 * i + k) % n}\t{2 - (k > 0)}\n" for i in range(queries) for k in range(3)))
    return root


def test_a_streamed_corpus_scores_exactly_as_one_read_whole(tmp_path, tiny_llama, monkeypatch):
    """The known answer: a 200-document folder, embedded in 4 streamed batches of 64 (through the cache, as `bench`
    embeds) and read whole, gives the same nDCG@10 and the same per-query values."""
    folder = varied(tmp_path / "small", 200)
    monkeypatch.setattr(corpus_stream, "BATCH", 64)
    whole = Task("small", "retrieval", files.load_beir(folder))
    streamed = Task("small", "retrieval", files.load_beir(folder, stream=True))
    assert isinstance(whole.data.corpus, dict) and isinstance(streamed.data.corpus, StreamedCorpus)
    assert list(streamed.data.corpus) == list(whole.data.corpus) and dict(streamed.data.corpus.items()) == \
        whole.data.corpus and streamed.data.corpus["d17"] == whole.data.corpus["d17"]
    calls = []

    def embed(texts, role):
        calls.append(len(texts))
        return encode_documents(None, tiny_llama, tiny_method("mean"), texts)[0]

    expected = score_task(whole, embed, n_boot=200)
    assert calls == [20, 200]
    calls.clear()
    got = score_task(streamed, embed, n_boot=200)
    assert calls == [20, 64, 64, 64, 8]
    assert 0 < expected.value < 1 and got.value == expected.value and (got.lo, got.hi) == (expected.lo, expected.hi)
    assert got.detail == expected.detail
    cached, _, hit = bench_cell(Store(tmp_path / "cache"), tiny_llama, tiny_method("mean"), streamed, n_boot=200)
    assert not hit and cached.value == expected.value  # a streamed corpus's cache key is its file's digest


@pytest.mark.parametrize("line, message", [
    (b"{not json\n", "corpus.jsonl, line 3: not valid JSON"),
    (b'["d9"]\n', "corpus.jsonl, line 3: expected an object with an \"_id\" field."),
    (b'{"_id": "d0", "text": "again"}\n', "corpus.jsonl, line 3: the id 'd0' appears twice."),
    (b'{"_id": "d9", "title": " ", "text": ""}\n', "'d9' has no text."),
])
def test_a_damaged_corpus_is_the_same_sentence_streamed_or_read_whole(tmp_path, line, message):
    folder = beir(tmp_path / "bad", 5)
    with open(folder / "corpus.jsonl", "r+b") as fh:
        lines = fh.readlines()
        fh.seek(0)
        fh.writelines(lines[:2] + [line] + lines[2:])
    said = []
    for stream in (False, True):
        with pytest.raises(UserError) as err:
            files.load_beir(folder, stream=stream)
        said.append(str(err.value))
    assert said[0] == said[1] and message in said[0], said


def test_a_20000_document_folder_streams_with_its_texts_never_all_in_memory(tmp_path):
    """Before: with the budget lifted the corpus was read whole (the file's text, then every document's) and handed
    to the model in one list. After: at most `BATCH` texts per call, and the traced peak of the whole run (index,
    texts, vectors, similarities) under a third of what reading the texts alone took. A cheap stand-in embeds
    (a hash of each text's words): the tiny model's ~1 ms a document would be a minute here; the tiny model's
    scores streamed are the known-answer test above."""
    folder = varied(tmp_path / "big20k", 20_000, chars=1000)  # 20 MB of text
    calls = []

    def embed(texts, role):
        calls.append(len(texts))
        out = np.zeros((len(texts), 16), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.split()[:20]:
                out[i, hash(w) % 16] += 1
        return out

    tracemalloc.start()
    try:
        with budgets.lifted():
            files.load_beir(folder, stream=False)
        whole = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        began = time.perf_counter()
        with budgets.lifted():
            task = load_task(f"beir:{folder}")
            s = score_task(task, embed, n_boot=100)
        streamed = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(task.data.corpus, StreamedCorpus) and s.detail["documents"] == 20_000
    assert max(calls[1:]) == corpus_stream.BATCH and sum(calls[1:]) == 20_000
    assert whole > 20e6 and streamed < min(whole / 3, 16e6), (whole, streamed)  # measured: 48 MB, 11.5 MB
    assert time.perf_counter() - began < 30


# ---- progress and the time left while a streamed corpus is embedded -------------------------------------------
def test_the_time_left_is_the_rate_so_far_times_the_documents_left():
    now = {"t": 100.0}
    eta = Eta(100_000, "documents", clock=lambda: now["t"])
    assert eta.line(0) == "0/100,000 documents, 0 s elapsed (no estimate yet)"
    now["t"] += 60
    assert eta.seconds_left(12_000) == pytest.approx(60 / 12_000 * 88_000)  # 440 s
    assert eta.line(12_000) == "12,000/100,000 documents, 60 s elapsed, about 7 min left"
    now["t"] += 7 * 3600
    assert eta.line(100_000) == "100,000/100,000 documents, 7 h 1 min elapsed"


def test_a_streamed_corpus_reports_its_documents_elapsed_and_left_after_every_batch(tmp_path, tiny_llama,
                                                                                    monkeypatch):
    """Before: a streamed corpus's progress was each batch's own (1,024/1,024 documents, again and again) or none.
    After: documents done over the whole corpus, the time spent and the time left, once per batch, through the
    cache's `progress(done, total, message)` (what a page's bar and the command line show), the batches' own
    progress left out so the bar never restarts."""
    folder = varied(tmp_path / "small", 200)
    monkeypatch.setattr(corpus_stream, "BATCH", 64)
    task = Task("small", "retrieval", files.load_beir(folder, stream=True))
    assert task.streamed and not Task("small", "retrieval", files.load_beir(folder)).streamed
    told = []
    _, _, hit = bench_cell(Store(tmp_path / "cache"), tiny_llama, tiny_method("mean"), task, n_boot=20,
                           progress=lambda done, total, message: told.append((done, total, message)))
    corpus = [(d, m) for d, t, m in told if t == 200]
    assert not hit and [d for d, _ in corpus] == [0, 64, 128, 192, 200]
    assert all(t == 20 for d, t, m in told if t != 200)  # the rest: the 20 queries' own embedding
    assert corpus[0][1].startswith("0/200 documents streamed from corpus.jsonl, ") and "no estimate yet" in corpus[0][1]
    for done, message in corpus[1:-1]:
        assert message.startswith(f"{done:,}/200 documents streamed from corpus.jsonl, ") and " elapsed, about " \
            in message and message.endswith(" left"), message
    assert corpus[-1][1].startswith("200/200 documents") and "left" not in corpus[-1][1]
