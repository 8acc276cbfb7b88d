"""Hostile command-line flags and values (issues 10, 23, 37): every case is a command line a careless or hostile
user could type, and each ends with exit code 2 and one `error:` sentence on stderr (no traceback, no warning
or library log line before it, nothing on stdout), before any work: `hostile.refused` also bounds the time, the
Python heap and the resident memory of the refusal and checks that nothing was written. Method parameters
given as text, the sweep's grid and executor, compress-qa's items and people, compare's sample, the trainers'
options. Tiny random models only."""

# ruff: noqa: F811 -- pytest fixtures imported from hostile.py are named again as test arguments
from __future__ import annotations

import json
import os
import socket
import threading
import time

import numpy as np
import pytest

from analysis.core import budgets
from hostile import (ITEM, _jsonl, cache_dir, cli, one_error_line, refused, short_tiny_dir, texts_file,  # noqa: F401
                     tiny_dir, warm_imports)

NAN, INF = float("nan"), float("inf")
pytestmark = pytest.mark.usefixtures("warm_imports")


CLI_CASES = [  # argv after `embed --input FILE --output OUT.npy` (model-free cases are refused before loading)
    ["--method", "kv_embedding", "--param", "bias=nan"],
    ["--method", "kv_embedding", "--param", "bias=inf"],
    ["--method", "kv_embedding", "--param", "layers=0-99999999"],
    ["--method", "kv_embedding", "--param", "layers=0-3000000"],
    ["--method", "kv_embedding", "--param", "layers=12-9"],
    ["--method", "soft_tokens", "--param", "temperature=nan"],
    ["--method", "soft_tokens", "--param", "k=100000"],
    ["--method", "prompteol", "--param", "template=no placeholder"],
    ["--method", "echo", "--param", "template=once {text}"],
    ["--method", "token_prepending", "--param", "template={text}{text}"],
    ["--method", "htp", "--param", "template=nothing"],
    ["--method", "prompteol", "--param", "template=" + "{text}" * 200],
    ["--method", "mean", "--param", "nokey=1"],
    ["--method", "mean", "--param", "layer"],
    ["--method", "nosuchmethod"],
    ["--method", "mean", "--batch-size", "0"],
]


@pytest.mark.parametrize("args", CLI_CASES, ids=[" ".join(a)[-40:] for a in CLI_CASES])
def test_cli_bad_parameter_exits_2_with_one_line(capsys, tmp_path, texts_file, args):
    import analysis.methods.base  # noqa: F401 -- imports are not what is timed

    start = time.perf_counter()
    code, out, err = cli(capsys, "embed", "--input", texts_file, "--output", str(tmp_path / "o.npy"),
                         "--model", "/nonexistent/never/loaded", *args)
    one_error_line(code, out, err)
    assert time.perf_counter() - start < 10  # refused before any model is looked at
    assert not (tmp_path / "o.npy").exists()


CLI_MODEL_CASES = [  # need the (tiny) model: ranges depend on it
    ["embed", "--method", "prompteol", "--param", "layer=99"],
    ["embed", "--method", "kv_embedding", "--param", "layers=4"],
    ["embed", "--method", "kv_embedding", "--param", "layers=0-1000"],
    ["sensitivity", "--text", " ".join(["word"] * 40), "--exact"],
    ["sensitivity", "--text", "a short text", "--probes", "100000"],
    ["soft-tokens", "--text", "hi", "--temperature", "nan"],
    ["soft-tokens", "--text", "hi", "--k", "0"],
    ["geometry", "--method", "mean", "--data", "demo", "--threshold", "nan"],
    ["geometry", "--method", "mean", "--data", "demo", "--n-boot", "100000"],
]


@pytest.mark.parametrize("args", CLI_MODEL_CASES, ids=[" ".join(a)[:50] for a in CLI_MODEL_CASES])
def test_cli_model_dependent_input_exits_2(capsys, tmp_path, tiny_dir, texts_file, args, monkeypatch):
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    extra = ["--input", texts_file, "--output", str(tmp_path / "o.npy")] if args[0] == "embed" else []
    one_error_line(*cli(capsys, *args, *extra, "--model", tiny_dir))


def test_cli_no_budgets_flag_lifts_the_limit(capsys, tmp_path, tiny_dir, monkeypatch):
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    text = " ".join(["word"] * 40)  # over the 24-token exact-Jacobian budget
    one_error_line(*cli(capsys, "sensitivity", "--text", text, "--exact", "--probes", "2", "--model", tiny_dir))
    code, out, err = cli(capsys, "sensitivity", "--text", text, "--exact", "--probes", "2", "--model", tiny_dir,
                         "--no-budgets")
    assert code == 0, err
    assert json.loads(out)


def _strict(out: str):
    def refuse(name):
        raise AssertionError(f"bare {name} in JSON output")
    return json.loads(out, parse_constant=refuse)


def test_cli_json_has_no_bare_nan(capsys, tmp_path, tiny_dir, monkeypatch):
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "few.txt"
    f.write_text("one text\nanother text\na third one\n")  # too few points: every layer's ID is undefined (NaN)
    code, out, err = cli(capsys, "id", "--data", str(f), "--model", tiny_dir, "--method", "mean", "--bootstrap", "0")
    assert code == 0, err
    data = _strict(out)
    assert any(r["id"] is None for r in data["trajectory"])


def test_to_json_writes_null_for_every_non_finite_value():
    from cli import to_json

    text = to_json({"a": NAN, "b": [INF, -INF, 1.5], "c": np.array([np.nan, 2.0]), "d": np.float32("nan")})
    assert _strict(text) == {"a": None, "b": [None, None, 1.5], "c": [None, 2.0], "d": None}


# ==== sweep: every flag before any work (the model named here does not exist: it must never be looked at) ======
SWEEP_CASES = [  # (argv after `sweep --model /nonexistent/model`, words of the sentence)
    (["--widths", "1-1000000000"], "past any model"),  # a range checked from its ends, never expanded
    (["--starts", "1-1000000000000"], "past any model"),
    (["--starts", "0-" + "9" * 5000], "past any model"),  # past int()'s own digit limit
    (["--starts", "9-2"], "runs backwards"),
    (["--starts", "1-29:0"], "step of 0"),
    (["--starts", "²"], "not a number"),  # str.isdigit() accepts it, int() does not
    (["--widths", "0"], "--widths"),
    (["--biases", "nan"], "finite"),
    (["--biases=-inf"], "finite"),
    (["--biases", "1,abc"], "--biases"),
    (["--biases", "1e9"], "must be <= 50"),  # the bound of a one-sided range, not "[, 50]"
    (["--memory-mb", "-1"], "--memory-mb"),
    (["--memory-mb", "nan"], "--memory-mb"),
    (["--batch-size", "0"], "--batch-size"),
    (["--limit", "1"], "--limit"),  # refused before the pairs are read: no one-genre warning first
    (["--sample", "0"], "--sample"),
    (["--executor", "dask"], "--executor"),
    (["--rerotate", "maybe"], "--rerotate"),
    (["--address", "127.0.0.1:1"], "only applies to --executor ray"),
    (["--executor", "ray", "--address", "not an address"], "host:port"),
    (["--executor", "ray", "--address", "127.0.0.1:1"], "127.0.0.1:1"),  # refused at once, not retried for minutes
    (["--executor", "ray", "--address", "ray://127.0.0.1:1"], "ray"),  # the extra named, or no cluster there
    (["--data", "/nonexistent/pairs.tsv"], "--data"),
]


@pytest.mark.parametrize("argv, words", SWEEP_CASES, ids=[" ".join(a)[:40] for a, _ in SWEEP_CASES])
def test_sweep_flag_is_refused_before_any_work(capfd, cache_dir, argv, words):
    message = refused(capfd, cache_dir, "sweep", "--model", "/nonexistent/model", *argv, seconds=15)
    assert words in message and "/nonexistent/model" not in message, message


@pytest.fixture
def fake_server():
    """A local port that accepts connections and then either says nothing or answers like a web server."""
    servers = []

    def start(reply: bytes | None) -> int:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        servers.append(sock)

        def serve():
            while True:
                try:
                    conn, _ = sock.accept()
                except OSError:
                    return
                if reply is not None:
                    conn.sendall(reply)
                servers.append(conn)

        threading.Thread(target=serve, daemon=True).start()
        return sock.getsockname()[1]

    yield start
    for s in servers:
        s.close()


@pytest.mark.parametrize("reply, words", [(None, "no answer within 1 s"), (b"HTTP/1.1 400 Bad Request\r\n\r\n",
                                                                           "not as a Ray cluster")])
def test_sweep_address_that_is_not_a_cluster_is_refused_in_seconds(capfd, cache_dir, fake_server, monkeypatch,
                                                                   reply, words):
    pytest.importorskip("ray", reason="Ray is not installed (pip install -r requirements-cluster.txt)")
    from analysis.sweep import ray_executor

    monkeypatch.setattr(ray_executor, "CONNECT_SECONDS", 1.0)
    port = fake_server(reply)
    message = refused(capfd, cache_dir, "sweep", "--model", "/nonexistent/model", "--executor", "ray", "--address",
                      f"127.0.0.1:{port}", seconds=10)
    assert words in message, message


def test_sweep_address_auto_is_resolved_and_probed_before_any_work(capfd, cache_dir, monkeypatch):
    pytest.importorskip("ray", reason="Ray is not installed (pip install -r requirements-cluster.txt)")
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")  # where `auto` points: a port nobody listens on
    message = refused(capfd, cache_dir, "sweep", "--model", "/nonexistent/model", "--executor", "ray", "--address",
                      "auto", seconds=10)
    assert "No Ray cluster answers" in message, message


SWEEP_MODEL_CASES = [  # need the (short_tiny, 4-layer) model: its depth bounds the starts
    (["--starts", "50"], "not a decoder layer"),
    (["--starts", "0-3", "--widths", "1-1024", "--biases", ",".join(f"{i / 10:g}" for i in range(40))],
     "sweep cells"),  # counted before they are built: widths past the depth add none
]


@pytest.mark.parametrize("argv, words", SWEEP_MODEL_CASES, ids=[a[1][:12] for a, _ in SWEEP_MODEL_CASES])
def test_sweep_against_the_model_is_refused_before_the_sweep(capfd, cache_dir, short_tiny_dir, argv, words):
    message = refused(capfd, cache_dir, "sweep", "--model", short_tiny_dir, "--data", "demo", *argv)
    assert words in message, message


COMPRESS_CASES = {  # name -> (argv after `compress-qa --model /nonexistent/model`, or a function of a folder; words)
    "not-utf8": (lambda d: ["--data", _jsonl(d, "l.jsonl", [ITEM, b'{"context": ["Caf\xe9."], "question": "q", '
                                                                  b'"answer": "a"}\n'])], "line 2 is not UTF-8"),
    "deep-json": (lambda d: ["--data", _jsonl(d, "deep.jsonl", [b"[" * 100_000 + b"]" * 100_000 + b"\n"])],
                  "line 1 is not JSON"),
    "huge-context": (lambda d: ["--data", _jsonl(d, "big.jsonl", [dict(ITEM, context=[f"Fact {i}." for i in
                                                                                      range(10_000)])])],
                     "sentences in one context"),
    "missing-file": (["--data", "/nonexistent/items.jsonl"], "--data"),
    "distractors-negative": (["--distractors", "-5"], "5 or more"),
    "distractors-too-few": (["--distractors", "3"], "at least 5 sentences"),
    "distractors-too-many": (["--distractors", "100000"], "--distractors"),
    "distractors-with-a-file": (lambda d: ["--data", _jsonl(d, "f.jsonl", [ITEM]), "--distractors", "10"],
                                "only applies to --data personas"),
    "n-billion": (["--n", "1000000000"], "--n or --limit"),
    "n-zero": (["--n", "0"], "--n"),
    "limit-negative": (["--limit", "-1"], "--limit"),
    "limit-billion": (lambda d: ["--data", _jsonl(d, "f.jsonl", [ITEM]), "--limit", "1000000000"],
                      "--n or --limit"),
    # issue 37: people per context is 1 or more, said so even when 0 is typed (it used to run single-person mode)
    "people-zero": (["--people", "0"], "--people counts people per context: 1 or more, not 0"),
    "people-negative": (["--people", "-3"], "1 or more, not -3"),
    # more questions than the held-out split can ask (236 people x 5 facts): refused, within the budget too
    "n-past-the-split": (["--n", "4000"], "held-out split can ask"),
    "n-past-the-split-without-budgets": (["--n", "1000000000", "--no-budgets"], "give --n 1180 or fewer"),
    "n-with-a-file": (lambda d: ["--data", _jsonl(d, "f.jsonl", [ITEM]), "--n", "10"], "--n only applies"),
}


@pytest.mark.parametrize("case", list(COMPRESS_CASES))
def test_compress_qa_input_is_refused_before_generation(capfd, cache_dir, tmp_path, case):
    argv, words = COMPRESS_CASES[case]
    argv = argv(tmp_path) if callable(argv) else argv
    message = refused(capfd, cache_dir, "compress-qa", "--model", "/nonexistent/model", *argv, seconds=20)
    assert words in message and "/nonexistent/model" not in message, message


def test_compress_qa_file_past_the_items_budget_is_refused(capfd, cache_dir, tmp_path):
    path = _jsonl(tmp_path, "many.jsonl", [ITEM] * 8)
    with budgets.override(qa_items=5):
        message = refused(capfd, cache_dir, "compress-qa", "--model", "/nonexistent/model", "--data", path)
    assert "--limit" in message, message


# ---- the trainers: every flag checked before a model loads, the run's folder before the first step ----------------
TRAIN_CASES = [
    ("causal2vec", ["--steps", "0"], "--steps must be >= 1"),
    ("causal2vec", ["--steps", "1000000000000"], "--steps 1000000000000 is over this tool's limit"),
    ("causal2vec", ["--lr", "nan"], "--lr must be a finite number"),
    ("causal2vec", ["--lr", "inf"], "--lr must be a finite number"),
    ("causal2vec", ["--lr", "-1"], "--lr must be > 0.0"),
    ("causal2vec", ["--batch-size", "0"], "--batch-size must be >= 2"),
    ("causal2vec", ["--lora-rank", "10000000"], "--lora-rank 10000000 is over this tool's limit"),
    ("causal2vec", ["--temperature", "0"], "--temperature must be > 0.0"),
    ("causal2vec", ["--temperature", "nan"], "--temperature must be a finite number"),
    ("causal2vec", ["--max-minutes", "nan"], "--max-minutes must be a finite number"),
    ("causal2vec", ["--max-minutes", "-1"], "--max-minutes must be > 0.0"),
    ("causal2vec", ["--eval-pairs", "0"], "--eval-pairs must be >= 10"),
    ("causal2vec", ["--hard-negatives", "-1"], "--hard-negatives must be >= 0"),
    ("gircse", ["--k", "0"], "--k must be >= 1"),
    ("gircse", ["--lam", "nan"], "--lam must be a finite number"),
    ("gircse", ["--lora-rank", "0"], "--lora-rank must be >= 1"),
    ("gircse", ["--steps", "1000000000000"], "over this tool's limit"),
    ("compression", ["--personas", "1000000000"], "--personas 1000000000 is over this tool's limit"),
    ("compression", ["--val", "0"], "--val must be >= 1"),
    ("compression", ["--curriculum", "1.5"], "--curriculum must be >= 0.0 and <= 0.99"),
    ("compression", ["--pool-scale", "0"], "--pool-scale must be > 0.0"),
    ("compression", ["--lora-from", "-0.1"], "--lora-from must be >= 0.0"),
]


@pytest.mark.parametrize("system,args,match", TRAIN_CASES, ids=[f"{s} {' '.join(a)}" for s, a, _ in TRAIN_CASES])
def test_train_flags_are_refused_before_any_work(capfd, cache_dir, system, args, match):
    assert match in refused(capfd, cache_dir, "train", system, *args, seconds=10)


def test_train_out_naming_a_file_or_the_shipped_artefacts_is_refused_before_the_model_loads(capfd, cache_dir, tmp_path):
    from analysis.core.paths import ARTEFACTS

    file = tmp_path / "a_file"
    file.write_text("x")
    assert "names a file" in refused(capfd, cache_dir, "train", "causal2vec", "--out", str(file), keep=(file,))
    shipped = ARTEFACTS / "causal2vec"
    assert "shipped artefacts" in refused(capfd, cache_dir, "train", "gircse", "--out",
                                          str(ARTEFACTS / "gircse" / "smollm2-135m"), keep=(shipped, ARTEFACTS / "gircse"))
    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o500)
    if os.access(read_only, os.W_OK):  # root writes anywhere: the read-only case cannot be made here
        return
    assert "cannot write" in refused(capfd, cache_dir, "train", "compression", "--out", str(read_only / "x"))


def test_a_sentence_past_the_encoder_is_our_one_sentence_without_the_tokenizer_warning(capfd, cache_dir, tmp_path):
    """transformers logs "Token indices sequence length is longer than the specified maximum ..." on a sentence past
    MiniLM's 512 positions; the command's own sentence about it is the only line (counting loads the encoder)."""
    data = _jsonl(tmp_path, "long.jsonl", [dict(ITEM, context=[" ".join(["word"] * 700) + "."])])
    message = refused(capfd, cache_dir, "compress-qa", "--model", "/nonexistent/model", "--data", data, seconds=90)
    assert "longer than 128 encoder tokens" in message


# ==== compare: a sample too small to compare anything (issue 37) ===================================================
@pytest.mark.parametrize("argv", [["--limit", "2"], ["--sample", "9"]], ids=["two-pairs", "nine-pairs"])
def test_compare_on_too_few_pairs_says_so_instead_of_an_empty_interval(capfd, cache_dir, argv):
    message = refused(capfd, cache_dir, "compare", "--methods", "last,mean", "--data", "demo", *argv, "--model",
                      "/nonexistent/model")
    assert "needs at least 10 pairs" in message and f"has {argv[1]}" in message
