"""Long-document retrieval sets generated here, after LongEmbed's synthetic tasks (Zhu et al., 2024): for each
document length, documents of that many tokens of the model's own tokenizer, each hiding one fact, and one query
per document that only that fact answers. Scoring (`analysis.eval.longdoc`) ranks every document of a length for
each query and reports nDCG@1 per length, as LongEmbed does.

Three kinds, all deterministic from a seed; every name, key, fact and filler sentence is written for this project
(none of LongEmbed's texts):

* passkey: a haystack of plain filler prose with one sentence "The pass key of <name> is <key>. Remember it. ..."
  at a random depth; the query asks for that person's pass key.
* needle: the same haystack with one invented fact about an invented town ("The ferry from Ostmere leaves at seven
  o'clock ..."); the query asks the question the fact answers.
* scifact: real text. Each document is several SciFact abstracts (the report part's claims, never used for
  selection) with the one relevant to its claim at a random position among abstracts no train claim judges; the
  query is the claim. Its lengths start at 1,024 tokens (an abstract alone is 200-500), and only claims with exactly
  one relevant abstract of at most 512 tokens are used.

The needles (names, keys, facts, claims) are drawn once and hidden in a fresh haystack at every length, so the curve
over lengths compares like with like. A document is at most its length in tokens (no special tokens): filler pieces
are added by an estimate, dropped from the end until the text fits, then topped up with pieces that still fit (a
few tries), so it falls short by less than one piece (a filler sentence; for SciFact, usually less than an
abstract); each document's measured length is kept. Lengths above the model's limit are dropped (8,192 only where
the model reads 8,192 tokens); a method's own template tokens come on top, and a model truncates what passes its
limit, as in LongEmbed.

    docs = generate("passkey", backbone.tokenizer, max_length=backbone.facts.max_length, n=50, seed=0)
    docs.sets[4096]          # Beir: 50 documents of ~4,096 tokens, 50 queries, one relevant document each
    docs.tokens[4096][:3]    # [4093, 4090, 4095]: measured with the tokenizer

Cost of generating: tokenizing the documents a few times each (50 per length to 8,192 tokens: about 10 s with
SmolLM2's tokenizer on this project's machine; SciFact also tokenizes the report part's abstracts once). Cost of
scoring: embedding n documents per length, about n x 7,900 tokens up to 4,096 and n x 16,100 with 8,192 (50 per
length: 0.4 and 0.8 M tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.core.errors import UserError
from analysis.data import scifact
from analysis.data.files import Beir

KINDS = ("passkey", "needle", "scifact")
LENGTHS = (256, 512, 1024, 2048, 4096, 8192)  # LongEmbed's document lengths for passkey and needle
SCIFACT_LENGTHS = (1024, 2048, 4096, 8192)  # several abstracts per document
SCIFACT_ABSTRACT_MAX = 512  # the relevant abstract's tokens: at least half of the shortest document is other text
N_PER_LENGTH = 50  # documents (and queries) per length
TOP_UP_TRIES = 20  # random pieces tried at the end of a trimmed document, kept when they still fit
BATCH = 64  # filler pieces drawn and counted at a time

# ---- filler prose: plain sentences about a village, combined at random (about 12 tokens each) --------------------
SUBJECTS = ("The old miller", "A tired carpenter", "The youngest weaver", "A travelling tinsmith", "The schoolteacher",
            "Two fishermen", "The baker's apprentice", "A shepherd from the hills", "The ferryman's daughter",
            "Her grandmother", "The village clerk", "A group of children", "The innkeeper", "Our neighbour",
            "The night watchman", "A quiet potter", "The choir", "The stable boy", "An elderly beekeeper",
            "The postman")
ACTIONS = ("carried a basket of apples", "mended the fence", "counted the sacks of flour", "sang an old song",
           "swept the yard", "painted the gate", "read a letter aloud", "fed the hens", "sharpened a set of knives",
           "repaired a broken wheel", "planted a row of beans", "folded the linen", "lit the stove",
           "tied up the boat", "wrote a short note", "polished the brass handles", "stacked the firewood",
           "washed the windows", "tuned a fiddle", "hung the nets to dry")
WHERE = ("near the mill", "by the river", "behind the church", "in the market square", "on the hill road",
         "at the edge of the wood", "beside the well", "under the old bridge", "in the orchard", "outside the bakery")
WHEN = ("before dawn", "in the afternoon", "after the rain", "on a cold morning", "late in the evening",
        "during the fair", "at noon", "while the bells rang", "as the fog lifted", "on the first day of spring")
ASIDES = ("Nobody paid much attention.", "It was an ordinary day.", "The wind turned to the west.",
          "A dog barked somewhere down the lane.", "Smoke rose from the chimneys.", "The clouds were low and grey.")

# ---- needles ---------------------------------------------------------------------------------------------------
FIRST = ("Anselm", "Brisa", "Cato", "Delphine", "Emrys", "Fenna", "Gideon", "Halina", "Ivo", "Juno", "Kasimir",
         "Liesel", "Marius", "Nerys", "Osric", "Perpetua", "Quill", "Rosalind", "Soren", "Tamsin", "Ulric", "Vesna",
         "Wendel", "Xanthe", "Yorick", "Zelda")
FAMILY = ("Ashgrove", "Brindle", "Carrow", "Dunmore", "Elwick", "Farrant", "Galloway", "Hesketh", "Inchbald",
          "Jessop", "Kilbride", "Lattimer", "Marchbank", "Northcote", "Oakshott", "Pennock", "Quarrie", "Redfern",
          "Stallard", "Thackeray", "Upcott", "Verity", "Whitlock", "Yardley")
PLACE_HEAD = ("Bram", "Ost", "Kel", "Var", "Dun", "Mer", "Thal", "Wen", "Cor", "Ash", "Fen", "Lor", "Hal", "Pem", "Ril",
              "Sund", "Tor", "Gale")
PLACE_TAIL = ("wick", "mere", "ford", "holt", "stead", "by", "moor", "haven", "dale", "thorpe")
COLOURS = ("green", "orange", "violet", "yellow", "pale blue", "crimson", "silver", "white")
HOURS = ("five", "six", "seven", "eight", "nine", "ten", "eleven")
LENDS = ("fishing rods", "umbrellas", "garden tools", "board games", "telescopes", "kites", "sewing machines")
FACTS = (  # (the fact hidden in a document, the question it answers)
    ("The lighthouse keeper of {place} keeps {count} goats on the cliff above the harbour.",
     "How many goats does the lighthouse keeper of {place} keep?"),
    ("Every year the lantern race in {place} is won by a baker called {name}.",
     "Who wins the lantern race in {place} every year?"),
    ("In {place} the town clock is painted {colour} each spring.", "What colour is the town clock of {place} painted?"),
    ("The ferry from {place} leaves at {hour} o'clock and carries only bicycles.",
     "At what time does the ferry from {place} leave?"),
    ("On Sundays the library of {place} lends {lends} instead of books.",
     "What does the library of {place} lend on Sundays?"),
)


@dataclass(frozen=True)
class LongDocs:
    """One generated long-document set: a retrieval set per document length, and each document's token count."""

    name: str
    kind: str  # one of KINDS
    sets: dict[int, Beir]  # length -> documents of that length, their queries and judgements
    tokens: dict[int, list[int]]  # length -> each document's measured tokens, in the set's document order
    seed: int

    def n_texts(self) -> int:
        return sum(len(b.queries) + len(b.corpus) for b in self.sets.values())

    def n_items(self) -> int:
        return sum(len(b.queries) for b in self.sets.values())

    def content(self) -> list:
        return [[length, b.corpus, b.queries, b.qrels] for length, b in sorted(self.sets.items())]


def lengths_for(kind: str, max_length: int, lengths=None) -> list[int]:
    """The document lengths of `kind` a model reading `max_length` tokens is scored on."""
    wanted = lengths or (SCIFACT_LENGTHS if kind == "scifact" else LENGTHS)
    kept = [n for n in wanted if n <= max_length]
    if not kept:
        raise UserError(f"The model reads at most {max_length} tokens, shorter than every {kind} document length "
                        f"({', '.join(map(str, wanted))}).")
    return kept


def generate(kind: str, tokenizer, *, max_length: int, lengths=None, n: int = N_PER_LENGTH,
             seed: int = 0) -> LongDocs:
    """A long-document set of `kind` for this tokenizer: `n` documents and queries per length (see the module)."""
    if kind not in KINDS:
        raise UserError(f"Unknown long-document task {kind!r}: use one of {', '.join(KINDS)}.")
    if n < 2:
        raise UserError(f"A long-document task needs at least 2 documents per length (one to find among others), "
                        f"got {n}.")
    count = _Tokens(tokenizer)
    rng = np.random.default_rng(seed)
    chosen = lengths_for(kind, max_length, lengths)
    if kind == "scifact":
        needles, queries, blocks = _scifact_needles(count, n, rng)
    else:
        needles, queries = (_passkeys if kind == "passkey" else _facts)(n, rng)
        blocks = None
    sets, tokens = {}, {}
    for length in chosen:
        docs, sizes = [], []
        for needle in needles:
            text, size = _around(needle, length, count, rng, blocks)
            docs.append(text)
            sizes.append(size)
        ids = [f"{length}-{i:03d}" for i in range(n)]
        sets[length] = Beir(f"{kind} {length}", dict(zip(ids, docs)),
                            {f"q{length}-{i:03d}": q for i, q in enumerate(queries)},
                            {f"q{length}-{i:03d}": {d: 1} for i, d in enumerate(ids)})
        tokens[length] = sizes
    label = {"passkey": "Passkey", "needle": "Needle", "scifact": "SciFact abstracts"}[kind]
    return LongDocs(f"Long documents: {label} ({n} per length, seed {seed})", kind, sets, tokens, seed)


class _Tokens:
    """Token counts as the model reads a text (no special tokens, silently past the tokenizer's limit): one text
    exactly, or many at once (one batched call, remembered: filler pieces recur across documents)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.known: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

    def many(self, texts: list[str]) -> list[int]:
        new = [t for t in dict.fromkeys(texts) if t not in self.known]
        if new:
            ids = self.tokenizer(new, add_special_tokens=False, verbose=False)["input_ids"]
            self.known.update(zip(new, map(len, ids)))
        return [self.known[t] for t in texts]


def _passkeys(n: int, rng) -> tuple[list[str], list[str]]:
    people = [f"{a} {b}" for a in FIRST for b in FAMILY]
    if n > len(people):
        raise UserError(f"At most {len(people)} passkey documents per length can be told apart, asked for {n}.")
    names = [people[i] for i in rng.choice(len(people), n, replace=False)]
    keys = rng.choice(np.arange(10_000, 100_000), n, replace=False)
    return ([f"The pass key of {name} is {key}. Remember it. {key} is the pass key of {name}."
             for name, key in zip(names, keys)], [f"What is the pass key of {name}?" for name in names])


def _facts(n: int, rng) -> tuple[list[str], list[str]]:
    places = [h + t for h in PLACE_HEAD for t in PLACE_TAIL]
    if n > len(places):
        raise UserError(f"At most {len(places)} needle documents per length can be told apart, asked for {n}.")
    needles, questions = [], []
    for place in (places[i] for i in rng.choice(len(places), n, replace=False)):
        fact, question = FACTS[rng.integers(len(FACTS))]
        slots = {"place": place, "count": int(rng.integers(3, 40)), "name": f"{_pick(FIRST, rng)} {_pick(FAMILY, rng)}",
                 "colour": _pick(COLOURS, rng), "hour": _pick(HOURS, rng), "lends": _pick(LENDS, rng)}
        needles.append(fact.format(**slots))
        questions.append(question.format(**slots))
    return needles, questions


def _pick(options, rng):
    return options[rng.integers(len(options))]


def _filler(rng) -> str:
    if rng.random() < 0.1:
        return _pick(ASIDES, rng)
    return f"{_pick(SUBJECTS, rng)} {_pick(ACTIONS, rng)} {_pick(WHERE, rng)} {_pick(WHEN, rng)}."


def _around(needle: str, length: int, count: _Tokens, rng, blocks) -> tuple[str, int]:
    """(text, tokens): `needle` at a random position among filler pieces (sentences, or SciFact abstracts from
    `blocks`), as many as fit in `length` tokens (see the module). Pieces are drawn and counted a batch at a time; a
    piece's count with its separator is taken as what it adds (exact for byte-level BPE, close for others), and the
    text is counted exactly before it is kept, a piece dropped from the end while it is too long."""
    sep = " " if blocks is None else "\n\n"
    pieces, sizes, estimate = [], [], count(needle)
    if estimate > length:
        raise UserError(f"A needle of {estimate} tokens does not fit in a document of {length}: choose longer "
                        "documents.")
    while estimate <= length:
        batch = _draw(rng, blocks, BATCH)
        for piece, n in zip(batch, count.many([sep + p for p in batch])):
            if estimate > length:
                break
            if blocks is None or (piece not in pieces and piece != needle):  # an abstract appears once per document
                pieces.append(piece)
                sizes.append(n)
                estimate += n
    estimate -= sizes.pop()  # the piece that went past the length
    pieces.pop()
    extra = [p for p in _draw(rng, blocks, TOP_UP_TRIES) if blocks is None or p not in pieces and p != needle]
    for piece, n in zip(extra, count.many([sep + p for p in extra])):  # top up with pieces that still fit
        if estimate + n <= length:
            pieces.append(piece)
            estimate += n
    pieces.insert(int(rng.integers(len(pieces) + 1)), needle)
    text = sep.join(pieces)
    while (size := count(text)) > length and len(pieces) > 1:  # an estimate was short: drop from the end
        pieces.pop(-1 if pieces[-1] != needle else -2)
        text = sep.join(pieces)
    return text, size


def _draw(rng, blocks, k: int) -> list[str]:
    if blocks is None:
        return [_filler(rng) for _ in range(k)]
    return [blocks[i] for i in rng.integers(len(blocks), size=k)]


def _scifact_needles(count, n: int, rng) -> tuple[list[str], list[str], list[str]]:
    """(relevant abstracts, their claims, the abstracts to fill with): claims of SciFact's report part with exactly
    one relevant abstract of at most SCIFACT_ABSTRACT_MAX tokens; fillers that no train claim judges."""
    report, train = scifact.part("report"), scifact.claims("train")
    judged = {d for q in train.qrels.values() for d in q}
    single = [(q, rel[0]) for q in report.queries if len(rel := [d for d, g in report.qrels[q].items() if g > 0]) == 1]
    sizes = count.many([report.corpus[d] for _, d in single])
    eligible = [pair for pair, n in zip(single, sizes) if n <= SCIFACT_ABSTRACT_MAX]
    if n > len(eligible):
        raise UserError(f"SciFact's report part has {len(eligible)} claims with one short relevant abstract, fewer "
                        f"than the {n} asked for.")
    picked = [eligible[i] for i in sorted(rng.choice(len(eligible), n, replace=False))]
    fillers = [text for d, text in report.corpus.items() if d not in judged]
    return [report.corpus[d] for _, d in picked], [report.queries[q] for q, _ in picked], fillers
