"""Hostile inputs, second round (issue 23): the sweep, compress-qa and trained-weights surfaces.

Every case is a command line a careless or hostile user could type. Each must end with exit code 2, one `error:`
sentence on stderr (no traceback, no warning or library log line before it, nothing on stdout), nothing written
where it should not be (the cache folder stays empty, the output file is not created, the weights folder is
unchanged), within a bounded time and memory: Python's heap peak (tracemalloc: a range expanded before it is
checked shows up here at once) and the process's resident peak (a tensor allocated before a refusal shows up here).
Mechanics run on a tiny random model saved as a Hugging Face folder and on tiny weight files made for it.
The trainers' flags are tested with the trainers (tests/test_training*.py).
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import shutil
import socket
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from analysis.core import budgets
from analysis.models.tiny import save_tiny
from cli import main

HEAP_MB = 100  # Python heap peak of one refused command (imports excluded: they are warmed up first)
RSS_MB = 500  # growth of the process's resident peak: a refused run allocates no tensors of any size


# ---- the harness ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module", autouse=True)
def warm_imports():
    """Import what the commands import, so the bounds measure the refusal and not the first import."""
    import analysis.compression.system  # noqa: F401
    import analysis.sweep.windows  # noqa: F401
    import analysis.weights.artefacts  # noqa: F401
    import cli.commands._common  # noqa: F401
    from analysis.methods import list_methods

    list_methods()
    try:
        import ray  # noqa: F401 -- the sweep's --executor ray imports it
    except ImportError:
        pass


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(root))
    return root


def files_under(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()} \
        if folder.exists() else {}


def refused(capfd, cache_dir: Path, *argv: str, seconds: float = 30, keep: tuple[Path, ...] = ()) -> str:
    """Run the command; assert the refusal's shape and bounds; return the sentence (without `error: `)."""
    before = {str(k): files_under(k) for k in keep}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    start = time.perf_counter()
    try:
        code = main(list(argv))
        took = time.perf_counter() - start
        heap = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024  # ru_maxrss is in KiB on Linux
    out, err = capfd.readouterr()
    assert code == 2, (code, out, err)
    assert out == "", out
    assert err.startswith("error: ") and err.count("\n") == 1, err  # no warning or log line before it
    message = err[len("error: "):].strip()
    assert "Traceback" not in message and len(message) < 400, message
    assert "[, " not in message and ", ]" not in message, message  # an interval printed without one of its ends
    assert took < seconds, f"{took:.1f} s: {message}"
    assert heap < HEAP_MB * 2**20, f"{heap / 2**20:.0f} MB of heap: {message}"
    assert grown_mb < RSS_MB, f"resident peak grew {grown_mb:.0f} MB: {message}"
    assert not files_under(cache_dir), f"wrote into the cache: {list(files_under(cache_dir))[:3]}"
    for folder in keep:
        assert files_under(folder) == before[str(folder)], f"{folder} changed"
    return message


# ---- a tiny model, and weight files made for it --------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> str:
    return save_tiny(tmp_path_factory.mktemp("models") / "tiny-llama", max_length=128)


@pytest.fixture(scope="module")
def tiny(tiny_dir):
    from analysis.models.backbone import load_backbone

    return load_backbone(tiny_dir)


def _without_sha(folder: Path) -> None:
    """Drop the manifest's checksum, so the damaged file itself is what must be caught (a hand-made artefact)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.pop("weights_sha256", None)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _truncate(path: Path, keep: int = 200) -> None:
    path.write_bytes(path.read_bytes()[:keep])


@pytest.fixture(scope="module")
def weights(tiny, tmp_path_factory) -> dict[str, Path]:
    """Good and broken weight folders for the tiny model: compression systems, Causal2Vec bridges, adapters."""
    import torch

    from analysis.compression.system import METHOD, CompressionSystem, encoder_name
    from analysis.methods.causal2vec import Bridge
    from analysis.models.minilm import load_encoder
    from analysis.weights.artefacts import save_artefact

    root, out = tmp_path_factory.mktemp("weights"), {}
    compression = {"method": METHOD, "model_identity": tiny.identity, "encoder": encoder_name()}
    tensors = CompressionSystem(tiny).tensors()
    out["cc"] = save_artefact(root / "cc", tensors, compression)
    out["cc-truncated"] = save_artefact(root / "cc-truncated", tensors, compression)
    _truncate(out["cc-truncated"] / "weights.safetensors")
    _without_sha(out["cc-truncated"])
    wide = dict(tensors, **{"adapter.weight": torch.zeros(2 * tiny.facts.hidden_size, 384),
                            "adapter.bias": torch.zeros(2 * tiny.facts.hidden_size)})
    out["cc-wide"] = save_artefact(root / "cc-wide", wide, compression)  # the manifest names this very model
    out["cc-rank"] = save_artefact(root / "cc-rank", tensors, {**compression, "config": {"lora_rank": 10**7}})
    out["cc-list"] = save_artefact(root / "cc-list", tensors, compression)
    (out["cc-list"] / "manifest.json").write_text("[1, 2, 3]")
    out["cc-no-weights"] = save_artefact(root / "cc-no-weights", tensors, compression)
    (out["cc-no-weights"] / "weights.safetensors").unlink()

    enc = load_encoder()
    bridge = {"method": "causal2vec", "model_identity": tiny.identity, "encoder": enc.identity, "lora": None}

    def bridge_tensors(d):
        return {f"bridge.{k}": v for k, v in Bridge(enc.dim, d).state_dict().items()}

    out["br-wide"] = save_artefact(root / "br-wide", bridge_tensors(2 * tiny.facts.hidden_size), bridge)
    out["br-corrupt"] = save_artefact(root / "br-corrupt", bridge_tensors(tiny.facts.hidden_size), bridge)
    raw = bytearray((out["br-corrupt"] / "weights.safetensors").read_bytes())
    raw[8:24] = b"#" * 16  # the JSON header, overwritten
    (out["br-corrupt"] / "weights.safetensors").write_bytes(bytes(raw))
    _without_sha(out["br-corrupt"])

    config = json.dumps({"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj"]})
    for name in ("ad-pickle", "ad-corrupt", "ad-artefact"):
        (root / name).mkdir()
        (root / name / "adapter_config.json").write_text(config)
        out[name] = root / name

    class Payload:  # would run a command if it were ever unpickled
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    with open(out["ad-pickle"] / "adapter_model.bin", "wb") as fh:
        pickle.dump({"base_model.model.q_proj.lora_A.weight": Payload()}, fh)
    (out["ad-corrupt"] / "adapter_model.safetensors").write_bytes(b"\x40" + b"\x00" * 7 + b"{not a header}")
    save_artefact(out["ad-artefact"], {"w": torch.zeros(4)}, {"method": "gircse", "model_identity": tiny.identity})
    _truncate(out["ad-artefact"] / "weights.safetensors", 40)
    _without_sha(out["ad-artefact"])
    return out


# ==== 1. sweep: every flag before any work (the model named here does not exist: it must never be looked at) ======
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
    (["--biases", "1e9"], "at most 50"),  # the interval of a one-sided range, not "[, 50]"
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


SWEEP_MODEL_CASES = [  # need the (tiny, 4-layer) model: its depth bounds the starts
    (["--starts", "50"], "not a decoder layer"),
    (["--starts", "0-3", "--widths", "1-1024", "--biases", ",".join(f"{i / 10:g}" for i in range(40))],
     "sweep cells"),  # counted before they are built: widths past the depth add none
]


@pytest.mark.parametrize("argv, words", SWEEP_MODEL_CASES, ids=[a[1][:12] for a, _ in SWEEP_MODEL_CASES])
def test_sweep_against_the_model_is_refused_before_the_sweep(capfd, cache_dir, tiny_dir, argv, words):
    message = refused(capfd, cache_dir, "sweep", "--model", tiny_dir, "--data", "demo", *argv)
    assert words in message, message


# ==== 2. compress-qa: items and contexts bounded before generation, bytes that are not UTF-8 refused =============
def _jsonl(folder: Path, name: str, lines: list) -> str:
    path = folder / name
    path.write_bytes(b"".join(line if isinstance(line, bytes) else (json.dumps(line) + "\n").encode()
                              for line in lines))
    return str(path)


ITEM = {"context": ["Maria lives in Lyon."], "question": "Where does Maria live?", "answer": "Lyon"}
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


COMPRESS_MODEL_CASES = {  # name -> (argv after `compress-qa --model TINY --weights W`, weights, words)
    "positions-sentence-pools": (["--pools", "sentence"], "cc", "positions"),
    "positions-text": (["--pools", "text"], "cc", "positions"),
    "weights-truncated": ([], "cc-truncated", "damaged or truncated"),
    "weights-for-a-wider-model": ([], "cc-wide", "another size"),
    "manifest-rank-ten-million": ([], "cc-rank", "LoRA rank 10000000"),
    "manifest-a-list": ([], "cc-list", "not a manifest"),
    "no-weights-file": ([], "cc-no-weights", "no weights.safetensors"),
}


@pytest.mark.parametrize("case", list(COMPRESS_MODEL_CASES))
def test_compress_qa_weights_and_contexts_against_the_model(capfd, cache_dir, tmp_path, tiny_dir, weights, case):
    argv, folder, words = COMPRESS_MODEL_CASES[case]
    long = dict(ITEM, context=[f"Fact number {i} is here." for i in range(200)])  # 200 pools > 128 positions
    data = _jsonl(tmp_path, "items.jsonl", [long if case.startswith("positions") else ITEM])
    message = refused(capfd, cache_dir, "compress-qa", "--model", tiny_dir, "--data", data, "--weights",
                      str(weights[folder]), *argv, keep=(weights[folder],))
    assert words in message, message
    if folder != "cc":
        assert str(weights[folder]) in message  # the sentence names the folder or file


# ==== 3. weights reached through a method's parameter (embed) ======================================================
WEIGHT_CASES = {  # name -> (method, parameter, weights folder, words)
    "bridge-for-a-wider-model": ("causal2vec", "bridge", "br-wide", "another size"),
    "bridge-corrupt": ("causal2vec", "bridge", "br-corrupt", "damaged or truncated"),
    "adapter-pickle": ("soft_tokens", "adapter", "ad-pickle", "pickle"),
    "adapter-corrupt-safetensors": ("soft_tokens", "adapter", "ad-corrupt", "damaged or truncated"),
    "adapter-artefact-truncated": ("soft_tokens", "adapter", "ad-artefact", "damaged or truncated"),
}


@pytest.mark.parametrize("case", list(WEIGHT_CASES))
def test_damaged_or_mismatched_weights_are_one_sentence_naming_the_file(capfd, cache_dir, tmp_path, tiny_dir,
                                                                         weights, case):
    method, key, folder, words = WEIGHT_CASES[case]
    texts = tmp_path / "texts.txt"
    texts.write_text("A cat sat on the mat.\nStocks fell sharply.\n")
    out = tmp_path / "o.npy"
    message = refused(capfd, cache_dir, "embed", "--method", method, "--param", f"{key}={weights[folder]}",
                      "--input", str(texts), "--output", str(out), "--model", tiny_dir, keep=(weights[folder],))
    assert words in message and str(weights[folder]) in message, message
    assert not out.exists()


def test_the_pickle_is_never_unpickled(weights, capfd, monkeypatch):
    """Refused by its name: no loader is ever handed the file (unpickling it would run the payload)."""
    import torch

    from analysis.core.errors import UserError
    from analysis.methods import get_method

    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load was called"))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("pickle.load was called"))
    with pytest.raises(UserError, match="pickle"):
        get_method("soft_tokens", adapter=str(weights["ad-pickle"]))
    assert "pwned" not in capfd.readouterr().out


def test_good_weights_still_load(tiny, weights):
    """The checks refuse only what is wrong: the same artefact, whole, loads and answers."""
    from analysis.compression.system import CompressionSystem

    system = CompressionSystem.from_artefact(tiny, weights["cc"])
    assert len(system.answer([ITEM], "sentence")) == 1


# ==== 4. the library pieces the command line relies on ===========================================================
def test_grid_counts_cells_before_building_them():
    from analysis.core.errors import UserError
    from analysis.sweep.windows import grid

    assert len(grid(4, range(4), range(1, 1025), [1.0])) == 4 + 3 + 2 + 1  # wider than the model: clipped, deduplicated
    tracemalloc.start()
    try:
        with pytest.raises(UserError, match="sweep cells"):
            grid(30, range(30), range(1, 31), [float(b) for b in range(1000)], [False, True])  # 930,000 cells
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5 * 2**20, peak  # counted, not built


def test_safetensors_header_checks(tmp_path):
    import torch
    from safetensors.torch import save_file

    from analysis.core.errors import UserError
    from analysis.weights import safefile

    good = tmp_path / "w.safetensors"
    save_file({"a": torch.zeros(3, 4)}, str(good))
    assert safefile.read_shapes(good) == {"a": ("F32", (3, 4))}
    safefile.check_shapes(good, safefile.read_shapes(good), {"a": (3, None)})
    bad = tmp_path / "bad.safetensors"
    for data, words in [(b"", "no header"), (good.read_bytes()[:-4], "describes"),
                        (good.read_bytes()[:20], "ends inside its header"), (b"\xff" * 8 + b"{}", "no header")]:
        bad.write_bytes(data)
        with pytest.raises(UserError, match=words):
            safefile.read_shapes(bad)
    with pytest.raises(UserError, match="another size"):
        safefile.check_shapes(good, safefile.read_shapes(good), {"a": (4, None)})


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
