"""The one registry of built-in data sets: id (command line), label (menus), kind, loader. The command line, every
page and the benchmark list and load data sets through it, and `texts_of` / `pairs_of` also read user files.

Kinds: "texts" (a corpus), "labelled" (texts with labels: a classification probe, or MTEB's classification and
clustering for Banking77), "pairs" (similarity pairs with gold scores: STS), "retrieval" (queries, a corpus and
relevance judgements in BEIR's layout: SciFact, or a BEIR folder), "qa" (context-compression questions:
`analysis.data.personas.QA` items; read as texts they are their paragraphs, labelled by fact key). Every kind can be
read as texts: pairs give their distinct sentences in order of appearance, a retrieval set its documents. `tasks`
names the task families (`analysis.eval.tasks`) a set is scored on, the first being its default.

The public sets whose test split this project never selects on are cut once into a selection part and a report part
(STS-B dev, SciFact's and Banking77's train splits: `-select`/`-selection` and `-report` ids); their test splits are
registered where MTEB reports on them (SciFact, Banking77) and present only once fetched.

    from analysis.data.datasets import available, texts_of
    [d.id for d in available()]             # ['demo-sentences', 'ambiguous', 'polarity', 'lee', 'demo', ...]
    texts = texts_of("stsb-dev")            # 2,910 distinct STS-B dev sentences, labelled by genre
    texts = texts_of("notes.csv")           # a user file: .txt, .csv/.tsv with `text`, or pairs
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from analysis.core.errors import UserError
from analysis.data import banking77, corpora, fetch, personas, scifact
from analysis.data.corpora import Pairs, Texts
from analysis.data.files import read_sts, read_texts
from analysis.data.samples import dev_split

KINDS = ("texts", "labelled", "pairs", "retrieval", "qa")
DEFAULT_TASKS = {"pairs": ("sts",), "labelled": ("probe",), "retrieval": ("retrieval",)}  # kind -> task families


@dataclass(frozen=True)
class Dataset:
    id: str  # command-line name
    label: str  # menu name
    kind: str  # one of KINDS
    loader: Callable[[], Texts | Pairs]
    short: str  # column name in benchmark tables
    texts_label: str | None = None  # menu name of its texts in text pickers (None: not offered there)
    present: Callable[[], bool] = lambda: True  # False when its files are not on this machine
    fetch_name: str | None = None  # its `python -m analysis data fetch` name, when downloaded into the data folder
    origin: str = "built in"  # where it comes from, when it is not fetched
    families: tuple[str, ...] | None = None  # task families it is scored on (None: its kind's DEFAULT_TASKS)
    train_split: str | None = None  # a test split: the id of the train split a classifier learns from (MTEB's)

    @property
    def tasks(self) -> tuple[str, ...]:
        """The task families (`analysis.eval.tasks` kinds) this set can be scored on; the first is its default."""
        return self.families if self.families is not None else DEFAULT_TASKS.get(self.kind, ())

    def how_to_get(self) -> str:
        return fetch.how_to_get(self.fetch_name) if self.fetch_name else self.origin

    def missing(self) -> str:
        """One sentence for a page or a command that needs this set and does not find it."""
        return f"{self.label} is not on this machine: {self.how_to_get()}."

    def load(self) -> Texts | Pairs:
        if not self.present():
            raise UserError(self.missing())
        return self.loader()

    def texts(self) -> Texts:
        """Its texts: a corpus as it is, pairs as their distinct sentences (labelled by genre when known)."""
        data = self.load()
        if self.kind == "qa":
            return Texts(self.label, [" ".join(q.context) for q in data], [q.key for q in data])
        if self.kind == "retrieval":
            return Texts(f"{self.label}: documents", list(data.corpus.values()))
        return corpora.pair_texts(data, self.texts_label or self.label) if isinstance(data, Pairs) else data


@functools.lru_cache(maxsize=8)
def _read_stsb(path: str, name: str) -> Pairs:
    return read_sts(path, name=name)


def stsb_pairs(split: str) -> Pairs:
    """STS-B pairs of one split from the shared data folder (cached); a UserError when it is not there."""
    path = corpora.shared_stsb(split)
    if path is None:
        raise UserError(get(f"stsb-{split}").missing())
    return _read_stsb(str(path), f"STS-B {split}")


def _stsb(split: str) -> Dataset:
    return Dataset(f"stsb-{split}", f"STS-B {split}", "pairs", functools.partial(stsb_pairs, split),
                   f"STS-B {split}", f"STS-B {split} sentences" if split == "dev" else None,
                   lambda: corpora.shared_stsb(split) is not None, fetch_name="stsb")


def stsb_dev_part(part: str) -> Pairs:
    """The fixed selection (300) or report (1,200) part of STS-B dev (`samples.dev_split`): trainers select on the
    first, every held-out number is reported on the second."""
    selection, report = dev_split(stsb_pairs("dev"))
    return selection if part == "selection" else report


def _stsb_part(part: str, size: str) -> Dataset:
    return Dataset(f"stsb-dev-{part}", f"STS-B dev, {part} part ({size})", "pairs",
                   functools.partial(stsb_dev_part, part), f"STS-B dev {part}", None,
                   lambda: corpora.shared_stsb("dev") is not None, fetch_name="stsb")


def _fetched(name: str, label: str, short: str) -> Dataset:
    """A pair set that `python -m analysis data fetch NAME` stores in the data folder."""
    return Dataset(name, label, "pairs", functools.partial(fetch.pairs, name), short,
                   present=functools.partial(fetch.present, name), fetch_name=name)


def _scifact(id_: str, label: str, loader, short: str, split: str = "train") -> Dataset:
    return Dataset(id_, label, "retrieval", loader, short, present=functools.partial(scifact.present, split),
                   fetch_name="scifact")


def _banking77(id_: str, label: str, loader, short: str, split: str = "train") -> Dataset:
    return Dataset(id_, label, "labelled", loader, short, present=functools.partial(banking77.present, split),
                   fetch_name="banking77", families=("classification", "clustering"),
                   train_split="banking77" if split == "test" else None)


GENSIM = "gensim's bundled test data (pip install gensim)"


REGISTRY: tuple[Dataset, ...] = (  # menu order
    Dataset("demo-sentences", "Demo sentences", "texts", functools.partial(corpora.demo_texts, "all"),
            "Demo sentences", "Demo sentences"),
    Dataset("ambiguous", "Demo: ambiguous words", "texts", functools.partial(corpora.demo_texts, "ambiguous"),
            "Ambiguous", "Demo: ambiguous words"),
    Dataset("polarity", "Polarity sentences", "labelled", corpora.polarity, "Polarity", "Polarity sentences",
            origin=GENSIM),
    Dataset("lee", "Lee corpus (human ratings)", "pairs", corpora.lee_pairs, "Lee", "Lee corpus documents",
            origin=GENSIM),
    Dataset("demo", "Demo paraphrase pairs", "pairs", corpora.demo_pairs, "Demo pairs"),
    _stsb("dev"),
    _stsb_part("report", "1,200 pairs never used for selection"),
    _stsb_part("selection", "300 pairs trainers select on"),
    _stsb("train"),
    _fetched("sick", "SICK-R test", "SICK-R"),
    *(_fetched(f"sts{year}", f"STS{year}", f"STS{year}") for year in fetch.SEMEVAL),
    _scifact("scifact-report", "SciFact, report part (509 train claims never used for selection)",
             functools.partial(scifact.part, "report"), "SciFact report"),
    _scifact("scifact-select", "SciFact, selection part (300 train claims)",
             functools.partial(scifact.part, "selection"), "SciFact select"),
    _scifact("scifact", "SciFact train claims (809)", functools.partial(scifact.claims, "train"), "SciFact train"),
    _scifact("scifact-test", "SciFact test claims (300, BEIR's test split)", functools.partial(scifact.claims, "test"),
             "SciFact test", split="test"),
    _banking77("banking77-report", "Banking77, report part (8,003 train queries never used for selection)",
               functools.partial(banking77.part, "report"), "Banking77 report"),
    _banking77("banking77-select", "Banking77, selection part (2,000 train queries)",
               functools.partial(banking77.part, "selection"), "Banking77 select"),
    _banking77("banking77", "Banking77 train (10,003 queries, 77 intents)",
               functools.partial(banking77.queries, "train"), "Banking77 train"),
    _banking77("banking77-test", "Banking77 test (3,080 queries, MTEB's test split)",
               functools.partial(banking77.queries, "test"), "Banking77 test", split="test"),
    Dataset("topics", "Demo: topics", "labelled", functools.partial(corpora.demo_texts, "topics"), "Topics"),
    Dataset("personas", "Personas: held-out questions", "qa", lambda: _personas("heldout"), "Personas",
            origin="generated (seeded)"),
    Dataset("personas-validation", "Personas: validation questions", "qa", lambda: _personas("validation"),
            "Personas val", origin="generated (seeded)"),
)


def _personas(split: str) -> list:
    """200 seeded context-compression questions (40 per fact key) about people of one split."""
    return personas.generate(split, 200)
_BY_ID = {d.id: d for d in REGISTRY}


def available(kind: str | None = None) -> list[Dataset]:
    """The data sets present on this machine, in registry order; only one kind when given."""
    return [d for d in REGISTRY if (kind is None or d.kind == kind) and d.present()]


def get(dataset_id: str) -> Dataset:
    if dataset_id not in _BY_ID:
        raise UserError(f"Unknown data set {dataset_id!r}: use one of {', '.join(_BY_ID)}, or a file.")
    return _BY_ID[dataset_id]


def ids(kind: str | None = None) -> list[str]:
    return [d.id for d in REGISTRY if kind is None or d.kind == kind]


def text_menu() -> dict[str, Callable[[], Texts]]:
    """Menu name -> loader of the texts, for every present data set that text pickers offer."""
    return {d.texts_label: d.texts for d in available() if d.texts_label}


def pair_menu() -> dict[str, Callable[[], Pairs]]:
    """Menu name -> loader, for every present pair set."""
    return {d.label: d.load for d in available("pairs")}


def texts_of(spec: str, limit: int | None = None) -> Texts:
    """Texts from a built-in id or a file of any readable format (`analysis.data.files.read_texts`)."""
    if limit is not None and limit < 1:
        raise UserError(f"The limit must be a positive number of texts, got {limit}.")
    if spec in _BY_ID:
        texts = get(spec).texts()
        return texts if limit is None else texts.head(limit)
    return read_texts(_existing(spec), limit=limit)


def pairs_of(spec: str, limit: int | None = None) -> Pairs:
    """Similarity pairs from a built-in pair set's id or an STS file (STS-B format, or sentence1, sentence2, score)."""
    if limit is not None and limit < 1:
        raise UserError(f"The limit must be a positive number of pairs, got {limit}.")
    if spec in _BY_ID:
        d = get(spec)
        if d.kind != "pairs":
            raise UserError(f"{spec} is not a set of similarity pairs: use one of {', '.join(ids('pairs'))} or an "
                            "STS file.")
        pairs = d.load()
        return pairs if limit is None else pairs.head(limit)
    return read_sts(_existing(spec), limit=limit)


def _existing(spec: str) -> Path:
    path = Path(spec).expanduser()
    if not path.exists() and not path.suffix:
        raise UserError(f"Unknown data set {spec!r}: use one of {', '.join(_BY_ID)}, or a file.")
    return path
