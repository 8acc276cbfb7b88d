"""Bringing published files onto this machine without trusting them: bounded downloads and bounded extraction.

A download or an archive is hostile until checked. So a download streams to a file with a running byte count and
stops at a limit (a declared Content-Length over it is refused before the first byte); an archive member is
streamed to its own file the same way, refused when its declared size or the bytes actually inflated pass the
limit the caller states (a small zip can inflate to gigabytes), and read by name, never extracted wholesale, so no
path inside it can write elsewhere. Every network and archive failure is one `UserError` sentence naming what went
wrong (HTTP status, a connection dropped mid-body, a redirect loop, a truncated or damaged archive), never a
traceback. `analysis.data.fetch` puts these together for the public data sets and removes what it staged.

    from analysis.data.download import download, extract, mirror_url
    size, digests = download("https://host/a.zip", staging / "a.zip", limit=64 << 20, hint="place it by hand")
    files = extract(staging / "a.zip", staging / "files", pick, limit=16 << 20, name="a.zip")
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import re
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from analysis.core.errors import UserError

TIMEOUT = 60  # seconds without a byte before giving up
CHUNK = 1 << 16
SCHEMES = ("http", "https", "file")
TOTAL_FACTOR = 4  # a gzip-compressed archive may inflate to at most this many times the per-member limit
ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error,
                  gzip.BadGzipFile, NotImplementedError)  # the last: a zip compression method Python lacks


def mirror_url(base: str) -> str:
    """A `--base-url` as a URL: http(s)/file URLs as given, a folder on this machine as its file:// URL (a local
    mirror of archives downloaded by hand); anything else is one sentence."""
    base = base.strip()
    scheme = urllib.parse.urlsplit(base).scheme.lower()
    if scheme in SCHEMES:
        return base.rstrip("/")
    folder = Path(base).expanduser()
    if len(scheme) <= 1 and folder.is_dir():  # no scheme, or a Windows drive letter
        return folder.resolve().as_uri()
    if len(scheme) > 1:
        raise UserError(f"--base-url {base!r} has the scheme {scheme}:, which cannot be fetched: give an http://, "
                        "https:// or file:// address, or a folder on this machine.")
    raise UserError(f"--base-url {base!r} is neither a URL nor a folder on this machine: give an http://, https:// "
                    "or file:// address, or the folder that holds the downloaded files.")


def download(url: str, dest: Path, *, limit: int, hint: str, name: str | None = None) -> tuple[int, dict[str, str]]:
    """Stream `url` into `dest`: (bytes, {"sha256": ..., "md5": ...}).

    Args:
        limit: the most bytes accepted (a larger file is not the one asked for).
        hint: the clause that tells a user what to do instead (no full stop), ending every failure's sentence.
        name: the file's name in messages (default: the URL's last part).
    """
    name = name or url.rstrip("/").rpartition("/")[2]
    sha, md5, size = hashlib.sha256(), hashlib.md5(usedforsecurity=False), 0
    resp = _open(url, name, hint)
    with resp, _writable(dest) as out:
        total = _declared_length(resp)
        if total is not None and total > limit:
            raise UserError(f"{url} announces {total:,} bytes, more than the {_mb(limit)} {name} can be, so it is "
                            "not the file asked for; nothing was stored.")
        while True:
            try:
                chunk = resp.read(CHUNK)
            except http.client.IncompleteRead as err:
                raise UserError(_dropped(name, url, size + len(err.partial), total, "the server closed early",
                                         hint)) from None
            except (http.client.HTTPException, OSError) as err:
                raise UserError(_dropped(name, url, size, total, _one_line(err) or type(err).__name__,
                                         hint)) from None
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise UserError(f"{url} sent more than the {_mb(limit)} {name} can be, so it is not the file asked "
                                "for; nothing was stored.")
            sha.update(chunk)
            md5.update(chunk)
            try:
                out.write(chunk)
            except OSError as err:
                raise UserError(_unwritable(dest, err)) from None
    if total is not None and size < total:  # a server that closes early without an error
        raise UserError(_dropped(name, url, size, total, "the server closed early", hint))
    return size, {"sha256": sha.hexdigest(), "md5": md5.hexdigest()}


def _open(url: str, name: str, hint: str):
    """The response to a GET of `url`; every failure before the body is one sentence."""
    request = urllib.request.Request(url, headers={"User-Agent": "embedscope (python urllib)"})
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT)
    except urllib.error.HTTPError as err:
        err.close()
        if 300 <= err.code < 400:  # urllib gives up after 10 redirects, or at once on a redirect back to itself
            raise UserError(f"{url} redirects in a loop (HTTP {err.code}), so the address or the server is wrong: "
                            f"{hint}.") from None
        raise UserError(f"{url} answered HTTP {err.code} ({_one_line(err.reason)}): {hint}.") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as err:
        reason = _one_line(getattr(err, "reason", None) or err) or type(err).__name__
        if url.startswith("file:"):
            raise UserError(f"The local mirror has no readable {name} ({reason}): {hint}.") from None
        raise UserError(f"Could not download {url} ({reason}), so this machine may be offline: {hint}.") from None


def _writable(dest: Path):
    try:
        return open(dest, "wb")
    except OSError as err:
        raise UserError(_unwritable(dest, err)) from None


def _unwritable(dest: Path, err: OSError) -> str:
    return (f"Could not write {dest} ({_one_line(err.strerror or err)}): free some space or set EMBEDSCOPE_DATA to "
            "another folder.")


def _dropped(name: str, url: str, got: int, total: int | None, reason: str, hint: str) -> str:
    of = f" of {total:,}" if total is not None else ""
    return (f"The connection dropped while downloading {name} from {url} ({got:,}{of} bytes arrived; {reason}): "
            f"try again, or {hint}.")


def _declared_length(resp) -> int | None:
    value = resp.headers.get("Content-Length") if getattr(resp, "headers", None) is not None else None
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def extract(archive: Path, out: Path, pick: Callable[[PurePosixPath], str | None], *, limit: int,
            name: str) -> dict[str, dict]:
    """Stream the members `pick` wants from a zip or tar archive into `out`: {stored name: {"bytes", "sha256"}}.

    `pick(member path)` gives the name to store a member under (it may contain a sub-folder, "qrels/test.tsv") or
    None to skip it; the first member of each stored name wins. Any member, wanted or not, whose declared size
    passes `limit` refuses the archive before it is inflated; a wanted member is also counted as it inflates. A
    gzip-compressed archive is first read through once (at most TOTAL_FACTOR x `limit` inflated), so a damaged or
    truncated stream is found by gzip's own check rather than read as an archive that ends early. macOS resource
    forks (`__MACOSX/`) are skipped. `name` is the archive's name in messages.
    """
    out.mkdir(parents=True, exist_ok=True)
    stored: dict[str, dict] = {}
    try:
        with open(archive, "rb") as fh:
            if fh.read(2) == b"\x1f\x8b":
                _check_gzip(archive, TOTAL_FACTOR * limit, name)
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                infos = [i for i in z.infolist() if not i.is_dir()]
                for info in infos:
                    _check_declared(info.filename, info.file_size, limit, name)
                for info in infos:
                    target = _wanted(info.filename, pick, stored)
                    if target is not None:
                        with z.open(info) as src:
                            stored[target] = _copy(src, out / target, limit, info.filename, name)
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive, "r|*") as t:  # a stream: members are read in order, never all at once
                for member in t:
                    if not member.isfile():
                        continue
                    _check_declared(member.name, member.size, limit, name)
                    target = _wanted(member.name, pick, stored)
                    if target is not None:
                        stored[target] = _copy(t.extractfile(member), out / target, limit, member.name, name)
        else:
            with open(archive, "rb") as fh:
                head = fh.read(4)
            if head.startswith((b"PK", b"\x1f\x8b")):
                raise UserError(f"{name} is a damaged or truncated archive (it cannot be opened): download it again; "
                                "nothing was stored.")
            raise UserError(f"{name} is neither a zip nor a tar archive (it starts with {head!r}), so the server "
                            "sent something else (an error page?); nothing was stored.")
    except ARCHIVE_ERRORS as err:
        raise UserError(f"{name} is damaged or truncated ({_one_line(err) or type(err).__name__}): download it "
                        "again; nothing was stored.") from None
    return stored


def _check_gzip(archive: Path, limit: int, name: str) -> None:
    """Inflate a gzip file to nowhere, counting: gzip checks its CRC and length at the end of the stream."""
    size = 0
    with gzip.open(archive, "rb") as gz:
        while chunk := gz.read(CHUNK):
            size += len(chunk)
            if size > limit:
                raise UserError(f"{name} inflates past {_mb(limit)}, more than this data set can hold, so it is not "
                                "the archive asked for; nothing was stored.")


def _wanted(path: str, pick, stored: dict) -> str | None:
    p = PurePosixPath(path)
    if "__MACOSX" in p.parts:
        return None
    target = pick(p)
    if target is None or target in stored:
        return None
    if PurePosixPath(target).is_absolute() or ".." in PurePosixPath(target).parts:
        raise ValueError(f"pick() gave the unsafe stored name {target!r}")  # a bug in a registry entry, not input
    return target


def _check_declared(member: str, size: int, limit: int, name: str) -> None:
    if size > limit:
        raise UserError(f"{member} in {name} declares {size:,} bytes, more than the {_mb(limit)} this data set's "
                        "files can be, so the archive is not the one asked for; nothing was stored.")


def _copy(src, dest: Path, limit: int, member: str, name: str) -> dict:
    """Copy a member's stream to `dest` with a running count: {"bytes", "sha256"}; refused past `limit`."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    sha, size = hashlib.sha256(), 0
    with open(dest, "wb") as out:
        while chunk := src.read(CHUNK):
            size += len(chunk)
            if size > limit:
                raise UserError(f"{member} in {name} inflates past the {_mb(limit)} this data set's files can be, "
                                "so the archive is not the one asked for; nothing was stored.")
            sha.update(chunk)
            out.write(chunk)
    return {"bytes": size, "sha256": sha.hexdigest()}


def _one_line(value) -> str:
    """A reason as one line: urllib's redirect error and some OS errors carry newlines."""
    return re.sub(r"\s+", " ", str(value)).strip().rstrip(".")


def _mb(n: int) -> str:
    return f"{n / (1 << 20):g} MB"
