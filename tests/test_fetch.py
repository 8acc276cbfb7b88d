"""`python -m analysis data fetch|list` against a loopback HTTP server (a thread in the test) serving archives made
here: never the internet. The checks (pins, format, layout) and the messages a user sees when something is wrong."""

import dataclasses
import functools
import hashlib
import http.server
import io
import socket
import tarfile
import threading
import zipfile

import pytest

from analysis.core.errors import UserError
from analysis.data import datasets, fetch
from tests.conftest import run_cli

STSB_ROWS = {  # STS-B layout, one genre/source per row
    "train": "main-captions\tMSRvid\t2012train\t0001\t5.000\tA man plays.\tA man is playing.\n"
             "main-news\theadlines\t2013\t0002\t1.000\tStocks fell.\tA cat sat.\n",
    "dev": "main-captions\tMSRvid\t2012test\t0001\t4.000\tA dog runs.\tA dog is running.\n"
           "main-forums\tanswers-forums\t2015\t0002\t0.500\tIt depends.\tThe sky is blue.\n"
           "main-news\theadlines\t2014\t0003\t3.000\tRates rose.\tRates went up a bit.\n",
    "test": "main-news\theadlines\t2016\t0001\t2.000\tHidden.\tNever extracted.\n",
}
SICK = ("pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tentailment_AB\tentailment_BA\t"
        "sentence_A_original\tsentence_B_original\tsentence_A_dataset\tsentence_B_dataset\tSemEval_set\n"
        "1\tA boy runs.\tA kid runs.\tENTAILMENT\t4.5\tA_entails_B\tB_entails_A\to\to\tFLICKR\tFLICKR\tTEST\n"
        "2\tA man cooks.\tA dog sleeps.\tNEUTRAL\t1.2\tA_neutral_B\tB_neutral_A\to\to\tSEMEVAL\tSEMEVAL\tTEST\n"
        "3\tA girl sings.\tA girl sings.\tENTAILMENT\t4.9\tA_entails_B\tB_entails_A\to\to\tFLICKR\tFLICKR\tTRAIN\n")


def _tar_gz(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _zip(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return buf.getvalue()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def server(tmp_path):
    """(folder served, base URL) of an HTTP server on 127.0.0.1 in a thread."""
    root = tmp_path / "served"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def data(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    monkeypatch.setenv("EMBEDSCOPE_DATA", str(folder))
    monkeypatch.delenv("EMBEDSCOPE_SHARED_DATA", raising=False)
    return folder


@pytest.fixture
def stsb_archive(server, monkeypatch):
    """Stsbenchmark.tar.gz served, with the fixture files' hashes pinned in place of the real ones."""
    root, base = server
    files = {f"stsbenchmark/sts-{s}.csv": text for s, text in STSB_ROWS.items()}
    files |= {"stsbenchmark/readme.txt": "STS Benchmark\n", "stsbenchmark/LICENSE.txt": "CC BY-SA 4.0\n"}
    (root / "Stsbenchmark.tar.gz").write_bytes(_tar_gz(files))
    pins = {name.rpartition("/")[2]: _sha(text) for name, text in files.items()}
    monkeypatch.setitem(fetch.SOURCES, "stsb", dataclasses.replace(fetch.SOURCES["stsb"], pins=pins))
    return base




def test_fetch_stsb_stores_the_layout_the_registry_reads(data, stsb_archive, capsys):
    assert not datasets.get("stsb-dev").present()
    code, res, err = run_cli(capsys, "data", "fetch", "stsb", "--base-url", stsb_archive)
    assert code == 0, err
    (got,) = res["fetched"]
    assert got["status"] == "stored" and got["url"] == f"{stsb_archive}/Stsbenchmark.tar.gz"
    assert {f["name"]: f["check"] for f in got["files"]} == dict.fromkeys(
        ["sts-train.csv", "sts-dev.csv", "readme.txt", "LICENSE.txt"], "sha256")
    assert got["pairs"] == {"STS-B train": 2, "STS-B dev": 3}
    assert sorted(p.name for p in (data / "stsbenchmark").iterdir()) == [
        "LICENSE.txt", "readme.txt", "sts-dev.csv", "sts-train.csv"]  # the test split stays in the archive
    assert not [p for p in data.iterdir() if p.name.startswith(".")]  # no staging folder left behind
    dev = datasets.pairs_of("stsb-dev")
    assert len(dev) == 3 and dev.genres[1] == "main-forums/answers-forums"
    code, res, _ = run_cli(capsys, "data", "fetch", "stsb", "--base-url", stsb_archive)
    assert code == 0 and res["fetched"][0]["status"] == "present"  # nothing downloaded twice


def test_a_hash_mismatch_stores_nothing(data, stsb_archive, monkeypatch):
    bad = dict(fetch.SOURCES["stsb"].pins, **{"sts-dev.csv": "0" * 64})
    monkeypatch.setitem(fetch.SOURCES, "stsb", dataclasses.replace(fetch.SOURCES["stsb"], pins=bad))
    with pytest.raises(UserError, match=r"sts-dev.csv in Stsbenchmark.tar.gz does not match its pinned SHA-256"):
        fetch.fetch("stsb", base_url=stsb_archive)
    assert not (data / "stsbenchmark").exists() and list(data.iterdir()) == []


def test_fetch_sick_and_a_semeval_year_by_format(data, server, capsys):
    root, base = server
    (root / "SICK.zip").write_bytes(_zip({"SICK.txt": SICK, "readme.txt": "SICK\n", "__MACOSX/._SICK.txt": "x"}))
    sts16 = {}
    for s in fetch.SEMEVAL[16]:  # 2016's own file names; one line without gold, which is skipped
        sts16[f"sts2016-english-with-gs-v1.0/STS2016.input.{s}.txt"] = f"{s} one.\t{s} uno.\textra\n{s} two.\tno.\n"
        sts16[f"sts2016-english-with-gs-v1.0/STS2016.gs.{s}.txt"] = "4.2\n\n"
    (root / "STS2016-en-test.zip").write_bytes(_zip(sts16))
    code, res, err = run_cli(capsys, "data", "fetch", "sick", "sts16", "--base-url", base)
    assert code == 0, err
    assert [f["status"] for f in res["fetched"]] == ["stored", "stored"]
    assert all(f["check"] == "format" for r in res["fetched"] for f in r["files"])
    sick = datasets.pairs_of("sick")
    assert (len(sick), sick.genres, list(sick.scores)) == (2, ["FLICKR", "SEMEVAL"], [4.5, 1.2])  # TEST part only
    year = datasets.pairs_of("sts16")
    assert len(year) == 5 and year.genres == list(fetch.SEMEVAL[16])
    assert (data / "sts16" / "STS.gs.headlines.txt").is_file()  # stored under the names of the other years
    code, res, _ = run_cli(capsys, "data", "list")
    present = {r["id"]: r["present"] for r in res["sets"]}
    assert present["sick"] and present["sts16"] and not present["sts12"] and not present["stsb-dev"]


def test_what_a_user_reads_when_it_goes_wrong(data, server, capsys):
    root, base = server
    code, _, err = run_cli(capsys, "data", "fetch", "sick", "--base-url", base)  # not served: 404
    last = err.strip().splitlines()[-1]  # after the one progress line
    assert code == 2 and "answered HTTP 404" in last and last.endswith(f"or place SICK.txt in {data / 'sick'}.")
    with socket.socket() as s:  # a port nobody listens on: what an offline machine sees
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    code, _, err = run_cli(capsys, "data", "fetch", "sts12", "--base-url", closed)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 2 and "may be offline" in lines[1] and "STS.input.MSRpar.txt" in lines[1]
    (root / "SICK.zip").write_text("<html>moved</html>")
    with pytest.raises(UserError, match="neither a zip nor a tar archive"):
        fetch.fetch("sick", base_url=base)
    (root / "SICK.zip").write_bytes(_zip({"SICK.txt": "a\tb\n1\t2\n"}))
    with pytest.raises(UserError, match=r"does not hold SICK.* no sentence_a, .*nothing was stored"):
        fetch.fetch("sick", base_url=base)
    (root / "SICK.zip").write_bytes(_zip({"other.txt": "x"}))
    with pytest.raises(UserError, match="has no SICK.txt"):
        fetch.fetch("sick", base_url=base)
    assert not (data / "sick").exists()
    with pytest.raises(UserError, match=r"^SICK-R test is not on this machine: run `python -m analysis data fetch "
                                        r"sick`.*or place SICK.txt in .*\.$"):
        datasets.pairs_of("sick")
    code, _, err = run_cli(capsys, "sts", "--method", "last", "--data", "stsb-dev")
    assert code == 2 and "data fetch stsb" in err and err.count("\n") == 1


def test_an_unwritable_data_folder_is_one_sentence(tmp_path, monkeypatch, stsb_archive):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("EMBEDSCOPE_DATA", str(blocker / "data"))
    with pytest.raises(UserError, match="cannot be written: set EMBEDSCOPE_DATA"):
        fetch.fetch("stsb", base_url=stsb_archive)


def test_the_pinned_hashes_are_those_of_the_shared_stsb(data, server):
    """The real pins accept the copy every published number was computed on (skipped where it is absent)."""
    from analysis.core.paths import REPO

    shared = REPO.parent / "shared" / "data" / "stsbenchmark"
    if not (shared / "sts-dev.csv").is_file():
        pytest.skip("STS-B not found at ../shared/data/stsbenchmark (development data, not shipped)")
    root, base = server
    names = ["sts-train.csv", "sts-dev.csv", "readme.txt", "LICENSE.txt"]
    (root / "Stsbenchmark.tar.gz").write_bytes(_tar_gz({f"stsbenchmark/{n}": (shared / n).read_text() for n in names}))
    got = fetch.fetch("stsb", base_url=base)
    assert got["pairs"] == {"STS-B train": 5749, "STS-B dev": 1500}
    assert all(f["check"] == "sha256" for f in got["files"])
