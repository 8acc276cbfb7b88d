"""`data fetch` against a bad network or a bad mirror (issue 37), one class of input per test, on a loopback server
with archives made here: each is refused in one sentence (exit code 2 on the command line), and nothing is left
in the data folder, neither the set's folder nor a staging folder."""

import dataclasses
import gzip
import http.server
import io
import threading
import tracemalloc
import zipfile

import pytest

from analysis.core.errors import UserError
from analysis.data import download, fetch
from tests.conftest import run_cli
from tests.test_fetch import _Quiet, _tar_gz, _zip


class _Hostile(_Quiet):
    """Serves the folder like the plain server, plus two misbehaving paths: /loop/* redirects to itself and
    /drop/* announces a body and closes the connection a tenth of the way through it."""

    def do_GET(self):
        if self.path.startswith("/loop/"):
            self.send_response(302)
            self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path.startswith("/drop/"):
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"PK" + b"x" * 9998)
            self.wfile.flush()
            self.close_connection = True
        else:
            super().do_GET()


@pytest.fixture
def data(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    monkeypatch.setenv("EMBEDSCOPE_DATA", str(folder))
    monkeypatch.delenv("EMBEDSCOPE_SHARED_DATA", raising=False)
    return folder


@pytest.fixture
def hostile(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    handler = lambda *a, **k: _Hostile(*a, directory=str(root), **k)  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _refused(capsys, name: str, base: str) -> str:
    """The one line a user reads when `data fetch NAME --base-url BASE` fails (after the progress line)."""
    code, _, err = run_cli(capsys, "data", "fetch", name, "--base-url", base)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 2, err
    return lines[1].removeprefix("error: ")


def _nothing_left(folder) -> None:
    assert not folder.exists() or list(folder.iterdir()) == []  # no set folder, no .staging folder


def test_a_truncated_tar_gz_is_named(data, hostile, capsys):
    root, base = hostile
    whole = _tar_gz({"stsbenchmark/sts-train.csv": "x\t" * 40000, "stsbenchmark/sts-dev.csv": "y\n"})
    (root / "Stsbenchmark.tar.gz").write_bytes(whole[: len(whole) // 2])
    line = _refused(capsys, "stsb", base)
    assert line.startswith("Stsbenchmark.tar.gz is damaged or truncated") and line.endswith("nothing was stored.")
    _nothing_left(data)


def test_a_truncated_zip_is_named(data, hostile, capsys):
    root, base = hostile
    whole = _zip({"SICK.txt": "a\tb\n" * 1000})
    (root / "SICK.zip").write_bytes(whole[: len(whole) - 30])  # the central directory is cut off
    assert _refused(capsys, "sick", base).startswith("SICK.zip is a damaged or truncated archive")
    _nothing_left(data)


def test_a_connection_dropped_mid_body_is_named(data, hostile, capsys):
    _, base = hostile
    line = _refused(capsys, "sick", f"{base}/drop")
    assert line.startswith("The connection dropped while downloading SICK.zip from ") and "of 100,000 bytes" in line
    assert "IncompleteRead" not in line and line.endswith("or place SICK.txt in " + str(data / "sick") + ".")
    _nothing_left(data)


def test_a_redirect_loop_is_one_line(data, hostile, capsys):
    _, base = hostile
    line = _refused(capsys, "sick", f"{base}/loop")
    assert "redirects in a loop (HTTP 302)" in line
    _nothing_left(data)


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_a_member_that_inflates_past_the_limit_is_refused_before_it_is_read(data, hostile, monkeypatch, kind):
    """8 MB of zeros compress to a few KB; with the set's limit at 1 MB the zip's member is refused from its declared
    size, the .tar.gz when its gzip stream passes four times the limit, and nothing near its size is held in memory."""
    root, base = hostile
    zeros = "\0" * (8 << 20)
    if kind == "zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr("SICK.txt", zeros)
        (root / "SICK.zip").write_bytes(buf.getvalue())
        name, archive = "sick", "SICK.zip"
    else:
        (root / "Stsbenchmark.tar.gz").write_bytes(_tar_gz({"stsbenchmark/sts-train.csv": zeros,
                                                             "stsbenchmark/sts-dev.csv": "x"}))
        name, archive = "stsb", "Stsbenchmark.tar.gz"
    assert (root / archive).stat().st_size < 100_000
    monkeypatch.setitem(fetch.SOURCES, name, dataclasses.replace(fetch.SOURCES[name], member_limit=1 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(UserError, match=rf"{archive} (declares 8,388,608 bytes, more than the 1 MB|inflates past "
                                            r"4 MB).*nothing was stored"):
            fetch.fetch(name, base_url=base)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    _nothing_left(data)


def test_a_member_is_counted_as_it_inflates(tmp_path):
    """Defence behind the declared size: a stream that yields more than the limit is cut at the limit."""
    src = io.BytesIO(b"z" * (3 << 16))
    with pytest.raises(UserError, match=r"big.txt in a.zip inflates past the 0.125 MB"):
        download._copy(src, tmp_path / "out" / "big.txt", 1 << 17, "big.txt", "a.zip")


def test_a_download_announced_or_sent_past_the_limit_is_refused(data, hostile, monkeypatch, capsys):
    root, base = hostile
    (root / "SICK.zip").write_bytes(b"PK" + b"\0" * 5000)
    monkeypatch.setattr(fetch, "MAX_BYTES", 1000)
    assert "announces 5,002 bytes, more than the" in _refused(capsys, "sick", base)
    _nothing_left(data)


def test_a_base_url_that_is_a_folder_is_a_local_mirror(data, tmp_path, capsys):
    folder = tmp_path / "by hand"
    folder.mkdir()
    sick = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tSemEval_set\n1\tA b.\tA c.\t4.5\tTEST\n"
    (folder / "SICK.zip").write_bytes(_zip({"SICK/SICK.txt": sick}))
    code, res, err = run_cli(capsys, "data", "fetch", "sick", "--base-url", folder)
    assert code == 0, err
    assert res["fetched"][0]["counts"] == {"SICK-R test": 1}
    (folder / "SICK.zip").unlink()
    line = _refused(capsys, "sts12", str(folder))
    assert line.startswith("The local mirror has no readable STS2012-en-test.zip")
    for bad, says in ((str(tmp_path / "nowhere"), "neither a URL nor a folder"), ("ftp://host/x", "scheme ftp:")):
        with pytest.raises(UserError, match=says):
            fetch.fetch("sts13", base_url=bad)


def test_a_gzip_that_is_not_a_tar_and_a_bad_gzip_stream(data, hostile, capsys):
    root, base = hostile
    (root / "Stsbenchmark.tar.gz").write_bytes(gzip.compress(b"plain text, not a tar archive\n" * 20))
    assert _refused(capsys, "stsb", base).startswith("Stsbenchmark.tar.gz is a damaged or truncated archive")
    good = _tar_gz({"stsbenchmark/sts-train.csv": "a" * 50000, "stsbenchmark/sts-dev.csv": "b"})
    broken = good[:200] + bytes(b ^ 0xFF for b in good[200:260]) + good[260:]  # flipped bits inside the deflate stream
    (root / "Stsbenchmark.tar.gz").write_bytes(broken)
    line = _refused(capsys, "stsb", base)
    assert "damaged or truncated" in line and line.endswith("nothing was stored.")
    _nothing_left(data)


def test_every_refusal_above_is_one_sentence_with_no_traceback(data, hostile, capsys):
    """The command line's contract for all of them: exit code 2, one line on stderr after the progress line."""
    root, base = hostile
    (root / "SICK.zip").write_bytes(b"<html>Moved</html>")
    line = _refused(capsys, "sick", base)
    assert line.count(". ") == 0 and "Traceback" not in line
    _nothing_left(data)
