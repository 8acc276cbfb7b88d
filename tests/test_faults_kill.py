"""Issue 52, kill -9 halfway: a command killed (SIGKILL, from outside, once its first durable piece of work is on
disk) leaves nothing that is read back wrong (every stored entry reads back whole, no output file under its final
name), and the same command afterwards resumes (what was stored is not computed again) and gives the result of an
uninterrupted run. One test per command and kill point, on tiny random models; `train all` has its own
(tests/test_train_all.py). The app's computations are killed as the server would be, in a process asking what a page
asks through the cache (Embed & compare's embeddings, the `Compute` door's): killed mid-corpus, with another session
waiting for the same result, and while a value is being written.

The kill comes from outside, when a file appears, so production code has no test-only branch."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import dummy_system
import numpy as np
import pytest
from conftest import run_cli
from test_faults_corpus import beir

from analysis.core import budgets
from analysis.data import corpus_stream
from analysis.models.tiny import save_tiny
from cache.keys import AUTO_LAYERS, BENCH, EMBEDDINGS, STS_SCORE, VALUES, VECTORS
from cache.store import Store

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
WORDS = "cat dog sat ran the a on mat big small red blue house car tree bird sang sky".split()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """(tiny model folder with 4 layers and a 128-token limit, the same with 1,024 tokens, a labelled pairs file)."""
    root = tmp_path_factory.mktemp("kill")
    rng = np.random.default_rng(0)
    lines = ["sentence1,sentence2,score,genre"]
    for i in range(24):
        lines.append(f"{' '.join(rng.choice(WORDS, 5))}.,{' '.join(rng.choice(WORDS, 5))}.,"
                     f"{rng.uniform(0, 5):.2f},{'news' if i % 2 else 'captions'}")
    (root / "pairs.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return (save_tiny(root / "tiny", n_layers=6), save_tiny(root / "tiny-1k", max_length=1024),
            str(root / "pairs.csv"))


@pytest.fixture(scope="module")
def windows_stored(files, tmp_path_factory):
    """KV-Embedding's layers=auto window of the 6-layer tiny model, computed once for the module: the sweep and the
    report start with it (ten seconds of intrinsic-dimension estimates), and no test here is about it."""
    from analysis.methods import get_method
    from analysis.models.backbone import load_backbone
    from cache.compute import auto_window

    root = tmp_path_factory.mktemp("windows")
    auto_window(Store(root), load_backbone(files[0]), get_method("kv_embedding", prompt="document", pooling="hybrid"))
    return root / AUTO_LAYERS


@pytest.fixture
def cache(tmp_path, monkeypatch, windows_stored):
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    shutil.copytree(windows_stored, tmp_path / "cache" / AUTO_LAYERS)
    return tmp_path / "cache"


def entries(cache: Path, namespace: str) -> dict[Path, int]:
    """Each finished entry of a namespace (its meta.json) with the time it was written."""
    return {p: p.stat().st_mtime_ns for p in (cache / namespace).glob("*/*/meta.json")
            if not any(part.startswith(".") for part in p.relative_to(cache).parts)}


def killed_when(cmd: list[str], cache: Path, ready, timeout: float = 240) -> None:
    """Run `cmd` in a fresh process on `cache` and kill it (SIGKILL) as soon as `ready()` holds; fails when the run
    ends before (the work was too short to be killed halfway)."""
    env = {**os.environ, "EMBEDSCOPE_CACHE": str(cache),
           "PYTHONPATH": os.pathsep.join([str(TESTS), str(REPO)])}
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + timeout
    try:
        while proc.poll() is None and time.time() < deadline:
            if ready():
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return
            time.sleep(0.02)
        stderr = proc.stderr.read().decode(errors="replace")[-2000:] if proc.poll() is not None else ""
        pytest.fail(f"the run was not killed halfway (exit {proc.poll()}): {stderr}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def cli(*argv) -> list[str]:
    return [sys.executable, "-m", "analysis", *map(str, argv)]


def all_read_back(cache: Path) -> int:
    """Every finished entry of the store reads back whole (checksum, arrays, meta): how many there are."""
    store, n = Store(cache), 0
    for meta in cache.glob("*/*/*/meta.json"):
        namespace, key = meta.parts[-4], meta.parts[-2]
        if namespace.startswith(".") or key.startswith("."):
            continue
        assert store.get(key, namespace) is not None, meta
        n += 1
    return n


def close(a, b) -> bool:
    """Two results equal up to float noise (the killed and the in-process runs may use other thread counts)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5) or (math.isnan(a) and math.isnan(b))
    return a == b


def test_embed_killed_after_its_first_shard_resumes_from_it(files, cache, tmp_path, capsys):
    """A shard is stored every 512 documents: 700 texts are killed after the first and resumed for the rest."""
    tiny, _, _ = files
    lines = [f"document {i} about the {WORDS[i % 18]} and the {WORDS[i % 7]}\n" for i in range(700)]
    texts = tmp_path / "texts.txt"
    texts.write_text("".join(lines))
    out = tmp_path / "emb.npy"
    argv = ["embed", "--method", "mean", "--model", tiny, "--input", texts, "--output", out, "--batch-size", "64",
            "--no-budgets"]
    killed_when(cli(*argv), cache, lambda: entries(cache, VECTORS))
    before = entries(cache, VECTORS)
    assert not out.exists() and all_read_back(cache) >= 1
    code, _, err = run_cli(capsys, *argv)
    assert code == 0, err
    after = entries(cache, VECTORS)
    assert len(after) > len(before) and all(after.get(p) == t for p, t in before.items())  # kept and read
    some = tmp_path / "some.txt"  # a text's vector does not depend on the others: a few rows of each part suffice
    some.write_text("".join(lines[:8] + lines[-8:]))
    fresh = tmp_path / "fresh.npy"
    assert run_cli(capsys, *argv[:6], some, "--output", fresh, "--no-cache")[0] == 0
    assert np.allclose(np.load(out)[list(range(8)) + list(range(692, 700))], np.load(fresh), atol=1e-5)


def test_sweep_killed_after_its_first_cell_resumes_from_it(files, cache, capsys):
    """Each cell is stored as it finishes: killed after the first, the same command computes only the others."""
    from analysis.data.files import read_sts
    from analysis.models.backbone import load_backbone
    from analysis.sweep.windows import Cell
    from cache.sweep import cached_sweep

    tiny, _, pairs = files
    argv = ["sweep", "--model", tiny, "--data", pairs, "--starts", "1-3", "--widths", "1,2", "--biases", "0"]
    killed_when(cli(*argv), cache, lambda: len(entries(cache, STS_SCORE)) >= 2)  # the prompt-only pass and a cell
    before = entries(cache, STS_SCORE)
    assert all_read_back(cache) >= 2
    code, resumed, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert resumed["cached"] >= 1 and all(entries(cache, STS_SCORE)[p] == t for p, t in before.items())
    cells = [Cell(r["start"], r["width"], r["bias"], r["rerotate"]) for r in resumed["rows"]]
    fresh = cached_sweep(None, load_backbone(tiny), read_sts(pairs), cells,  # uninterrupted, nothing stored
                         base={"prompt": "document", "pooling": "hybrid"})
    assert close([r["spearman"] for r in resumed["rows"]], [fresh.scores[c] for c in cells])


def test_measure_killed_after_its_first_method_resumes_and_writes_the_same_record(files, cache, tmp_path, capsys):
    _, tiny_1k, _ = files
    records = tmp_path / "records"
    records.mkdir()
    argv = ["measure", "longdoc", "--model", tiny_1k, "--kinds", "passkey", "--methods", "mean,last",
            "--per-length", "6", "--max-length", "512", "--n-boot", "20", "--records", records]
    killed_when(cli(*argv), cache, lambda: entries(cache, EMBEDDINGS))
    before = entries(cache, EMBEDDINGS)
    assert not list(records.iterdir()) and all_read_back(cache) >= 1  # no record until the measurement is whole
    code, resumed, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert all(entries(cache, EMBEDDINGS)[p] == t for p, t in before.items())
    record = json.loads(Path(resumed["written"]).read_text())
    fresh_records = tmp_path / "fresh"
    fresh_records.mkdir()
    code, fresh, err = run_cli(capsys, *argv[:-2], "--records", fresh_records, "--no-cache")
    assert code == 0, err
    assert close(record["tables"], json.loads(Path(fresh["written"]).read_text())["tables"])


def test_report_killed_halfway_resumes_from_every_stored_piece(files, cache, tmp_path, capsys):
    """The report's pieces are stored as they finish: killed after the first, the same command reads it and writes
    the report. (What the report holds depends on its wall-clock budget, so it is not compared with another run;
    the pieces it reads are checked whole, and the other commands' resumed results match uninterrupted runs.)"""
    tiny, _, pairs = files
    out = tmp_path / "r.html"
    argv = ["report", "--model", tiny, "--data", pairs, "--sample", "12", "--n-boot", "20", "--tasks", "none",
            "--families", "none", "--budget-minutes", "2", "--out", out]
    killed_when(cli(*argv), cache, lambda: entries(cache, EMBEDDINGS))
    before = entries(cache, EMBEDDINGS)
    assert not out.exists() and not out.with_suffix(".json").exists() and all_read_back(cache) >= 1
    code, _, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert all(entries(cache, EMBEDDINGS)[p] == t for p, t in before.items())
    resumed = json.loads(out.with_suffix(".json").read_text())
    assert resumed["quality"] is not None and any(m["cached"] for m in resumed["quality"]["methods"])


def test_claims_killed_halfway_resumes_and_writes_the_same_board(files, cache, tmp_path, capsys):
    from test_claims import needs_stsb

    needs_stsb()
    tiny, _, _ = files
    out = tmp_path / "board.html"
    argv = ["claims", "--model", tiny, "--claims", "htp-sts-tp,gircse-baseline", "--sts-sample", "16", "--n-boot",
            "20", "--budget-minutes", "10", "--out", out]
    killed_when(cli(*argv), cache, lambda: entries(cache, EMBEDDINGS))
    before = entries(cache, EMBEDDINGS)
    assert not out.exists() and all_read_back(cache) >= 1
    code, resumed, err = run_cli(capsys, *argv)
    assert code == 0 and resumed["complete"], err
    assert all(entries(cache, EMBEDDINGS)[p] == t for p, t in before.items())
    fresh = tmp_path / "fresh.html"
    assert run_cli(capsys, *argv[:-2], "--out", fresh, "--no-cache")[0] == 0
    board = json.loads(out.with_suffix(".json").read_text())
    again = json.loads(fresh.with_suffix(".json").read_text())
    assert [c["verdict"] for c in board["claims"]] == [c["verdict"] for c in again["claims"]]


TRAIN = textwrap.dedent("""
    import sys
    import dummy_system
    from cli import main
    dummy_system.register()
    sys.exit(main(sys.argv[1:]))
""")


def test_train_killed_after_a_checkpoint_resumes_bit_identical(files, cache, tmp_path, capsys, monkeypatch):
    tiny, _, _ = files
    dummy_system.register(monkeypatch)
    out = tmp_path / "run"
    argv = ["train", "dummy", "--model", tiny, "--steps", "12", "--step-seconds", "0.25", "--eval-every", "2",
            "--out", out]
    state = out / "run" / "checkpoint" / "state.json"

    def checkpointed():
        try:
            return json.loads(state.read_text())["step"] >= 4
        except (OSError, ValueError):
            return False

    killed_when([sys.executable, "-c", TRAIN, *map(str, argv)], cache, checkpointed)
    killed_at = json.loads(state.read_text())["step"]
    assert 4 <= killed_at < 12 and not (out / "manifest.json").exists()  # no finished result is claimed
    code, resumed, err = run_cli(capsys, *argv, "--resume")
    assert code == 0, err
    log = json.loads((out / "run" / "log.json").read_text())
    assert [t["step"] for t in log["train"]] == list(range(1, 13))  # the steps before the kill kept, none twice
    code, fresh, err = run_cli(capsys, *argv[:-1], tmp_path / "fresh")
    assert code == 0, err
    assert resumed["results"]["w"] == fresh["results"]["w"]  # bit-identical to an uninterrupted run


# ---- bench: killed inside a cell, between cells, and inside a corpus streamed from disk ------------------------
def many_pairs(path: Path, n: int) -> Path:
    """`n` labelled pairs of distinct sentences (2n texts to embed per method)."""
    rng = np.random.default_rng(1)
    lines = ["sentence1,sentence2,score"]
    for i in range(n):
        lines.append(f"{' '.join(rng.choice(WORDS, 6))} {i}.,{' '.join(rng.choice(WORDS, 6))} {n + i}.,"
                     f"{rng.uniform(0, 5):.2f}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def scores(rows: list[dict]) -> list:
    """What a benchmark row says about the method (its seconds are the machine's)."""
    return [[r[k] for k in ("model", "method", "data", "score", "ci_low", "ci_high", "n")] for r in rows]


@pytest.mark.parametrize("point", [VECTORS, BENCH], ids=["inside-a-cell", "between-cells"])
def test_bench_killed_halfway_resumes_from_what_it_stored(files, cache, tmp_path, capsys, point):
    """Kill points: inside the first cell (its first 512 document vectors stored, the cell itself not), and between
    cells (the first cell stored, the second computing). The same command reads what was stored (nothing stored is
    written again) and gives the rows of an uninterrupted run."""
    tiny, _, _ = files
    pairs = many_pairs(tmp_path / "pairs.csv", 400)  # 800 texts per cell: a shard of 512 before the cell is done
    argv = ["bench", "--models", tiny, "--methods", "mean,last", "--data", f"sts:{pairs}", "--n-boot", "20",
            "--format", "json"]
    killed_when(cli(*argv), cache, lambda: entries(cache, point))
    before = {ns: entries(cache, ns) for ns in (VECTORS, EMBEDDINGS, BENCH)}
    assert all_read_back(cache) >= 1
    assert point == BENCH or not before[BENCH]  # a cell is stored whole or not at all
    code, rows, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert all(entries(cache, ns)[p] == t for ns, seen in before.items() for p, t in seen.items())
    code, fresh, err = run_cli(capsys, *argv, "--no-cache")
    assert code == 0, err
    assert close(scores(rows), scores(fresh))


STREAMED = textwrap.dedent("""
    import dataclasses
    import sys
    from analysis.core import budgets
    from analysis.data import corpus_stream
    from cli import main
    budgets.APP = dataclasses.replace(budgets.APP, corpus_documents=100)  # the folder is past the app's budgets
    corpus_stream.BATCH = 64
    sys.exit(main(sys.argv[1:]))
""")


def test_bench_killed_inside_a_streamed_corpus_resumes_from_its_batches(files, cache, tmp_path, capsys,
                                                                        monkeypatch):
    """A corpus past the budgets, streamed with --no-budgets (a folder of 300 short documents past a budget lowered
    to 100, 64 documents a batch): killed after its first batch, the same command reads that batch, embeds the rest
    (printing documents done, elapsed and left over the whole corpus) and scores as an uninterrupted run."""
    tiny, _, _ = files
    folder = beir(tmp_path / "big", 300, words=2)  # "doc 17 the cat sat on the mat": seconds on the tiny model
    argv = ["bench", "--models", tiny, "--methods", "mean", "--data", f"beir:{folder}", "--n-boot", "20",
            "--format", "json", "--no-budgets"]
    killed_when([sys.executable, "-c", STREAMED, *map(str, argv)], cache,
                lambda: len(entries(cache, EMBEDDINGS)) >= 2)  # the queries and the first batch
    before = {ns: entries(cache, ns) for ns in (VECTORS, EMBEDDINGS)}
    assert all_read_back(cache) >= 2 and not entries(cache, BENCH)
    monkeypatch.setattr(budgets, "APP", dataclasses.replace(budgets.APP, corpus_documents=100))
    monkeypatch.setattr(corpus_stream, "BATCH", 64)
    code, rows, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert all(entries(cache, ns)[p] == t for ns, seen in before.items() for p, t in seen.items())
    told = [line for line in err.splitlines() if "documents streamed from corpus.jsonl" in line]
    assert [line.split(": ", 1)[1].split("/")[0] for line in told] == ["0", "64", "128", "192", "256", "300"]
    assert all(" elapsed, about " in line and line.endswith(" left") for line in told[1:-1]), told
    code, fresh, err = run_cli(capsys, *argv, "--no-cache")
    assert code == 0, err
    assert close(scores(rows), scores(fresh))


# ---- the app's computations: a page's embeddings and the cache's door (`cache.cached.Cached`) ------------------
PAGE = textwrap.dedent("""
    import sys
    from analysis.methods import get_method
    from analysis.models.backbone import load_backbone
    from cache import cached_encode, default_store
    from cache.cached import Cached
    door, model, texts = sys.argv[1], sys.argv[2], sys.argv[3:]
    if door == "page":  # what Embed & compare asks for its texts (`ui.compute.encode_with_info`), a bar told
        cached_encode(default_store(), load_backbone(model), get_method("mean"), texts, progress=lambda *told: None)
    elif door == "compute":  # what the Report, Claims and Explain pages ask through `Compute`
        Cached(default_store()).encode(load_backbone(model), get_method("mean"), texts)
    else:  # a value kept through `Compute.remember`, large enough (27 MB of JSON) to be killed while it is written
        Cached(default_store()).remember({"kill": "test"}, lambda: [i / 1000 for i in range(2_000_000)])
""")


def lines(n: int) -> list[str]:
    return [f"text {i} about the {WORDS[i % 18]} and the {WORDS[i % 7]}" for i in range(n)]


def fresh_rows(tiny: str, texts: list[str]) -> np.ndarray:
    """The vectors an uninterrupted run gives the first and last 8 texts (a text's vector ignores the others)."""
    from analysis.methods import get_method
    from analysis.models.backbone import load_backbone
    from cache import cached_encode

    return cached_encode(None, load_backbone(tiny), get_method("mean"), texts[:8] + texts[-8:])[0]


def test_a_page_killed_while_embedding_leaves_its_shards_and_no_lock(files, cache):
    """The server killed while Embed & compare embeds 700 texts (after the first shard of 512 vectors): the list's
    entry is not there (a page never reads a part of it), the flight's lock and the dead holder's progress are gone
    for the next session, and the same request computes only the 188 texts left."""
    from analysis.methods import get_method
    from analysis.models.backbone import load_backbone
    from cache import Store, cached_encode, keys
    from cache.flight import flight, lock_path

    tiny, _, _ = files
    texts = lines(700)
    killed_when([sys.executable, "-c", PAGE, "page", tiny, *texts], cache, lambda: entries(cache, VECTORS))
    before = entries(cache, VECTORS)
    assert all_read_back(cache) > len(before) >= 1 and not entries(cache, EMBEDDINGS)  # and the window copied in
    backbone, method = load_backbone(tiny), get_method("mean")
    key = keys.make_key(keys.encode_parts(backbone, method, texts, {}))
    assert lock_path(cache, EMBEDDINGS, key).with_suffix(".json").exists()  # the dead holder's last progress
    began = time.monotonic()
    with flight(cache, EMBEDDINGS, key) as held:  # free at once: the kernel dropped the dead process's lock
        assert not held.waited and not lock_path(cache, EMBEDDINGS, key).with_suffix(".json").exists()
    assert time.monotonic() - began < 5
    told = []
    emb, meta, hit = cached_encode(Store(cache), backbone, method, texts, progress=lambda *t: told.append(t[2]))
    assert not hit and meta["computed"] == 188
    assert told[0].startswith("512/700 documents (512 from the cache)")
    assert all(entries(cache, VECTORS)[p] == t for p, t in before.items())
    assert np.allclose(emb[list(range(8)) + list(range(692, 700))], fresh_rows(tiny, texts), atol=1e-5)


def test_a_session_waiting_for_a_killed_computation_takes_it_over(files, cache):
    """Two sessions ask the same embeddings: one computes (through `Compute`), the other waits, told so. The one
    computing is killed: the waiting one is not left waiting on a dead lock; it computes what is left (the stored
    shards read, not computed again) and gets what an uninterrupted run gives."""
    from analysis.methods import get_method
    from analysis.models.backbone import load_backbone
    from cache import Store, cached_encode

    tiny, _, _ = files
    texts = lines(3000)
    backbone, method = load_backbone(tiny), get_method("mean")
    told, out = [], {}

    def session():
        out["result"] = cached_encode(Store(cache), backbone, method, texts, progress=lambda *t: told.append(t[2]))

    waiter, started = threading.Thread(target=session, daemon=True), []

    def waiting() -> bool:
        if entries(cache, VECTORS) and not started:
            started.append(waiter.start())  # the other session asks once the first one has stored some work
        return any(m.startswith("Waiting for the same computation") for m in list(told))

    killed_when([sys.executable, "-c", PAGE, "compute", tiny, *texts], cache, waiting)
    stored = entries(cache, VECTORS)
    waiter.join(240)
    assert not waiter.is_alive(), "the waiting session was left waiting"
    emb, meta, hit = out["result"]
    assert not hit and meta["computed"] <= 3000 - 512
    took_over = next(m for m in told if not m.startswith("Waiting"))  # its own first report: the stored part read
    assert took_over.startswith(f"{3000 - meta['computed']:,}/3,000 documents ({3000 - meta['computed']:,} from the "
                                "cache)"), took_over
    assert all(entries(cache, VECTORS)[p] == t for p, t in stored.items())
    assert np.allclose(emb[list(range(8)) + list(range(2992, 3000))], fresh_rows(tiny, texts), atol=1e-5)


def test_a_value_killed_while_it_is_written_is_never_read_half(files, cache):
    """Killed while `Compute.remember` writes its value (its data written, its 27 MB record not yet renamed into
    place): nothing is found under the key (the half-written folder is hidden and never read), and the same call
    computes it again, once, and keeps it."""
    from cache import Store, keys
    from cache.cached import Cached

    tiny, _, _ = files

    def writing() -> bool:
        return any((tmp / "data.npz").exists() for tmp in (cache / VALUES).glob("*/.tmp-*"))

    killed_when([sys.executable, "-c", PAGE, "remember", tiny], cache, writing)
    assert list((cache / VALUES).glob("*/.tmp-*")) and not entries(cache, VALUES)  # killed mid-write
    store = Store(cache)
    assert store.get(keys.make_key(keys.value_parts({"kill": "test"})), VALUES) is None and store.count() == \
        all_read_back(cache)
    calls = []

    def value():
        calls.append(1)
        return [i / 1000 for i in range(2_000_000)]

    got = Cached(store).remember({"kill": "test"}, value)
    assert len(got) == 2_000_000 and got[-1] == 1999.999 and calls == [1] and len(entries(cache, VALUES)) == 1
    assert Cached(Store(cache)).remember({"kill": "test"}, lambda: pytest.fail("computed again")) == got
