"""`python -m analysis embed|sts`, run in-process through `cli.main`, plus the `sts_spearman`
helper on hand-made embeddings. Successful runs use the real default model on a handful of texts; each
test gets its own compute cache (the converted model is linked in, not rebuilt)."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from cli import main
from analysis.data.corpora import Pairs
from analysis.data.files import read_sts
from analysis.core.paths import cache_root
from analysis.core.errors import UserError
from analysis.methods import get_method
from analysis.eval.sts import sts_spearman

REPO = Path(__file__).resolve().parent.parent

STS_ROWS = [  # STS-B layout: genre, file, year, id, score, sentence 1, sentence 2
    ("main-captions", "MSRvid", "2012test", "0001", "5.000", "A man is playing a guitar.", "A man plays the guitar."),
    ("main-captions", "MSRvid", "2012test", "0002", "0.500", "A woman is slicing an onion.", "A man is riding a horse."),
    ("main-news", "headlines", "2013", "0003", "3.800", "Stocks fell sharply on Monday.", "Shares dropped on Monday."),
    ("main-captions", "MSRvid", "2012test", "0004", "0.000", "A cat sleeps on the sofa.", "A man plays the guitar."),
    ("main-forums", "answers", "2015", "0005", "4.200", "Two kids are playing soccer.", "Children play football."),
]
EMBED_KEYS = {"method", "params", "model", "n", "dim", "seconds", "cached", "truncated"}
STS_KEYS = {"method", "params", "model", "n_pairs", "spearman", "seconds", "cached"}


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private compute cache that still finds the already-converted default model."""
    models = cache_root() / "models"  # resolved before the variable changes
    root = tmp_path / "cache"
    root.mkdir()
    if models.is_dir():
        (root / "models").symlink_to(models, target_is_directory=True)
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(root))
    return root


@pytest.fixture
def sts_file(tmp_path):
    path = tmp_path / "sts-mini.csv"
    path.write_text("".join("\t".join(r) + "\n" for r in STS_ROWS), encoding="utf-8")
    return path


def _run(capsys, *argv):
    """(exit code, parsed JSON or None, stdout, stderr) of one in-process command."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    lines = out.strip().splitlines()
    return code, (json.loads(lines[0]) if code == 0 else None), out, err


# ---- embed ------------------------------------------------------------------------------------------------------
@pytest.mark.real
def test_help_lists_every_command(capsys):
    """A help text with a percent sign ("95% bootstrap") once broke `--help` for every command."""
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and all(name in out for name in ("sts", "sweep", "train", "bench"))


def test_embed_writes_the_same_array_as_the_library(real, cache_dir, tmp_path, capsys):
    texts = ["A man is playing a guitar.", "Stocks fell sharply on Monday.", "Cats sleep a lot."]
    src = tmp_path / "texts.txt"
    src.write_text("\n".join(texts) + "\n\n", encoding="utf-8")  # a blank line is skipped
    out = tmp_path / "emb.npy"

    code, res, stdout, _ = _run(capsys, "embed", "--method", "prompteol", "--input", src, "--output", out)
    assert code == 0 and len(stdout.strip().splitlines()) == 1
    assert EMBED_KEYS <= set(res)
    assert (res["method"], res["n"], res["dim"], res["cached"], res["truncated"]) == ("prompteol", 3, 576, False, 0)
    assert res["model"] == real.identity and res["params"]["layer"] == -1 and res["seconds"] > 0
    emb = np.load(out)
    assert emb.shape == (3, 576) and emb.dtype == np.float32
    np.testing.assert_allclose(emb, get_method("prompteol").encode(real, texts), atol=1e-5)

    # Same request again: served by the cache, same array; --no-cache computes again.
    code, res2, _, _ = _run(capsys, "embed", "--method", "prompteol", "--input", src, "--output", out,
                            "--batch-size", "2")
    assert code == 0 and res2["cached"] is True
    assert res2["seconds"] == pytest.approx(res["seconds"], abs=0.01)  # the time recorded by the first run
    np.testing.assert_allclose(np.load(out), emb, atol=1e-6)
    code, res3, _, _ = _run(capsys, "embed", "--method", "prompteol", "--input", src, "--output", out, "--no-cache")
    assert code == 0 and res3["cached"] is False


@pytest.mark.real
def test_embed_reads_csv_and_params(real, cache_dir, tmp_path, capsys):
    src = tmp_path / "texts.csv"
    src.write_text('label,text\na,"A cat, asleep."\nb,Stocks fell.\n', encoding="utf-8")
    out = tmp_path / "emb.npy"
    code, res, _, _ = _run(capsys, "embed", "--method", "mean", "--param", "layer=10", "--input", src,
                           "--output", out, "--no-cache")
    assert code == 0 and res["params"] == {"layer": 10}
    np.testing.assert_allclose(np.load(out), get_method("mean", layer=10).encode(real, ["A cat, asleep.", "Stocks fell."]),
                               atol=1e-5)


def test_embed_reports_truncation_with_a_local_model_folder(cache_dir, tiny_model_folder, tmp_path, capsys):
    src = tmp_path / "texts.txt"
    src.write_text("A bank\n" + "The quick brown fox jumps over the lazy dog. " * 10 + "\n", encoding="utf-8")
    out = tmp_path / "emb.npy"
    for cached in (False, True):  # the warning is repeated when the result comes from the cache
        code, res, _, err = _run(capsys, "embed", "--method", "prompteol", "--model", tiny_model_folder,
                                 "--input", src, "--output", out)
        assert code == 0 and res["cached"] is cached
        assert (res["n"], res["dim"], res["truncated"]) == (2, 64, 1) and res["model"].startswith("local:")
        assert err.strip().splitlines() == [
            "warning: 1 of 2 text(s) exceeded the model's limit of 32 tokens and were truncated."]


# ---- sts --------------------------------------------------------------------------------------------------------
@pytest.mark.real
def test_sts_prints_one_json_line_and_matches_the_library(real, cache_dir, sts_file, capsys):
    code, res, stdout, _ = _run(capsys, "sts", "--method", "prompteol", "--data", sts_file, "--limit", "4")
    assert code == 0 and len(stdout.strip().splitlines()) == 1
    assert STS_KEYS <= set(res)
    assert (res["method"], res["n_pairs"], res["n_texts"], res["cached"]) == ("prompteol", 4, 7, False)
    assert res["model"] == real.identity and isinstance(res["params"], dict) and res["seconds"] > 0
    want = sts_spearman(real, get_method("prompteol"), read_sts(sts_file, limit=4))["spearman"]
    assert res["spearman"] == pytest.approx(want, abs=1e-5)

    code, again, _, _ = _run(capsys, "sts", "--method", "prompteol", "--data", sts_file, "--limit", "4")
    assert code == 0 and again["cached"] is True and again["spearman"] == res["spearman"]
    code, other, _, _ = _run(capsys, "sts", "--method", "last", "--param", "layer=20", "--data", sts_file,
                             "--no-cache")
    assert code == 0 and other["n_pairs"] == 5 and other["params"] == {"layer": 20} and other["cached"] is False
    assert -1 <= other["spearman"] <= 1


# ---- errors: one sentence on stderr, exit code 2, no traceback ----------------------------------------------------
def _write_bad_files(tmp_path):
    (tmp_path / "malformed.csv").write_text("only\ttwo fields\n", encoding="utf-8")
    (tmp_path / "bad_score.csv").write_text("g\tf\ty\t1\tfive\tA.\tB.\n", encoding="utf-8")
    (tmp_path / "empty.txt").write_text("\n  \n", encoding="utf-8")
    (tmp_path / "texts.txt").write_text("A text.\n", encoding="utf-8")
    (tmp_path / "no_text_column.csv").write_text("sentence,label\nA cat.,a\n", encoding="utf-8")
    (tmp_path / "nul.txt").write_bytes(b"\x00\x00\n\x00\x01\n")
    (tmp_path / "a_folder.npy").mkdir()


def _bad_cases(tmp_path, sts_file):
    malformed, bad_score = tmp_path / "malformed.csv", tmp_path / "bad_score.csv"
    empty, texts = tmp_path / "empty.txt", tmp_path / "texts.txt"
    sts = ["sts", "--data", sts_file]
    return {
        "unknown method": (sts + ["--method", "nope"], "Unknown method 'nope'"),
        "bad param value": (sts + ["--method", "last", "--param", "layer=abc"], "bad value for layer"),
        "unknown param": (sts + ["--method", "last", "--param", "depth=3"], "cannot read parameter 'depth=3'"),
        "param without =": (sts + ["--method", "last", "--param", "layer"], "expected key=value"),
        "missing file": (["sts", "--method", "last", "--data", tmp_path / "nope.csv"], "File not found"),
        "malformed file": (["sts", "--method", "last", "--data", malformed], "expected 7 tab-separated fields"),
        "bad score": (["sts", "--method", "last", "--data", bad_score], "is not a number"),
        "bad limit": (sts + ["--method", "last", "--limit", "0"], "limit must be a positive"),
        "one pair": (sts + ["--method", "last", "--limit", "1"], "at least 2 pairs"),
        "bad batch size": (sts + ["--method", "last", "--batch-size", "0"], "--batch-size must be at least 1"),
        "unknown model": (sts + ["--method", "last", "--model", "no-such-org/no-such-model"], "not found on this machine"),
        "layer out of range": (sts + ["--method", "last", "--param", "layer=31"], "Layer 31 is out of range"),
        "empty texts file": (["embed", "--method", "last", "--input", empty, "--output", tmp_path / "o.npy"], "is empty"),
        "output not npy": (["embed", "--method", "last", "--input", texts, "--output", tmp_path / "o.txt"], "must be a .npy"),
        "output folder missing": (["embed", "--method", "last", "--input", texts, "--output",
                                   tmp_path / "no" / "o.npy"], "does not exist"),
        # checked before any model loads: the model named here does not exist, and that is not what is reported
        "output is a folder": (["embed", "--method", "last", "--input", texts, "--model", "no-such-org/x",
                                "--output", tmp_path / "a_folder.npy"], "a_folder.npy' is a folder"),
        "output folder is a file": (["embed", "--method", "last", "--input", texts, "--model", "no-such-org/x",
                                     "--output", texts / "o.npy"], "is a file, not a folder"),
        "table without a text column": (["embed", "--method", "last", "--input", tmp_path / "no_text_column.csv",
                                         "--output", tmp_path / "o.npy"],
                                        "no_text_column.csv has no 'text' column (its columns: 'sentence', 'label')"),
        "only NUL bytes": (["id", "--data", tmp_path / "nul.txt"], "nul.txt holds no readable text"),
    }


CASES = list(_bad_cases(Path("/nonexistent"), Path("/nonexistent/sts.csv")))


@pytest.mark.parametrize("case", CASES)
def test_errors_exit_2_with_one_sentence(case, cache_dir, tmp_path, sts_file, capsys):
    _write_bad_files(tmp_path)
    argv, message = _bad_cases(tmp_path, sts_file)[case]
    code, _, out, err = _run(capsys, *argv)
    assert code == 2
    assert out == ""
    # A fresh checkout converts the model on first use and shows transformers' progress bars: progress, not errors.
    lines = [line for line in err.strip().splitlines() if "%|" not in line]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err
    assert "Traceback" not in err


def test_the_module_entry_point_exits_2_without_traceback(sts_file):
    proc = subprocess.run([sys.executable, "-m", "analysis", "sts", "--method", "nope", "--data", str(sts_file)],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "Unknown method 'nope'" in proc.stderr


# ---- every command that needs texts reads STS-B pair files ----------------------------------------------------------
def test_stsb_file_is_accepted_by_id_embed_and_geometry(cache_dir, tiny_model_folder, sts_file, tmp_path, capsys):
    distinct = list(dict.fromkeys([r[5] for r in STS_ROWS] + [r[6] for r in STS_ROWS]))
    assert len(distinct) < 2 * len(STS_ROWS)  # the file repeats a sentence: texts are the distinct ones
    code, res, _, err = _run(capsys, "embed", "--method", "mean", "--model", tiny_model_folder, "--input", sts_file,
                             "--output", tmp_path / "e.npy")
    assert code == 0, err
    assert res["n"] == len(distinct) and np.load(tmp_path / "e.npy").shape == (len(distinct), 64)
    code, res, _, err = _run(capsys, "id", "--model", tiny_model_folder, "--data", sts_file, "--bootstrap", "0")
    assert code == 0, err
    assert res["n_texts"] == len(distinct) and len(res["trajectory"]) == 5  # tiny model: hidden states 0..4
    code, res, _, err = _run(capsys, "geometry", "--method", "mean", "--model", tiny_model_folder, "--data", sts_file,
                             "--n-boot", "0")
    assert code == 0, err
    assert res["n_texts"] == len(distinct) and res["n_pairs"] >= 1


def test_real_stsb_dev_file_is_accepted_by_id(cache_dir, tiny_model_folder, capsys):
    from analysis.data.corpora import shared_stsb

    path = shared_stsb("dev")
    if path is None:
        pytest.skip("STS-B not found at ../shared/data/stsbenchmark (development data, not shipped)")
    code, res, _, err = _run(capsys, "id", "--model", tiny_model_folder, "--data", path, "--limit", "40",
                             "--bootstrap", "0")
    assert code == 0, err
    assert res["n_texts"] == 40 and res["data"] == str(path)


def test_no_cache_and_an_unwritable_cache_folder_never_crash(tiny_model_folder, tmp_path, monkeypatch, capsys):
    """KV-Embedding's layers=auto computes its window (a cache entry) before embedding: with --no-cache it is
    computed in memory, and with a cache folder that cannot be written it is computed but not stored, with one
    warning line."""
    import analysis.inspect.intrinsic_dim as idm

    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache folder's parent should be")
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(blocker / "cache"))
    monkeypatch.setattr(idm, "auto_corpus", lambda: [f"Sentence number {i} about topic {i % 7}." for i in range(40)])
    monkeypatch.setattr(idm, "_AUTO", {})
    src = tmp_path / "texts.txt"
    src.write_text("A cat sat.\nA dog ran.\n", encoding="utf-8")
    for extra in (["--no-cache"], []):
        code, res, _, err = _run(capsys, "embed", "--method", "kv_embedding", "--model", tiny_model_folder, "--input", src,
                                 "--output", tmp_path / "e.npy", *extra)
        assert code == 0, err
        assert res["n"] == 2 and res["params"]["layers"] == "auto" and "Traceback" not in err
        warned = [line for line in err.splitlines() if "cannot be written" in line]
        assert len(warned) == (0 if extra else 1) and warned == [line for line in warned
                                                                 if line.startswith("warning: ")]


# ---- the sts_spearman helper on hand-made embeddings ----------------------------------------------------------------
class _Fixed:
    """A stand-in method whose embeddings are given by hand."""

    name = "fixed"

    def __init__(self, table):
        self.table, self.params, self.calls = table, _NoParams(), []

    def encode(self, backbone, texts, **kwargs):
        self.calls.append(list(texts))
        return np.array([self.table[t] for t in texts], dtype=np.float32)


@dataclass(frozen=True)
class _NoParams:
    pass


class _Backbone:
    identity = "hand-made"


def _angle(deg):
    return [np.cos(np.radians(deg)), np.sin(np.radians(deg))]


def test_sts_spearman_known_answer():
    # Anchor "a" at 0 degrees; partners at growing angles have falling cosines.
    table = {"a": _angle(0), "b": _angle(10), "c": _angle(50), "d": _angle(80), "e": _angle(170)}
    pairs = Pairs("hand", ["a", "a", "a", "a", "b"], ["b", "c", "d", "e", "c"], np.array([5.0, 3.0, 2.0, 0.0, 4.0]))
    # cosines: a-b 0.985, a-c 0.643, a-d 0.174, a-e -0.985, b-c 0.766 -> same order as the gold scores
    m = _Fixed(table)
    r = sts_spearman(_Backbone(), m, pairs)
    assert r["spearman"] == pytest.approx(1.0) and (r["n_pairs"], r["n_texts"], r["model"]) == (5, 5, "hand-made")
    assert m.calls == [["a", "b", "c", "d", "e"]]  # each sentence encoded once
    flipped = Pairs("hand", pairs.left, pairs.right, -pairs.scores)
    assert sts_spearman(_Backbone(), m, flipped)["spearman"] == pytest.approx(-1.0)
    # One swap of adjacent ranks: rho = 1 - 6 * 2 / (5 * 24) = 0.9
    swapped = Pairs("hand", pairs.left, pairs.right, np.array([5.0, 4.0, 2.0, 0.0, 3.0]))
    assert sts_spearman(_Backbone(), m, swapped)["spearman"] == pytest.approx(0.9)
    # An injected encoder replaces method.encode (how the command line puts the cache in between).
    seen = []

    def encode(texts, progress):
        seen.append(list(texts))
        return np.array([table[t] for t in texts])

    r = sts_spearman(_Backbone(), m, pairs, encode=encode)
    assert seen == [["a", "b", "c", "d", "e"]] and len(m.calls) == 3 and r["spearman"] == pytest.approx(1.0)


def test_sts_spearman_bad_pairs_and_constant_similarities():
    table = {"a": [1.0, 0.0], "b": [2.0, 0.0], "c": [0.5, 0.0]}
    with pytest.raises(UserError, match="at least 2 pairs"):
        sts_spearman(_Backbone(), _Fixed(table), Pairs("one", ["a"], ["b"], np.array([1.0])))
    with pytest.raises(UserError, match="gold scores .* are equal"):
        sts_spearman(_Backbone(), _Fixed(table), Pairs("flat", ["a", "a"], ["b", "c"], np.array([2.0, 2.0])))
    # Every cosine is 1 (parallel vectors): no ranking, reported as NaN rather than a made-up number.
    r = sts_spearman(_Backbone(), _Fixed(table), Pairs("par", ["a", "a"], ["b", "c"], np.array([1.0, 2.0])))
    assert np.isnan(r["spearman"])


# ---- several models, device and dtype (issue 14) ------------------------------------------------------------------
def test_bench_models_gives_one_row_per_model_with_cost_ratios(cache_dir, tiny_model_folder, sts_file, capsys):
    code, rows, _, err = _run(capsys, "bench", "--models", f"{tiny_model_folder},{tiny_model_folder}", "--methods", "last,mean",
                              "--data", f"sts:{sts_file}", "--n-boot", "10", "--format", "json")
    assert code == 0, err
    assert [(r["model"], r["method"]) for r in rows] == [(str(tiny_model_folder), m) for m in ("last", "mean")] * 2
    assert all(r["seconds"] > 0 for r in rows) and all(r["x_last"] == 1.0 for r in rows if r["method"] == "last")
    assert rows[2]["score"] == rows[0]["score"]  # the second model's cells came from the cache
    code, rows1, _, _ = _run(capsys, "bench", "--model", tiny_model_folder, "--methods", "last", "--data",
                             f"sts:{sts_file}", "--n-boot", "10", "--format", "json")
    assert code == 0 and len(rows1) == 1  # the one-model spelling still works


def test_dtype_and_device_options(cache_dir, tiny_model_folder, tmp_path, capsys):
    src = tmp_path / "texts.txt"
    src.write_text("A cat sat.\nStocks fell.\n", encoding="utf-8")
    outs = {}
    for dtype in ("float32", "bfloat16"):
        out = tmp_path / f"{dtype}.npy"
        code, res, _, err = _run(capsys, "embed", "--method", "mean", "--model", tiny_model_folder, "--dtype", dtype,
                                 "--device", "cpu", "--input", src, "--output", out)
        assert code == 0, err
        outs[dtype] = (np.load(out), res["model"])
    assert outs["bfloat16"][1].endswith("|bfloat16|cpu") and "|" not in outs["float32"][1]  # separate cache keys
    a, b = outs["float32"][0], outs["bfloat16"][0]
    assert np.abs(a - b).max() > 0 and (a * b).sum(1).min() > 0.98
    code, _, _, err = _run(capsys, "embed", "--method", "mean", "--model", tmp_path / "missing.gguf",
                           "--input", src, "--output", tmp_path / "x.npy")
    assert code == 2 and "is not a file" in err and "Traceback" not in err
