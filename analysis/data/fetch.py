"""Public data sets a user can get: where each is published, how its files are checked, where they go.

`fetch(name)` downloads the authors' archive (or their plain files), takes out the files the readers use, checks
them and stores them in the data folder (`analysis.core.paths.data_dir`: EMBEDSCOPE_DATA) in the layout
`analysis.data.datasets` reads. Checks, strongest first: the archive's own published digest (SciFact: BEIR's md5
and the SHA-256 of the same zip); a SHA-256 pin per stored file where the expected bytes are known (STS-B: the copy
every number of this project was computed on; Banking77: the blobs of PolyAI's repository); and always the
registry's own reader, which must read the files (an HTML error page, a truncated file or a changed layout
fails there). Where no hash could be known offline (SICK, SemEval STS 2012-2016) the reader is the check.
Downloads and archive members are bounded (`analysis.data.download`: a limit per set on every member, counted
as it inflates); every failure is one sentence, and nothing is stored unless every check passes (files are
staged in a hidden folder of the data folder and moved into place at the end; the staging is always removed).

    from analysis.data.fetch import fetch
    fetch("stsb")                                       # {"status": "stored", "files": [...], ...}
    fetch("sick", base_url="file:///home/me/downloads") # the same archive from a mirror ...
    fetch("banking77", base_url="/home/me/downloads")   # ... or a folder on this machine (a local mirror)
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from analysis.core.errors import UserError
from analysis.core.paths import data_dir
from analysis.data import banking77, scifact
from analysis.data.corpora import Pairs
from analysis.data.download import download, extract, mirror_url
from analysis.data.files import read_semeval_sts, read_sick, read_sts

MAX_BYTES = 64 << 20  # a download: every archive here is under 5 MB; anything far larger is not the file we asked for
MEMBER_LIMIT = 16 << 20  # a stored file, decompressed (the largest STS file is under 3 MB)
NOTES = re.compile(r"(?i)^(00-)?(readme|license|licence)[^/]*\.txt$")  # licence and readme files travel along


@dataclass(frozen=True)
class Source:
    """One fetchable set. Published either as one archive (`archive`: its file name, `url`: where it is) or as
    plain files (`remote`: stored name -> URL, each downloaded as it is)."""

    name: str  # command-line name: python -m analysis data fetch NAME
    label: str
    url: str  # the authors' canonical download (for plain files: the folder they are published in)
    archive: str | None  # the archive's file name (a --base-url mirror serves the same name); None: plain files
    folder: str  # where the files go, under the data folder
    files: tuple[str, ...]  # the files the reader needs (stored names, relative to `folder`: "qrels/test.tsv")
    read: Callable[[Path], list]  # the registry's reader of the stored folder, the format check: named parts
    licence: str
    pins: dict[str, str] | None = None  # stored name -> SHA-256 where known; None: format check only
    rename: Callable[[str], str] = lambda base: base  # an archive member's file name -> its stored name
    archive_pins: dict[str, str] | None = None  # {"sha256": ..., "md5": ...} of the archive as published
    remote: dict[str, str] = field(default_factory=dict)  # plain files: stored name -> canonical URL
    member_limit: int = MEMBER_LIMIT  # the largest file of this set, decompressed: a member past it is refused
    pinned: str = ""  # what the pins are and where they come from, for `data list` and the fetch report

    def place_hint(self) -> str:
        shown = self.files if len(self.files) <= 4 else (
            *self.files[:2], f"the other {len(self.files) - 2} files of {self.archive or self.url}")
        return f"{', '.join(shown)} in {data_dir() / self.folder}"

    def pick(self, member: PurePosixPath) -> str | None:
        """The stored name of an archive member, or None when it is not wanted: a member is a wanted file when its
        path ends with that file's path (after `rename`), whatever folder the archive wraps it in."""
        parts = member.with_name(self.rename(member.name)).parts
        for wanted in self.files:
            tail = PurePosixPath(wanted).parts
            if parts[-len(tail):] == tail:
                return wanted
        return member.name if NOTES.match(member.name) else None


# ---- the sources -----------------------------------------------------------------------------------------------
STSB_PINS = {  # sha256 of the files as extracted from Stsbenchmark.tar.gz, as read on the development machine
    "sts-train.csv": "0f71910b59aa1ad973c5897f0791f3b0965a92b8f82b1a95f3eea9f4162fda82",
    "sts-dev.csv": "5d7e944d8b02734b07bfdb5df67db3420c64bed153fcaa1ba47ad03480cf4234",
    "readme.txt": "e9488363d211c32ca5e912954f16eb9233cfed1b5b4b0475d0d812d35d7c8ef1",
    "LICENSE.txt": "3dfc3217395f8c5dd05c5f8995f25fe2f8fd258e6dd770b3de480749caee8c70",
}

# Sub-sets of each year's English test data with public gold scores, as SentEval and SimCSE evaluate them (STS 2013's
# SMT pairs are licensed by the LDC and not in the archive).
SEMEVAL = {
    12: ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    13: ("FNWN", "headlines", "OnWN"),
    14: ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    15: ("answers-forums", "answers-students", "belief", "headlines", "images"),
    16: ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
SEMEVAL_URL = {  # the STS wiki of the organisers (ixa2.si.ehu.eus), where every year's data is kept
    12: "4/40/STS2012-en-test.zip", 13: "2/2f/STS2013-en-test.zip", 14: "8/8c/STS2014-en-test.zip",
    15: "d/da/STS2015-en-test.zip", 16: "9/98/STS2016-en-test.zip",
}
STS_WIKI = "http://ixa2.si.ehu.eus/stswiki/images/"


def _stsb(folder: Path) -> list[Pairs]:
    return [read_sts(folder / f"sts-{split}.csv", name=f"STS-B {split}") for split in ("train", "dev")]


def _semeval(year: int) -> Source:
    subsets = SEMEVAL[year]
    return Source(
        f"sts{year}", f"STS{year} (SemEval 20{year} English test)", STS_WIKI + SEMEVAL_URL[year],
        SEMEVAL_URL[year].rpartition("/")[2], f"sts{year}",
        tuple(f"STS.{kind}.{s}.txt" for s in subsets for kind in ("input", "gs")),
        lambda folder: [read_semeval_sts(folder, subsets, name=f"STS{year}")],
        "research use; see the readme in the archive",
        rename=lambda base: re.sub(r"^STS20\d\d\.", "STS.", base))  # 2016 names its files STS2016.input.*


# SciFact: BEIR's zip (Thakur et al., 2021). BEIR's table of data sets publishes the zip's md5; the SHA-256 of the same
# 2,816,079-byte zip is recorded by two unrelated projects that downloaded it (and agrees with that md5 there), so
# both are checked before anything is read. Its members are checked by the reader (corpus, claims and both splits'
# judgements must load): the development machine's copy is a derivative (train claims only, no "metadata" field), so
# its digests cannot be the members' and none is pinned per file.
SCIFACT_ZIP = {"md5": "5f7d1de60b170fc8027bb7898e2efca1",
               "sha256": "536e14446a0ba56ed1398ab1055f39fe852686ecad24a6306c80c490fa8e0165"}
# Banking77: PolyAI's files at the commit that last changed them (the licence: 3bf93de, 2020-07-22), each pinned by the
# SHA-256 of its git blob at 57ec275 (read with `git show` from github.com/PolyAI-LDN/task-specific-datasets); the
# development machine's train.csv, categories.json and LICENSE are byte-identical to those blobs.
POLYAI = "https://raw.githubusercontent.com/PolyAI-LDN/task-specific-datasets/57ec275d8078af65b7731c2a98be812d844a6d6b"
BANKING77_PINS = {
    "train.csv": "b06e26ac675513959a63135f11b94ea7786ed02da65db93a5650d8838cbc664b",
    "test.csv": "d12d6e3bc4c3103966ae786dc435913c0c563dfa328f5a3646d0e62cfeeb474d",
    "categories.json": "53261da888122daf2d120d925458631d9619e15d82e56052e7a42e535ce32b63",
    "LICENSE": "7e7170e3cebf88a9f60c7b8421418323c09304da1af4d5e90f4da1dc1c8a2661",
}

SOURCES: dict[str, Source] = {s.name: s for s in (
    Source("stsb", "STS Benchmark (train and dev)", STS_WIKI + "4/48/Stsbenchmark.tar.gz", "Stsbenchmark.tar.gz",
           "stsbenchmark", ("sts-train.csv", "sts-dev.csv"), _stsb,
           "scores CC BY-SA 4.0, texts under their sources' licences (LICENSE.txt)", STSB_PINS,
           pinned="SHA-256 of each file, from the copy every number of this project was computed on"),
    # The authors' release on Zenodo (doi:10.5281/zenodo.2787612): all 9,840 pairs with their SemEval 2014 part.
    Source("sick", "SICK relatedness (SemEval 2014 test part)", "https://zenodo.org/record/2787612/files/SICK.zip",
           "SICK.zip", "sick", ("SICK.txt",), lambda folder: [read_sick(folder / "SICK.txt")], "CC BY-NC-SA 3.0"),
    *(_semeval(year) for year in SEMEVAL),
    Source("scifact", "SciFact (BEIR: 5,183 abstracts, train and test claims)",
           "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip", "scifact.zip",
           scifact.FOLDER, ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv"), scifact.read,
           "claims CC BY 4.0, abstracts ODC-By 1.0 (S2ORC)", archive_pins=SCIFACT_ZIP, member_limit=32 << 20,
           pinned="the zip's md5 (BEIR's table) and SHA-256 (recorded by two projects that fetched it); members "
                  "by the reader"),
    Source("banking77", "Banking77 (PolyAI: train and test queries, 77 intents)", POLYAI + "/banking_data", None,
           banking77.FOLDER, ("train.csv", "test.csv"), banking77.read, "CC BY 4.0 (LICENSE)", BANKING77_PINS,
           remote={"train.csv": POLYAI + "/banking_data/train.csv", "test.csv": POLYAI + "/banking_data/test.csv",
                   "categories.json": POLYAI + "/banking_data/categories.json", "LICENSE": POLYAI + "/LICENSE"},
           member_limit=4 << 20,
           pinned="SHA-256 of each file, from the git blobs of PolyAI's repository at commit 57ec275"),
)}
# STS-B's test split is left in the archive on purpose: this project selects on part of dev and reports on the rest
# (analysis.data.samples.dev_split), so no number it publishes has seen the test pairs. SciFact's and Banking77's test
# splits are stored (MTEB reports on them) but every registry part this project selects on is cut from train.


def source(name: str) -> Source:
    if name not in SOURCES:
        raise UserError(f"Unknown data set to fetch {name!r}: use one of {', '.join(SOURCES)}, or all.")
    return SOURCES[name]


def folder(name: str) -> Path:
    return data_dir() / source(name).folder


def present(name: str) -> bool:
    """True when every file the reader of `name` needs is in the data folder."""
    return all((folder(name) / f).is_file() for f in source(name).files)


def pairs(name: str) -> Pairs:
    """The scored pairs of a fetched one-part set (SICK, a SemEval year); STS-B's splits: `datasets.stsb_pairs`."""
    if not present(name):
        raise UserError(f"{source(name).label} is not on this machine: {how_to_get(name)}.")
    return source(name).read(folder(name))[0]


def how_to_get(name: str) -> str:
    """The clause that tells a user how to get a set (ends without a full stop, to close a sentence)."""
    s = source(name)
    return f"run `python -m analysis data fetch {name}` (downloads {s.url}) or place {s.place_hint()}"


# ---- fetching --------------------------------------------------------------------------------------------------
def fetch(name: str, *, base_url: str | None = None, force: bool = False) -> dict:
    """Download, check and store one source; a dict of what happened (JSON-able).

    Args:
        name: a key of SOURCES.
        base_url: a mirror serving the archive (or the plain files) under its own file name, instead of the
            authors' server: an http(s):// or file:// URL, or a folder on this machine.
        force: download again even when the files are already there.
    """
    s = source(name)
    target = data_dir() / s.folder
    if not force and all((target / f).is_file() for f in s.files):
        return {"data": s.name, "status": "present", "folder": str(target)}
    base = None if base_url is None else mirror_url(base_url)
    staging = _staging(data_dir(), s)
    try:
        files = staging / "files"
        downloads, stored = (_fetch_archive if s.archive else _fetch_plain)(s, base, staging, files)
        missing = [f for f in s.files if f not in stored]
        if missing:
            raise UserError(f"{s.archive or 'The download'} has no {', '.join(missing[:3])}: it is not "
                            f"{s.label}; nothing was stored.")
        for f, got in stored.items():
            pin = (s.pins or {}).get(f)
            if pin is not None and got["sha256"] != pin:
                raise UserError(f"{f} from {downloads[0]['url'] if s.archive else s.remote.get(f, f)} does not match "
                                f"its pinned SHA-256 ({got['sha256'][:12]}... instead of {pin[:12]}...): the download "
                                "is damaged or the file changed upstream; nothing was stored.")
        try:
            parts = s.read(files)
        except UserError as err:
            raise UserError(f"The files fetched for {s.label} cannot be read as expected ({err}); nothing was "
                            "stored.") from None
        _install(files, target, list(stored))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {"data": s.name, "status": "stored", "folder": str(target), "downloads": downloads,
            "files": [{"name": f, **got, "check": "sha256" if f in (s.pins or {}) else
                       ("archive" if s.archive_pins else "format")} for f, got in stored.items()],
            "counts": {p.name: len(p) for p in parts}, "licence": s.licence, "pinned": s.pinned or "nothing"}


def _fetch_archive(s: Source, base: str | None, staging: Path, files: Path) -> tuple[list[dict], dict[str, dict]]:
    """Download the archive, check it against its published digests, stream the wanted members out of it."""
    url = s.url if base is None else f"{base}/{s.archive}"
    archive = staging / s.archive
    size, digests = download(url, archive, limit=MAX_BYTES, hint=_offline_hint(s), name=s.archive)
    for algorithm, expected in (s.archive_pins or {}).items():
        if digests[algorithm] != expected:
            raise UserError(f"{s.archive} from {url} does not match its published {algorithm} "
                            f"({digests[algorithm][:12]}... instead of {expected[:12]}...): the download is damaged "
                            "or the archive changed upstream; nothing was stored.")
    stored = extract(archive, files, s.pick, limit=s.member_limit, name=s.archive)
    return [{"url": url, "bytes": size, "sha256": digests["sha256"]}], stored


def _fetch_plain(s: Source, base: str | None, staging: Path, files: Path) -> tuple[list[dict], dict[str, dict]]:
    """Download each published file on its own (bounded by the set's member limit)."""
    files.mkdir()
    downloads, stored = [], {}
    for name, url in s.remote.items():
        url = url if base is None else f"{base}/{name}"
        size, digests = download(url, files / name, limit=s.member_limit, hint=_offline_hint(s), name=name)
        downloads.append({"url": url, "bytes": size, "sha256": digests["sha256"]})
        stored[name] = {"bytes": size, "sha256": digests["sha256"]}
    return downloads, stored


def _install(staged: Path, target: Path, names: list[str]) -> None:
    """Move the checked files into the data folder (renames within one file system)."""
    try:
        for name in names:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged / name, target / name)
    except OSError as err:
        raise UserError(f"Could not store the fetched files in {target} ({err.strerror}): make the folder writable "
                        "or set EMBEDSCOPE_DATA to another folder.") from None


def _staging(root: Path, s: Source) -> Path:
    """A private folder inside the data folder (so the final move is a rename); UserError when it cannot be
    written, before anything is downloaded."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{s.folder}-", dir=root))
    except OSError:
        raise UserError(f"The data folder {root} cannot be written: set EMBEDSCOPE_DATA to a folder you can "
                        f"write and run the fetch again.") from None


def _offline_hint(s: Source) -> str:
    what = s.archive or ", ".join(s.remote)
    return (f"get {what} elsewhere and run `python -m analysis data fetch {s.name} --base-url <its folder>`, or place "
            f"{s.place_hint()}")
