"""Issue 52, corpora past the budgets: a BEIR folder is counted before any of it is read (documents, bytes, tokens
with the model's tokenizer from a sample) and refused past a budget in one sentence naming it; `--no-budgets` lifts
it. A synthetic 100,000-document folder, written per test in a fraction of a second."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import run_cli

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.data import files
from analysis.data.corpus_size import count_corpus
from analysis.eval.tasks import load_task
from analysis.models.tiny import tiny_tokenizer


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
