"""Banking77 (Casanueva et al., 2020): 13,083 online-banking queries, each labelled with one of 77 intents; PolyAI's
train.csv (10,003) and test.csv (3,080), `text,category`, for classification and clustering.

Stored in the data folder's `banking77/` as PolyAI publishes the files (train.csv, test.csv, categories.json,
LICENSE; the development machine's copy has train only). The train queries are cut once, seeded and stratified by
intent, into a selection part (2,000: every choice) and a report part (the other 8,003: numbers reported on
queries no choice saw), as STS-B dev is; the test queries are read only where they were fetched.

    from analysis.data.banking77 import queries, part
    queries("train")         # Texts: 10,003 queries labelled by intent
    part("report")           # Texts: 8,003 of them, every intent in its share
"""

from __future__ import annotations

import csv
import functools
import io
from pathlib import Path

from analysis.core.errors import UserError
from analysis.core.paths import data_dir
from analysis.data.corpora import Texts
from analysis.data.samples import fixed_split, subset

FOLDER = "banking77"  # under the data folder
SPLITS = ("train", "test")
COLUMNS = ["text", "category"]
SELECTION_SIZE = 2000  # of the 10,003 train queries (20%, about 26 per intent); the other 8,003 are reported on
SPLIT_SEED = 20261124  # fixed once, as samples.SPLIT_SEED


def folder() -> Path:
    return data_dir() / FOLDER


def present(split: str = "train") -> bool:
    return (folder() / f"{split}.csv").is_file()


def read_csv(path: Path, name: str) -> Texts:
    """A PolyAI Banking77 file: a `text,category` header, then one quoted CSV row per query."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"Cannot read {path} as UTF-8 text ({err}).") from None
    rows = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(rows, None)
        if header != COLUMNS:
            raise UserError(f"{Path(path).name} is not a Banking77 file: its header is {header}, not text,category.")
        texts, labels = [], []
        for fields in rows:
            if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
                raise UserError(f"{Path(path).name}, line {rows.line_num}: expected a query and its intent.")
            texts.append(fields[0].strip())
            labels.append(fields[1].strip())
    except csv.Error as err:
        raise UserError(f"{Path(path).name}, line {rows.line_num}: not valid CSV ({err}).") from None
    if not texts:
        raise UserError(f"{Path(path).name} has no queries.")
    return Texts(name, texts, labels)


def read(root: Path) -> list[Texts]:
    """Every split a folder holds (train always, test when there): the format check of a fetch."""
    return [read_csv(root / f"{s}.csv", f"Banking77 {s}") for s in SPLITS
            if s == "train" or (root / f"{s}.csv").is_file()]


def queries(split: str = "train") -> Texts:
    """The queries of one split, from the data folder (read once per process)."""
    if split not in SPLITS:
        raise UserError(f"Unknown Banking77 split {split!r}: choose one of {', '.join(SPLITS)}.")
    if not present(split):
        raise UserError(f"Banking77 {split} is not in {folder()}: run `python -m analysis data fetch banking77`.")
    return _read(str(folder() / f"{split}.csv"), split)


@functools.lru_cache(maxsize=2)
def _read(path: str, split: str) -> Texts:
    return read_csv(Path(path), f"Banking77 {split}")


def part(which: str) -> Texts:
    """The fixed selection part (2,000 train queries, stratified by intent) or report part (8,003) of train."""
    if which not in ("selection", "report"):
        raise UserError(f"Unknown Banking77 part {which!r}: choose selection or report.")
    train = queries("train")
    chosen = fixed_split(len(train), train.labels, SELECTION_SIZE, SPLIT_SEED)[0 if which == "selection" else 1]
    return subset(train, chosen, f"Banking77 {which} ({len(chosen)} train queries, seed {SPLIT_SEED})")
