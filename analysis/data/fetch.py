"""Public data sets a user can get: where each is published, how its files are checked, where they go.

`fetch(name)` downloads the authors' archive, takes out the files the readers use, checks them and stores them in
the data folder (`analysis.core.paths.data_dir`: EMBEDSCOPE_DATA) in the layout `analysis.data.datasets` reads.
The check is a SHA-256 where the expected bytes are known (STS-B: pinned from the copy every number of this
project was computed on); where no hash can be known offline (SICK, SemEval STS 2012-2016: never downloaded on
the development machine, and their servers publish none) the registry's own reader must read the files and find
scored pairs, which catches an HTML error page, a truncated archive or a changed layout. Offline, one sentence
says which files to place where. Nothing is stored unless every check passes.

    from analysis.data.fetch import fetch
    fetch("stsb")                                         # {"status": "stored", "files": [...], ...}
    fetch("sick", base_url="file:///home/me/downloads")   # the same archive from a mirror or a local folder
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from analysis.core.errors import UserError
from analysis.core.paths import data_dir
from analysis.data.corpora import Pairs
from analysis.data.files import read_semeval_sts, read_sick, read_sts

MAX_BYTES = 64 << 20  # every archive here is under 5 MB; anything far larger is not the file we asked for
TIMEOUT = 60  # seconds without a byte before giving up
NOTES = re.compile(r"(?i)^(00-)?(readme|license|licence)[^/]*\.txt$")  # licence and readme files travel along


@dataclass(frozen=True)
class Source:
    name: str  # command-line name: python -m analysis data fetch NAME
    label: str
    url: str  # the authors' canonical download
    archive: str  # its file name (a --base-url mirror serves the same name)
    folder: str  # where the files go, under the data folder
    files: tuple[str, ...]  # the files the reader needs (stored names)
    read: Callable[[Path], list[Pairs]]  # the registry's reader of the stored folder: also the format check
    licence: str
    pins: dict[str, str] | None = None  # stored name -> SHA-256 where known; None: format check only
    rename: Callable[[str], str] = lambda base: base  # an archive member's file name -> its stored name

    def place_hint(self) -> str:
        shown = self.files if len(self.files) <= 3 else (*self.files[:2], f"the other {len(self.files) - 2} "
                                                                         f"STS.input/STS.gs files of {self.archive}")
        return f"{', '.join(shown)} in {data_dir() / self.folder}"


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


SOURCES: dict[str, Source] = {s.name: s for s in (
    Source("stsb", "STS Benchmark (train and dev)", STS_WIKI + "4/48/Stsbenchmark.tar.gz", "Stsbenchmark.tar.gz",
           "stsbenchmark", ("sts-train.csv", "sts-dev.csv"), _stsb,
           "scores CC BY-SA 4.0, texts under their sources' licences (LICENSE.txt)", STSB_PINS),
    # The authors' release on Zenodo (doi:10.5281/zenodo.2787612): all 9,840 pairs with their SemEval 2014 part.
    Source("sick", "SICK relatedness (SemEval 2014 test part)", "https://zenodo.org/record/2787612/files/SICK.zip",
           "SICK.zip", "sick", ("SICK.txt",), lambda folder: [read_sick(folder / "SICK.txt")], "CC BY-NC-SA 3.0"),
    *(_semeval(year) for year in SEMEVAL),
)}
# STS-B's test split is left in the archive on purpose: this project selects on part of dev and reports on the rest
# (analysis.data.samples.dev_split), so no number it publishes has seen the test pairs.


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
        base_url: a mirror (or file:///folder) serving the archive under its own file name, instead of the
            authors' server.
        force: download again even when the files are already there.
    """
    s = source(name)
    target = data_dir() / s.folder
    if not force and all((target / f).is_file() for f in s.files):
        return {"data": s.name, "status": "present", "folder": str(target)}
    url = s.url if base_url is None else f"{base_url.rstrip('/')}/{s.archive}"
    staging = _staging(data_dir(), s)
    try:
        archive = staging / s.archive
        size, digest = _download(url, archive, s)
        stored = _extract(archive, staging / "files", s)
        try:
            parts = s.read(staging / "files")
        except UserError as err:
            raise UserError(f"{s.archive} from {url} does not hold {s.label} as expected ({err}); nothing was "
                            "stored.") from None
        target.mkdir(parents=True, exist_ok=True)
        for f in stored:
            os.replace(staging / "files" / f["name"], target / f["name"])
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {"data": s.name, "status": "stored", "folder": str(target), "url": url, "archive_bytes": size,
            "archive_sha256": digest, "files": stored, "pairs": {p.name: len(p) for p in parts},
            "licence": s.licence}


def _staging(root: Path, s: Source) -> Path:
    """A private folder inside the data folder (so the final move is a rename); UserError when it cannot be
    written, before anything is downloaded."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{s.folder}-", dir=root))
    except OSError:
        raise UserError(f"The data folder {root} cannot be written: set EMBEDSCOPE_DATA to a folder you can "
                        f"write and run the fetch again.") from None


def _download(url: str, dest: Path, s: Source) -> tuple[int, str]:
    """Stream `url` to `dest`; (bytes, sha256). Any failure to reach it is one sentence saying what to do."""
    sha, size = hashlib.sha256(), 0
    request = urllib.request.Request(url, headers={"User-Agent": "embedscope (python urllib)"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as resp, open(dest, "wb") as out:
            while chunk := resp.read(1 << 16):
                size += len(chunk)
                if size > MAX_BYTES:
                    raise UserError(f"{url} is larger than {MAX_BYTES >> 20} MB, so it is not {s.archive}; nothing "
                                    "was stored.")
                sha.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as err:
        raise UserError(f"{url} answered HTTP {err.code} ({err.reason}): {_offline_hint(s)}.") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", None) or err
        raise UserError(f"Could not download {url} ({reason}), so this machine may be offline: "
                        f"{_offline_hint(s)}.") from None
    return size, sha.hexdigest()


def _offline_hint(s: Source) -> str:
    return (f"get {s.archive} elsewhere and run `python -m analysis data fetch {s.name} --base-url "
            f"file:///<its folder>`, or place {s.place_hint()}")


def _extract(archive: Path, out: Path, s: Source) -> list[dict]:
    """Write the wanted members (the reader's files, plus readme and licence files) into `out`, checking pinned
    hashes; [{name, bytes, sha256, check}]. Members are read by name, never extracted wholesale, so a path in the
    archive cannot write outside `out`."""
    members = _members(archive, s)
    missing = [f for f in s.files if f not in members]
    if missing:
        raise UserError(f"{s.archive} has no {', '.join(missing[:3])}: it is not the archive of {s.label}; nothing "
                        "was stored.")
    out.mkdir()
    stored = []
    for name, data in members.items():
        digest = hashlib.sha256(data).hexdigest()
        pin = (s.pins or {}).get(name)
        if pin is not None and digest != pin:
            raise UserError(f"{name} in {s.archive} does not match its pinned SHA-256 ({digest[:12]}... instead of "
                            f"{pin[:12]}...): the download is damaged or the file changed upstream; nothing was "
                            "stored.")
        (out / name).write_bytes(data)
        stored.append({"name": name, "bytes": len(data), "sha256": digest,
                       "check": "sha256" if pin is not None else "format"})
    return stored


def _members(archive: Path, s: Source) -> dict[str, bytes]:
    """{stored name: bytes} of the archive's members that are wanted (the first of each name; macOS resource
    forks skipped)."""
    wanted: dict[str, bytes] = {}

    def take(path: str, read: Callable[[], bytes]) -> None:
        p = PurePosixPath(path)
        if "__MACOSX" in p.parts:
            return
        name = s.rename(p.name)
        if (name in s.files or NOTES.match(name)) and name not in wanted:
            wanted[name] = read()

    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                if not info.is_dir():
                    take(info.filename, lambda info=info: z.read(info))
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                if m.isfile():
                    take(m.name, lambda m=m: t.extractfile(m).read())
    else:
        head = archive.read_bytes()[:60]
        raise UserError(f"{s.archive} is neither a zip nor a tar archive (it starts with {head!r}); nothing was "
                        "stored.")
    return wanted

