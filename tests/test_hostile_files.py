"""Hostile files (issues 9, 10, 37): what a user hands in is read only up to the byte budget and counted against
the per-request budgets before any work (a device, a huge file, a line without end, 100,000 one-character
lines: one sentence each, at once, without the memory), malformed tables and control characters are one
sentence, a damaged or unwritable cache degrades to computing, and an output path is checked by writing there
before any work. Tiny random models only."""

# ruff: noqa: F811 -- pytest fixtures imported from hostile.py are named again as test arguments
from __future__ import annotations

import numpy as np
import pytest

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.core.intake import read_bytes, read_lines
from analysis.methods import get_method
from hostile import (ITEM, _jsonl, cache_dir, cli, one_error_line, one_sentence, refused, texts_file,  # noqa: F401
                     tiny, tiny_dir, warm_imports)

pytestmark = pytest.mark.usefixtures("warm_imports")


def test_cli_output_pointing_at_a_directory_fails_before_computing(capsys, tmp_path, texts_file):
    (tmp_path / "out.npy").mkdir()
    err = one_error_line(*cli(capsys, "embed", "--method", "mean", "--input", texts_file, "--output",
                       str(tmp_path / "out.npy"), "--model", "/nonexistent/model", "--no-cache"))
    assert "/nonexistent/model" not in err  # the output was checked first, before the model was looked for


# ==== data readers and the cache (fixed with issue 9) =============================================
def test_table_without_text_column_is_refused(tmp_path):
    from analysis.data.files import read_texts

    f = tmp_path / "t.csv"
    f.write_text("id,label\n1,a\n2,b\n")
    with pytest.raises(UserError):
        read_texts(str(f))


def test_file_of_nul_bytes_is_refused(tmp_path):
    from analysis.data.files import read_texts

    f = tmp_path / "nul.txt"
    f.write_bytes(b"\x00\x00\x00\n\x01\x02\n")
    with pytest.raises(UserError):
        read_texts(str(f))


def test_unwritable_cache_degrades_to_computing(tmp_path, tiny):
    import cache

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")  # tests may run as root, where chmod does not stop writes: a file does
    emb, meta, hit = cache.cached_encode(cache.Store(blocker / "cache"), tiny, get_method("mean"), ["a text"])
    assert emb.shape[0] == 1 and not hit


def test_deeply_nested_meta_json_is_recomputed(tmp_path, tiny):
    import cache

    store = cache.Store(tmp_path / "c")
    m = get_method("mean")
    cache.cached_encode(store, tiny, m, ["a text"])
    for meta in (tmp_path / "c").rglob("meta.json"):
        meta.write_text("[" * 200_000 + "]" * 200_000)
    emb, _, hit = cache.cached_encode(store, tiny, m, ["a text"])
    assert not hit and np.isfinite(emb).all()


# ==== ui helpers: uploads and sizes (the Benchmark page's uploads use these) =====================================
class Upload:
    def __init__(self, name: str, data: bytes):
        self.name, self._data = name, data

    def getvalue(self) -> bytes:
        return self._data


UPLOAD_CASES = {
    "file-too-large": lambda ui: ui.upload_bytes(Upload("big.csv", b"x" * (budgets.APP.upload_bytes + 1))),
    "text-too-long": lambda ui: ui.check_sizes(["x" * (budgets.APP.chars_per_text + 1)], "up.csv"),
    "too-many-texts": lambda ui: ui.check_sizes(["t"] * (budgets.APP.texts + 1), "up.csv"),
    "too-many-characters": lambda ui: ui.check_sizes(["x" * 40_000] * 60, "up.csv"),
}


@pytest.mark.parametrize("case", list(UPLOAD_CASES))
def test_upload_limits_are_one_sentence(case):
    import ui

    with pytest.raises(UserError) as err:
        UPLOAD_CASES[case](ui)
    one_sentence(str(err.value))


# ==== what a user hands in, read within the byte budget and counted before any work (issue 37) ==================
def _sparse(path, size: int = 2**30):
    """A file of `size` zero bytes that takes no disk (a hole): reading it whole would take its size in memory."""
    with open(path, "wb") as fh:
        fh.truncate(size)
    return str(path)


def test_a_device_is_refused_before_a_byte_is_read(capfd, cache_dir, tmp_path):
    message = refused(capfd, cache_dir, "embed", "--method", "mean", "--input", "/dev/zero", "--output",
                      str(tmp_path / "o.npy"), "--model", "/nonexistent/model", seconds=10)
    assert "zero is a device" in message and not (tmp_path / "o.npy").exists()
    with budgets.lifted(), pytest.raises(UserError, match="is a device"):  # not even --no-budgets reads it
        read_bytes("/dev/urandom")


@pytest.mark.parametrize("argv, name", [
    (["embed", "--method", "mean", "--input", "{big}.txt", "--output", "{out}"], "texts"),  # read_texts
    (["compare", "--methods", "last,mean", "--data", "{big}.csv"], "pairs"),  # read_sts, as every --data FILE
    (["compress-qa", "--data", "{big}.jsonl"], "items"),  # one line without an end: never read whole
], ids=["embed", "compare", "compress-qa"])
def test_a_huge_file_is_refused_after_the_byte_budget_without_its_memory(capfd, cache_dir, tmp_path, argv, name):
    big = tmp_path / name
    for suffix in (".txt", ".csv", ".jsonl"):
        _sparse(big.with_suffix(suffix))
    argv = [a.format(big=big, out=tmp_path / "o.npy") for a in argv]
    message = refused(capfd, cache_dir, *argv, "--model", "/nonexistent/model", seconds=10)
    assert f"holds more than {budgets.APP.upload_bytes:,} bytes" in message and "--no-budgets" in message


def test_a_hundred_thousand_one_character_lines_are_one_sentence_not_minutes(capfd, cache_dir, tmp_path):
    lines = tmp_path / "lines.txt"
    lines.write_text("x\n" * 100_000)
    message = refused(capfd, cache_dir, "embed", "--method", "mean", "--input", str(lines), "--output",
                      str(tmp_path / "o.npy"), "--model", "/nonexistent/model", seconds=10)
    assert "the number of texts in lines.txt" in message and "100,000" in message and "--sample" in message


def test_the_texts_a_request_embeds_are_counted_not_the_file(capsys, tmp_path, tiny_dir, monkeypatch):
    """A file past the texts budget is fine when --sample or --limit chooses few enough of it."""
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"text number {i}\n" for i in range(budgets.APP.texts + 1)))
    code, out, err = cli(capsys, "embed", "--method", "mean", "--input", str(lines), "--output",
                         str(tmp_path / "o.npy"), "--model", tiny_dir, "--limit", "3")
    assert code == 0, err
    assert np.load(tmp_path / "o.npy").shape[0] == 3


def test_pairs_past_the_pairs_budget_are_refused_before_the_model(capfd, cache_dir, tmp_path):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("sentence1,sentence2,score\n" + "".join(f"a {i},b {i},{i % 5}\n" for i in range(12)))
    with budgets.override(pairs=10):
        message = refused(capfd, cache_dir, "sts", "--method", "mean", "--data", str(pairs), "--model",
                          "/nonexistent/model")
    assert "the number of pairs in pairs.csv" in message and "12" in message


def test_the_byte_budget_reads_exactly_its_bytes(tmp_path):
    f = tmp_path / "f.txt"
    f.write_bytes(b"ab\ncd\n")  # 6 bytes
    with budgets.override(upload_bytes=6):
        assert read_bytes(f) == b"ab\ncd\n" and list(read_lines(f)) == [b"ab\n", b"cd\n"]
    with budgets.override(upload_bytes=5):
        with pytest.raises(UserError, match="more than 5 bytes"):
            read_bytes(f)
        lines = read_lines(f)
        assert next(lines) == b"ab\n"  # a caller that stops here never reads past the budget
        with pytest.raises(UserError, match="more than 5 bytes"):
            next(lines)
    with budgets.lifted():
        assert read_bytes(f) == b"ab\ncd\n"


# ==== an output path, checked by writing there before any work (issue 37) ==========================================
def test_an_output_folder_that_refuses_files_is_found_before_any_work(capfd, cache_dir, tmp_path):
    """/proc/self accepts an access check (as root, anything does) and refuses every new file: the command says so
    before reading its input or loading a model, where it used to fail at the end with a traceback."""
    message = refused(capfd, cache_dir, "embed", "--method", "mean", "--input", "/nonexistent/texts.txt",
                      "--output", "/proc/self/o.npy", "--model", "/nonexistent/model", seconds=10)
    assert "--output" in message and "cannot be written" in message and "texts.txt" not in message


@pytest.mark.parametrize("make, words", [
    (lambda d: d / "missing" / "o.npy", "does not exist"),
    (lambda d: (d / "o.npy").mkdir() or d / "o.npy", "is a folder"),
])
def test_output_paths_that_cannot_take_a_file(tmp_path, make, words):
    from cli.commands._common import check_writable

    with pytest.raises(UserError, match=words):
        check_writable(make(tmp_path), "--output")
    assert check_writable(tmp_path / "fine.npy", "--output") == tmp_path / "fine.npy"
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == []  # the probe file is gone
