"""SciFact (Wadden et al., EMNLP 2020) as BEIR ships it: scientific claims, and the abstracts that support or
refute them, for retrieval (5,183 abstracts; 809 train claims with 919 judgements, 300 test claims).

Stored in the data folder's `scifact/` in BEIR's layout: corpus.jsonl, queries.jsonl, qrels/train.tsv and, once
`python -m analysis data fetch scifact` has run, qrels/test.tsv (the development machine's copy has the train
claims only). The train claims are cut once, seeded, into a selection part (300 claims: every choice a method or a
trainer makes) and a report part (the other 509: numbers reported on claims no choice saw), as STS-B dev is
(`analysis.data.samples.dev_split`); the test claims are read only where they were fetched. Every split keeps the
whole corpus: the abstracts are the haystack.

    from analysis.data.scifact import claims, part
    claims("train")          # Beir: 809 claims, 5,183 abstracts
    part("report")           # Beir: 509 claims, the same abstracts
"""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

from analysis.core.errors import UserError
from analysis.core.paths import data_dir
from analysis.data.files import Beir, load_beir
from analysis.data.samples import fixed_split, subset

FOLDER = "scifact"  # under the data folder
SPLITS = ("train", "test")
FILES = ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv")  # what the train claims need
SELECTION_SIZE = 300  # of the 809 train claims (the size of BEIR's test split); the other 509 are reported on
SPLIT_SEED = 20261124  # fixed once, as samples.SPLIT_SEED: changing it would move claims between the parts


def folder() -> Path:
    return data_dir() / FOLDER


def present(split: str = "train") -> bool:
    """True when the files of `split`'s claims are in the data folder."""
    return all((folder() / f).is_file() for f in (*FILES[:2], f"qrels/{split}.tsv"))


def read(root: Path) -> list[Beir]:
    """Every split a folder holds (train always, test when its qrels are there): the format check of a fetch."""
    return [_named(load_beir(root, split), split) for split in SPLITS
            if split == "train" or (root / "qrels" / f"{split}.tsv").is_file()]


def claims(split: str = "train") -> Beir:
    """The claims of one split with the whole corpus, from the data folder (read once per process)."""
    if split not in SPLITS:
        raise UserError(f"Unknown SciFact split {split!r}: choose one of {', '.join(SPLITS)}.")
    if not present(split):
        raise UserError(f"SciFact {split} claims are not in {folder()}: run `python -m analysis data fetch scifact`.")
    return _read(str(folder()), split)


@functools.lru_cache(maxsize=2)
def _read(root: str, split: str) -> Beir:
    return _named(load_beir(root, split), split)


def _named(beir: Beir, split: str) -> Beir:
    return replace(beir, name=f"SciFact {split}")


def part(which: str) -> Beir:
    """The fixed selection part (300 train claims) or report part (509) of SciFact's train claims."""
    if which not in ("selection", "report"):
        raise UserError(f"Unknown SciFact part {which!r}: choose selection or report.")
    train = claims("train")
    chosen = fixed_split(len(train), None, SELECTION_SIZE, SPLIT_SEED)[0 if which == "selection" else 1]
    return subset(train, chosen, f"SciFact {which} ({len(chosen)} train claims, seed {SPLIT_SEED})")
