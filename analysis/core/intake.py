"""What one request takes in, held to the per-request budgets (`analysis.core.budgets`) before any work.

A file a user names is read only up to the byte budget (`upload_bytes`, the same limit as an upload box): the
first byte past it ends the reading with one sentence, so a named pipe or a file of gigabytes costs what the budget
allows and no more. A device (/dev/zero, /dev/urandom, a terminal) is refused before a byte is read: it never
ends, so not even --no-budgets may read it. What a request then embeds is counted before any model
loads: its number of texts and its characters (`check_sizes`), so 100,000 one-character lines are one sentence,
not minutes of work.

    raw = read_bytes("texts.txt")                 # bytes, at most the budget
    for line in read_lines("items.jsonl"): ...    # lazily: a caller that stops after N lines reads only those
    check_sizes(texts, "texts.txt")               # number of texts, characters per text and in all
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterator

from analysis.core import budgets
from analysis.core.errors import UserError

CHUNK = 1 << 20  # read in 1 MiB pieces: a lifted budget (2**62) must never become one allocation of that size


def read_bytes(path) -> bytes:
    """The content of the file at `path`, refused with one sentence at the first byte past the byte budget.
    OSErrors (missing file, a folder, no permission) pass through for the caller to word."""
    cap = budgets.limit("upload_bytes")
    chunks, size = [], 0
    with open(path, "rb") as fh:
        _not_a_device(fh, path)
        while size <= cap:
            chunk = fh.read(min(CHUNK, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    if size > cap:
        raise too_big(path, cap)
    return b"".join(chunks)


def read_lines(path) -> Iterator[bytes]:
    """The file's lines (with their line ends), read one at a time; refused once the lines read so far pass the
    byte budget, a single line included (a file without line ends is not read whole first)."""
    cap = budgets.limit("upload_bytes")
    size = 0
    with open(path, "rb") as fh:
        _not_a_device(fh, path)
        while True:
            line = fh.readline(cap + 1 - size)  # never longer than what the budget has left, plus the byte that tells
            if not line:
                return
            size += len(line)
            if size > cap:
                raise too_big(path, cap)
            yield line


def _not_a_device(fh, path) -> None:
    mode = os.fstat(fh.fileno()).st_mode
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise UserError(f"{Path(path).name} is a device, not a file: give a file to read.")


def too_big(path, cap: int) -> UserError:
    return UserError(f"Too much for one request: {Path(path).name} holds more than {cap:,} bytes, and at most {cap:,} "
                     "are read from one file (the command line can go further with --no-budgets).")


def check_sizes(texts: list[str], name: str = "these texts") -> None:
    """A request's texts against the budgets: how many, characters per text and characters in all."""
    budgets.check("texts", len(texts), f"the number of texts in {name}")
    check_chars(texts, name)


def check_chars(texts: list[str], name: str = "these texts") -> None:
    """Characters per text and of all texts together (a pair set's sentences: their number is the pairs budget's)."""
    cap = budgets.limit("chars_per_text")
    for i, t in enumerate(texts):
        if len(t) > cap:
            raise UserError(f"Text {i + 1} of {name} has {len(t):,} characters; this tool accepts at most {cap:,} "
                            "per text (far more than the model reads). Shorten it or split it.")
    budgets.check("total_chars", sum(map(len, texts)), f"the characters of all texts in {name}")
