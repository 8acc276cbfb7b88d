"""`python -m analysis data fetch|list` against a loopback HTTP server (a thread in the test) serving archives made
here: never the internet. The checks (pins, format, layout) and the messages a user sees when something is wrong."""

import dataclasses
import functools
import hashlib
import http.server
import io
import json
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
    assert got["status"] == "stored"
    assert [d["url"] for d in got["downloads"]] == [f"{stsb_archive}/Stsbenchmark.tar.gz"]
    assert {f["name"]: f["check"] for f in got["files"]} == dict.fromkeys(
        ["sts-train.csv", "sts-dev.csv", "readme.txt", "LICENSE.txt"], "sha256")
    assert got["counts"] == {"STS-B train": 2, "STS-B dev": 3}
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
    with pytest.raises(UserError, match=r"sts-dev.csv from .*Stsbenchmark.tar.gz does not match its pinned SHA-256"):
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
    assert all(r["pinned"] == "nothing" for r in res["fetched"])
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
    with pytest.raises(UserError, match="neither a zip nor a tar archive .*an error page"):
        fetch.fetch("sick", base_url=base)
    (root / "SICK.zip").write_bytes(_zip({"SICK.txt": "a\tb\n1\t2\n"}))
    with pytest.raises(UserError, match=r"for SICK.* cannot be read as expected .* no sentence_a, .*nothing was"):
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
    assert got["counts"] == {"STS-B train": 5749, "STS-B dev": 1500}
    assert all(f["check"] == "sha256" for f in got["files"])


# ---- SciFact (BEIR's zip) and Banking77 (PolyAI's plain files) ----------------------------------------------------
def _beir_zip(n_train: int = 4) -> tuple[bytes, dict[str, str]]:
    """scifact.zip as BEIR lays it out (a top folder, "metadata" fields, both splits' qrels): (bytes, digests)."""
    line = json.dumps
    corpus = "".join(line({"_id": f"d{i}", "title": f"Title {i}", "text": f"Abstract {i}.", "metadata": {}}) + "\n"
                     for i in range(6))
    queries = "".join(line({"_id": str(q), "text": f"Claim {q}.", "metadata": {}}) + "\n" for q in range(n_train + 2))
    train = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\td{q}\t1\n" for q in range(n_train))
    test = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\td{q}\t1\n" for q in (n_train, n_train + 1))
    blob = _zip({"scifact/corpus.jsonl": corpus, "scifact/queries.jsonl": queries, "scifact/qrels/train.tsv": train,
                 "scifact/qrels/test.tsv": test})
    return blob, {"md5": hashlib.md5(blob).hexdigest(), "sha256": hashlib.sha256(blob).hexdigest()}


def test_fetch_scifact_checks_the_zip_and_stores_beir_layout(data, server, monkeypatch, capsys):
    root, base = server
    blob, digests = _beir_zip()
    (root / "scifact.zip").write_bytes(blob)
    with pytest.raises(UserError, match=r"scifact.zip from .* does not match its published md5 .*nothing was stored"):
        fetch.fetch("scifact", base_url=base)  # the real published digests refuse an archive made here
    assert list(data.iterdir()) == []
    monkeypatch.setitem(fetch.SOURCES, "scifact", dataclasses.replace(fetch.SOURCES["scifact"], archive_pins=digests))
    assert not datasets.get("scifact-test").present()
    code, res, err = run_cli(capsys, "data", "fetch", "scifact", "--base-url", base)
    assert code == 0, err
    (got,) = res["fetched"]
    assert got["counts"] == {"SciFact train": 4, "SciFact test": 2}
    assert {f["name"]: f["check"] for f in got["files"]} == dict.fromkeys(
        ["corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv"], "archive")
    assert sorted(str(p.relative_to(data)) for p in data.rglob("*") if p.is_file()) == [
        "scifact/corpus.jsonl", "scifact/qrels/test.tsv", "scifact/qrels/train.tsv", "scifact/queries.jsonl"]
    test = datasets.get("scifact-test").load()
    assert (test.name, list(test.queries), len(test.corpus)) == ("SciFact test", ["4", "5"], 6)
    assert test.corpus["d4"] == "Title 4 Abstract 4."


def test_fetch_banking77_plain_files_from_a_local_folder(data, tmp_path, monkeypatch, capsys):
    mirror = tmp_path / "downloads"  # files downloaded by hand: --base-url is the folder itself
    mirror.mkdir()
    files = {"train.csv": 'text,category\nWhere is my card?,card_arrival\n"Top up, please",top_up\n',
             "test.csv": "text,category\nMy card has not come,card_arrival\n",
             "categories.json": '["card_arrival", "top_up"]', "LICENSE": "CC BY 4.0\n"}
    for name, text in files.items():
        (mirror / name).write_text(text)
    monkeypatch.setitem(fetch.SOURCES, "banking77", dataclasses.replace(
        fetch.SOURCES["banking77"], pins={n: _sha(t) for n, t in files.items()}))
    code, res, err = run_cli(capsys, "data", "fetch", "banking77", "--base-url", mirror)
    assert code == 0, err
    (got,) = res["fetched"]
    assert [d["url"] for d in got["downloads"]] == [(mirror / n).as_uri() for n in files]
    assert got["counts"] == {"Banking77 train": 2, "Banking77 test": 1}
    assert all(f["check"] == "sha256" for f in got["files"])
    train = datasets.get("banking77").load()
    assert train.texts == ["Where is my card?", "Top up, please"] and train.labels == ["card_arrival", "top_up"]
    assert datasets.get("banking77-test").load().labels == ["card_arrival"]
    code, _, err = run_cli(capsys, "data", "fetch", "banking77", "--force", "--base-url", tmp_path / "nowhere")
    assert code == 2 and "neither a URL nor a folder on this machine" in err


def test_the_real_pins_accept_the_shared_banking77_and_scifact(data, server, monkeypatch):
    """The pins (Banking77) and the reader (SciFact) accept the development copies (skipped where absent)."""
    from analysis.core.paths import REPO

    shared = REPO.parent / "shared" / "data"
    if not (shared / "banking77" / "train.csv").is_file() or not (shared / "scifact" / "corpus.jsonl").is_file():
        pytest.skip("Banking77 or SciFact not found in ../shared/data (development data, not shipped)")
    root, base = server
    for name in ("train.csv", "categories.json", "LICENSE"):
        (root / name).write_bytes((shared / "banking77" / name).read_bytes())
    (root / "test.csv").write_text("text,category\nWhere is it?,card_arrival\n")  # the test split is not here
    pins = dict(fetch.BANKING77_PINS, **{"test.csv": _sha("text,category\nWhere is it?,card_arrival\n")})
    monkeypatch.setitem(fetch.SOURCES, "banking77", dataclasses.replace(fetch.SOURCES["banking77"], pins=pins))
    assert fetch.fetch("banking77", base_url=base)["counts"] == {"Banking77 train": 10003, "Banking77 test": 1}
    sci = {f"scifact/{n}": (shared / "scifact" / n).read_text() for n in ("corpus.jsonl", "queries.jsonl",
                                                                          "qrels/train.tsv")}
    sci["scifact/qrels/test.tsv"] = "query-id\tcorpus-id\tscore\n0\t31715818\t1\n"
    blob = _zip(sci)
    (root / "scifact.zip").write_bytes(blob)
    monkeypatch.setitem(fetch.SOURCES, "scifact", dataclasses.replace(
        fetch.SOURCES["scifact"], archive_pins={"sha256": hashlib.sha256(blob).hexdigest()}))
    assert fetch.fetch("scifact", base_url=base)["counts"] == {"SciFact train": 809, "SciFact test": 1}
    assert len(datasets.get("scifact").load().corpus) == 5183
