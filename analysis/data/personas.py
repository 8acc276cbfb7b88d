"""Synthetic personas for context-compression experiments: short paragraphs of facts about one invented
person, and questions whose answers are those facts.

A persona is (first name, surname, profession, employer, city, country). Its paragraph has one sentence per
fact key (a dozen templates, two or three per key), shuffled, plus distractor sentences that carry no fact.
The five fact keys are `KEYS`. Train and held-out personas never share a full name, so no (person, key, value)
combination of the held-out split was ever seen in training; the *values* (cities, jobs, ...) are shared on
purpose: the system must read which value this person has, not invent new words.

    from analysis.data.personas import generate
    qa = generate("heldout", n=200)                     # list[QA], seeded, the same on every machine
    qa[0].context, qa[0].question, qa[0].answer, qa[0].key

Everything is a pure function of (split, n, seed, distractors): the same call always returns the same items.

Several people per context (the source's Experiment B: the hard half, picking the right person's pools):

    qa = generate_people("heldout", n=200, people=5)    # five people's fact sentences, the question names one
    qa[0].ids                                           # the full name of the person each sentence is about

Their first names come from a longer list (`PEOPLE_FIRST_NAMES`) so that a context can hold up to about 200 people
with distinct first names; single-person items keep the original list, so every item above is unchanged.

Vocabularies (`VOCABULARIES`, the `vocabulary` argument of every generator): "small" (the default, every item above)
draws from 36 first names (206 for several people), 36 surnames, 24 professions and 20 employers, cities and
countries; "source" from the context-compression source's sizes, 250 first names, 210 surnames, 180 professions, 200
employers, 200 cities and 120 countries (`analysis.data.source_vocabulary`), so a value list is harder to memorise
than to read. The out-of-distribution probes' words are in neither.
"""

from __future__ import annotations

import functools
import hashlib
import random
from dataclasses import dataclass

from analysis.data import source_vocabulary as source

KEYS = ("name", "profession", "employer", "city", "country")
SPLITS = ("train", "validation", "heldout")

FIRST_NAMES = (
    "Maria", "James", "Aisha", "Lukas", "Sofia", "Kenji", "Amara", "Oliver", "Ingrid", "Mateo", "Priya", "Tomasz",
    "Chloe", "Rafael", "Hana", "Emeka", "Greta", "Dmitri", "Leila", "Samuel", "Yuki", "Nadia", "Arjun", "Elena",
    "Kwame", "Freya", "Omar", "Clara", "Viktor", "Zainab", "Hugo", "Mei", "Tariq", "Astrid", "Diego", "Nora",
)
SURNAMES = (
    "Kowalczyk", "Okafor", "Lindqvist", "Fernandes", "Nakamura", "Brennan", "Haddad", "Moreau", "Petrov",
    "Castillo", "Achterberg", "Mensah", "Rossi", "Novak", "Gupta", "Schneider", "Duarte", "Olsen", "Tanaka",
    "Abernathy", "Kaur", "Dubois", "Halvorsen", "Mbeki", "Quintero", "Yilmaz", "Whitfield", "Sorensen", "Azikiwe",
    "Varga", "Delacroix", "Nguyen", "Ferreira", "Koval", "Baptiste", "Lindgren",
)
PROFESSIONS = (
    "nurse", "carpenter", "pharmacist", "architect", "librarian", "electrician", "veterinarian", "accountant",
    "firefighter", "translator", "dentist", "plumber", "journalist", "geologist", "baker", "pilot", "lawyer",
    "photographer", "chemist", "teacher", "surveyor", "florist", "optician", "welder",
)
EMPLOYERS = (
    "Brightline Systems", "Harbor Logistics", "Northwind Foods", "Cobalt Health", "Redwood Bank", "Pioneer Rail",
    "Silverleaf Media", "Atlas Mining", "Bluewater Energy", "Crescent Hotels", "Evergreen Pharma", "Falcon Air",
    "Granite Insurance", "Horizon Telecom", "Ironbridge Steel", "Juniper Labs", "Keystone Motors", "Lakeside Clinic",
    "Meridian Press", "Nimbus Software",
)
CITIES = (
    "Lyon", "Porto", "Krakow", "Osaka", "Melbourne", "Toronto", "Nairobi", "Seville", "Bergen", "Leipzig", "Denver",
    "Valparaiso", "Tampere", "Glasgow", "Bologna", "Ghent", "Cordoba", "Busan", "Hamilton", "Salzburg",
)
COUNTRIES = (
    "Peru", "Norway", "Ghana", "Portugal", "Vietnam", "Canada", "Hungary", "Morocco", "Chile", "Ireland", "Kenya",
    "Poland", "Brazil", "Finland", "Egypt", "Austria", "Mexico", "Greece", "Iceland", "Nigeria",
)

# More first names for contexts of many people (the question names a person by first name, so a context of N
# people needs N distinct first names). None is a prefix of another name, a value, a surname or an OOD word.
MORE_FIRST_NAMES = (
    "Abigail", "Adrian", "Agnes", "Ahmed", "Aiko", "Alejandro", "Alina", "Amir", "Anders", "Andrea", "Anika", "Anton",
    "Ayla", "Beatriz", "Benedikt", "Bianca", "Boris", "Bruno", "Camila", "Carmen", "Cecilia", "Cyrus", "Dalia",
    "Damian", "Daniela", "Darius", "Delphine", "Elias", "Elif", "Emil", "Esther", "Ewa", "Fabian", "Farah", "Felix",
    "Fatima", "Fiona", "Gabriel", "Gideon", "Gustavo", "Halima", "Hamid", "Helga", "Henrik", "Ignacio", "Ilse",
    "Ines", "Irina", "Isaac", "Ivan", "Jakob", "Javier", "Jonas", "Josefine", "Julian", "Kai", "Kamala", "Karim",
    "Katya", "Kofi", "Lars", "Laszlo", "Lena", "Lionel", "Lorenzo", "Lucia", "Magnus", "Malik", "Marco", "Margot",
    "Marisol", "Matilda", "Maxim", "Milan", "Mira", "Nadine", "Nikolai", "Nils", "Noor", "Odile", "Olga", "Oskar",
    "Pablo", "Paloma", "Pavel", "Petra", "Quentin", "Rania", "Reza", "Rosa", "Ruben", "Sakura", "Salma", "Selma",
    "Sergio", "Simone", "Sven", "Tamara", "Theo", "Tobias", "Ulla", "Ursula", "Valentina", "Vera", "Wanjiru",
    "Xavier", "Yara", "Yusuf", "Zeynep", "Zoltan", "Akira", "Alma", "Anouk", "Bjorn", "Carla", "Chidi", "Dagny",
    "Eamon", "Enzo", "Eskil", "Farid", "Gemma", "Goran", "Hiroshi", "Ida", "Imran", "Jana", "Jorge", "Kalani", "Kasia",
    "Lior", "Lucas", "Mads", "Marek", "Miguel", "Nikhil", "Ola", "Orla", "Rahel", "Rohan", "Sanne", "Sunita", "Usha",
    "Valeria", "Wei", "Yusra", "Zora", "Aurelio", "Bodil", "Cosmo", "Dorota", "Efua", "Filipa", "Gunnar", "Hyun",
    "Isabel", "Jiro", "Kerstin", "Lotte", "Maeve", "Nuno", "Pilar", "Radek", "Sigrid", "Taavi", "Uma", "Vilja",
    "Wiktor", "Yoshiro", "Zelda",
)
PEOPLE_FIRST_NAMES = FIRST_NAMES + MORE_FIRST_NAMES
LAYOUTS = ("grouped", "interleaved")  # each person's sentences together (the source), or mixed among the others


@dataclass(frozen=True)
class Vocabulary:
    first: tuple  # first names of single-person items
    people_first: tuple  # first names of several-people items (a context of N people needs N distinct ones)
    surnames: tuple
    professions: tuple
    employers: tuple
    cities: tuple
    countries: tuple


VOCABULARIES = {
    "small": Vocabulary(FIRST_NAMES, PEOPLE_FIRST_NAMES, SURNAMES, PROFESSIONS, EMPLOYERS, CITIES, COUNTRIES),
    "source": Vocabulary(PEOPLE_FIRST_NAMES + source.EXTRA_FIRST_NAMES, PEOPLE_FIRST_NAMES + source.EXTRA_FIRST_NAMES,
                         SURNAMES + source.EXTRA_SURNAMES, PROFESSIONS + source.EXTRA_PROFESSIONS,
                         EMPLOYERS + source.EXTRA_EMPLOYERS, CITIES + source.EXTRA_CITIES,
                         COUNTRIES + source.EXTRA_COUNTRIES),
}


def vocabulary_of(name: str) -> Vocabulary:
    if name not in VOCABULARIES:
        raise ValueError(f"unknown vocabulary {name!r}; choose from {tuple(VOCABULARIES)}")
    return VOCABULARIES[name]


def _salt(vocabulary: str) -> str:
    """What a vocabulary adds to a generator's seed string: nothing for "small", so its items are those of before."""
    return "" if vocabulary == "small" else f":{vocabulary}"

# Two or three templates per key (a dozen in all); {first}/{last} are the person's names.
TEMPLATES = {
    "name": ("This is {first} {last}.", "Everyone in the building knows {first} {last}.",
             "The person in this story is called {first} {last}."),
    "profession": ("{first} works as a {profession}.", "By trade, {first} is a {profession}.",
                   "After years of training, {first} became a {profession}."),
    "employer": ("{first} is employed by {employer}.", "Every weekday {first} goes to work at {employer}."),
    "city": ("{first} lives in {city}.", "{first} rents a small flat in {city}."),
    "country": ("{first} was born in {country}.", "{first} grew up in {country}."),
}
QUESTIONS = {
    "name": ("What is the person's full name?", "Who is this paragraph about? Give the full name."),
    "profession": ("What is {first}'s job?", "What does {first} do for a living?"),
    "employer": ("Which company does {first} work for?", "Who employs {first}?"),
    "city": ("In which city does {first} live?", "Where does {first} live?"),
    "country": ("In which country was {first} born?", "Where was {first} born?"),
}
# With several people in a context "the person" is ambiguous: the name question names whom it asks about too.
PEOPLE_QUESTIONS = {**QUESTIONS, "name": ("What is {first}'s full name?", "What is the full name of {first}?")}

# Distractors: sentences with no fact about anyone, built from parts so the scaling curve can go to hundreds of
# distinct ones. None of them contains a name, job, company, city or country from the lists above.
_D_SUBJECTS = ("The old bridge", "A small cafe", "The morning train", "The city library", "A stray cat",
               "The school choir", "The local market", "A heavy storm", "The garden hose", "The office printer",
               "A delivery van", "The river ferry", "The night bus", "A school of fish", "The new museum wing")
_D_PREDICATES = ("was closed for repairs", "was unusually quiet", "attracted a small crowd", "ran late again",
                 "was painted bright yellow", "made a strange noise", "was mentioned in the newsletter",
                 "looked different in the rain", "stayed open until midnight", "needed a new coat of paint",
                 "was busier than usual", "appeared in an old photograph")
_D_TIMES = ("on Tuesday", "last spring", "during the holidays", "that evening", "all week", "in early March",
            "after the festival", "before dawn")


@dataclass(frozen=True)
class Persona:
    first: str
    last: str
    profession: str
    employer: str
    city: str
    country: str

    @property
    def full_name(self) -> str:
        return f"{self.first} {self.last}"

    def value(self, key: str) -> str:
        return self.full_name if key == "name" else getattr(self, key)


@dataclass(frozen=True)
class QA:
    """One question about one context. `context` is a list of sentences (one pool each)."""

    context: tuple[str, ...]
    question: str
    answer: str
    key: str
    identifier: str = ""  # the person the question asks about (single-person items: whom every sentence is about)
    ids: tuple[str, ...] = ()  # per sentence, the full name of the person it is about (multi-person items)

    def to_json(self) -> dict:
        """The item as a JSONL line; "ids" only when the item has them, so a single-person item's line (and the
        cache entries keyed by it) is the same as before per-sentence ids existed."""
        out = {"context": list(self.context), "question": self.question, "answer": self.answer, "key": self.key,
               "id": self.identifier}
        return {**out, "ids": list(self.ids)} if self.ids else out


def name_split(first: str, last: str) -> str:
    """Which split a full name belongs to: a fixed hash, so the splits never share a name (about 70/10/20)."""
    h = int.from_bytes(hashlib.sha256(f"{first} {last}".encode()).digest()[:4], "big") % 10
    return "train" if h < 7 else "validation" if h < 8 else "heldout"


@functools.cache  # every generated item draws from it: hash the name lists once per split, not once per item
def _names(split: str, vocabulary: str = "small") -> tuple[tuple[str, str], ...]:
    v = vocabulary_of(vocabulary)
    return tuple((f, s) for f in v.first for s in v.surnames if name_split(f, s) == split)


MAX_DISTRACTORS = len(_D_SUBJECTS) * len(_D_PREDICATES) * len(_D_TIMES)  # distinct distractor sentences


def distractors(n: int, rng: random.Random) -> list[str]:
    """`n` distinct distractor sentences (at most MAX_DISTRACTORS)."""
    if n > MAX_DISTRACTORS:
        raise ValueError(f"at most {MAX_DISTRACTORS} distinct distractors, asked for {n}")
    picks = rng.sample(range(MAX_DISTRACTORS), n)
    out = []
    for p in picks:
        s, rest = divmod(p, len(_D_PREDICATES) * len(_D_TIMES))
        v, t = divmod(rest, len(_D_TIMES))
        out.append(f"{_D_SUBJECTS[s]} {_D_PREDICATES[v]} {_D_TIMES[t]}.")
    return out


def persona_sentences(p: Persona, rng: random.Random, templates: dict = TEMPLATES) -> list[str]:
    """One sentence per fact key from `templates`, the name sentence first, the others shuffled."""
    facts = {k: rng.choice(templates[k]).format(first=p.first, last=p.last, profession=p.profession,
                                                  employer=p.employer, city=p.city, country=p.country)
             for k in KEYS}
    rest = [facts[k] for k in KEYS[1:]]
    rng.shuffle(rest)
    return [facts["name"]] + rest


def random_persona(rng: random.Random, split: str, vocabulary: str = "small") -> Persona:
    first, last = rng.choice(_names(split, vocabulary))
    v = vocabulary_of(vocabulary)
    return Persona(first, last, rng.choice(v.professions), rng.choice(v.employers), rng.choice(v.cities),
                   rng.choice(v.countries))


def paragraph(p: Persona, rng: random.Random, n_distractors: int = 0) -> list[str]:
    """The persona's fact sentences with `n_distractors` distractors inserted at random places (the name
    sentence stays first)."""
    sents = persona_sentences(p, rng)
    for d in distractors(n_distractors, rng):
        sents.insert(rng.randint(1, len(sents)), d)
    return sents


def generate(split: str = "heldout", n: int = 200, *, seed: int = 0, distractors_range: tuple[int, int] = (0, 2),
             keys: tuple[str, ...] = KEYS, vocabulary: str = "small") -> list[QA]:
    """`n` question-answer items of `split`, cycling through `keys` so every key gets n/len(keys) items.

    Args:
        split: "train", "validation" (held-in, for early stopping) or "heldout" (never seen names).
        distractors_range: (lo, hi) distractor sentences per paragraph, inclusive.
        vocabulary: "small" or "source" (`VOCABULARIES`).
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {SPLITS}")
    rng = random.Random(f"{split}:{seed}:{distractors_range}{_salt(vocabulary)}")
    out = []
    for i in range(n):
        p = random_persona(rng, split, vocabulary)
        key = keys[i % len(keys)]
        ctx = paragraph(p, rng, rng.randint(*distractors_range))
        q = rng.choice(QUESTIONS[key]).format(first=p.first)
        out.append(QA(tuple(ctx), q, p.value(key), key, p.full_name))
    return out


def asked_keys(names: bool) -> tuple[str, ...]:
    """The fact keys asked about: all of them, or without "name" when the context shows every pool's person as
    name tokens (the answer would be copied from them, not read from a pool)."""
    return tuple(k for k in KEYS if not (names and k == "name"))


@functools.cache  # read for every multi-person item: hashed once per split
def _people_names(split: str, vocabulary: str = "small") -> dict[str, tuple[str, ...]]:
    """first name -> the surnames it takes in `split` (first names with none in the split left out). Cached, so
    callers only read it."""
    out = {}
    v = vocabulary_of(vocabulary)
    for f in v.people_first:
        surnames = tuple(s for s in v.surnames if name_split(f, s) == split)
        if surnames:
            out[f] = surnames
    return out


def max_people(split: str, vocabulary: str = "small") -> int:
    """How many people with distinct first names one context of `split` can hold."""
    return len(_people_names(split, vocabulary))


def random_people(rng: random.Random, split: str, n: int, vocabulary: str = "small") -> list[Persona]:
    """`n` personas of `split` with distinct first names (so distinct full names too)."""
    names, v = _people_names(split, vocabulary), vocabulary_of(vocabulary)
    if n > len(names):
        raise ValueError(f"at most {len(names)} people with distinct first names per context in the {split} split, "
                         f"not {n}")
    return [Persona(f, rng.choice(names[f]), rng.choice(v.professions), rng.choice(v.employers), rng.choice(v.cities),
                    rng.choice(v.countries)) for f in rng.sample(sorted(names), n)]


def arrange(groups: list[list[str]], names: list[str], layout: str, rng: random.Random):
    """(sentences, ids) of a context of several people: `groups[i]` is person i's sentences, `names[i]` their
    name. "grouped" puts each person's sentences together in the given order; "interleaved" is a seeded random
    merge that keeps each person's own order (their name sentence still first)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose from {LAYOUTS}")
    if layout == "grouped":
        return [s for g in groups for s in g], [n for g, n in zip(groups, names) for _ in g]
    turns = [i for i, g in enumerate(groups) for _ in g]
    rng.shuffle(turns)
    nxt = [0] * len(groups)
    sentences, ids = [], []
    for i in turns:
        sentences.append(groups[i][nxt[i]])
        ids.append(names[i])
        nxt[i] += 1
    return sentences, ids


def people_item(group: list, target: int, key: str, rng: random.Random, layout: str, layout_rng: random.Random) -> QA:
    """One item about several people: `group` is [(persona, their sentences)], `target` indexes the asked one; the
    question (drawn with `rng`) names them by first name; `layout_rng` orders an interleaved context."""
    p = group[target][0]
    question = rng.choice(PEOPLE_QUESTIONS[key]).format(first=p.first)
    sentences, ids = arrange([s for _, s in group], [q.full_name for q, _ in group], layout, layout_rng)
    return QA(tuple(sentences), question, p.value(key), key, p.full_name, tuple(ids))


def generate_people(split: str = "heldout", n: int = 200, *, people: int = 5, layout: str = "grouped",
                    names: bool = False, seed: int = 0, vocabulary: str = "small") -> list[QA]:
    """`n` items whose context holds `people` persons' fact sentences (five each, no distractors); the question
    names one of them, chosen uniformly, by first name (distinct within an item, so it names exactly one person).
    Keys cycle so every key gets its share. Every person comes from `split`, so held-out items never share a
    person with training. The people and questions of item i depend on (split, seed, people, names), not on `n`
    or `layout`: the two layouts differ only in the order of the sentences.

    Args:
        names: the items will be read with each pool's person shown as name tokens: name questions are left out
            (`asked_keys`), since their answer would be copied from those tokens.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {SPLITS}")
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose from {LAYOUTS}")
    if people < 1:
        raise ValueError(f"a context needs at least one person, not {people}")
    rng = random.Random(f"people:{split}:{seed}:{people}:{names}{_salt(vocabulary)}")
    keys = asked_keys(names)
    out = []
    for i in range(n):
        group = [(p, persona_sentences(p, rng)) for p in random_people(rng, split, people, vocabulary)]
        target = rng.randrange(people)
        layout_rng = random.Random(f"people-layout:{split}:{seed}:{people}:{names}:{i}")
        out.append(people_item(group, target, keys[i % len(keys)], rng, layout, layout_rng))
    return out


def generate_scaled(split: str = "heldout", n: int = 100, *, total_sentences: int = 20, seed: int = 0,
                    vocabulary: str = "small") -> list[QA]:
    """Like `generate`, but every context is padded with distractors to exactly `total_sentences` sentences (at
    least the five fact sentences): the scaling curve's data. The persona and question of item i do not depend on
    `total_sentences`, so points of the curve differ only in the distractors."""
    if total_sentences < len(KEYS):
        raise ValueError(f"a persona needs at least {len(KEYS)} sentences, not {total_sentences}")
    if total_sentences > len(KEYS) + MAX_DISTRACTORS:  # refused before any item is generated
        raise ValueError(f"at most {len(KEYS) + MAX_DISTRACTORS} sentences per context ({MAX_DISTRACTORS} distinct "
                         f"distractors), not {total_sentences}")
    base = generate(split, n, seed=seed, distractors_range=(0, 0), vocabulary=vocabulary)
    out = []
    for i, qa in enumerate(base):
        rng = random.Random(f"scaled:{split}:{seed}:{i}:{total_sentences}")
        sents = list(qa.context)
        for d in distractors(total_sentences - len(sents), rng):
            sents.insert(rng.randint(1, len(sents)), d)
        out.append(QA(tuple(sents), qa.question, qa.answer, qa.key, qa.identifier))
    return out


# Out-of-distribution probes: phrasings and values that no split ever uses. Held-out names keep the person
# unseen; "phrasing" swaps every template for an unseen one, "values" swaps every value (and the name) for unseen
# words, "both" does both. They ask whether the trained system reads a pool or recognises a memorised sentence
# shape and value list.
OOD_KINDS = ("phrasing", "values", "both")
OOD_TEMPLATES = {
    "name": ("Meet {first} {last}.", "Our neighbour {first} {last} says hello."),
    "profession": ("{first} earns a living as a {profession}.", "{first}'s occupation: {profession}."),
    "employer": ("{first} has a contract with {employer}.", "The payslips {first} gets come from {employer}."),
    "city": ("Home for {first} is {city}.", "{first}'s address is in {city}."),
    "country": ("{first}'s birthplace is {country}.", "{first} came into the world in {country}."),
}
OOD_FIRST = ("Ottilie", "Bartholomew", "Xiomara", "Leopold", "Saoirse", "Thaddeus", "Imogen", "Caspian")
OOD_LAST = ("Marchetti", "Vandermeer", "Oyelaran", "Blackwood", "Szabo", "Ekstrom", "Ramaswamy", "Thornbury")
OOD_VALUES = {
    "profession": ("cartographer", "beekeeper", "locksmith", "sommelier", "glassblower", "astronomer"),
    "employer": ("Quarry Textiles", "Saffron Robotics", "Tidewater Shipping", "Larkspur Foods", "Obsidian Games"),
    "city": ("Utrecht", "Adelaide", "Winnipeg", "Tbilisi", "Cusco", "Trondheim"),
    "country": ("Latvia", "Uruguay", "Nepal", "Tunisia", "Mongolia", "Jamaica"),
}


def generate_ood(kind: str, n: int = 50, *, seed: int = 0, vocabulary: str = "small") -> list[QA]:
    """`n` items like `generate("heldout", n)` but with unseen phrasings ("phrasing"), unseen values and names
    ("values"), or both ("both"); questions keep the usual templates, so only the context is new. The values probe's
    words are in no vocabulary: unseen by a model trained with either."""
    if kind not in OOD_KINDS:
        raise ValueError(f"unknown OOD kind {kind!r}; choose from {OOD_KINDS}")
    rng = random.Random(f"ood:{kind}:{seed}{_salt(vocabulary)}")
    new_words, new_phrasing = kind in ("values", "both"), kind in ("phrasing", "both")
    out = []
    for i in range(n):
        p = random_persona(rng, "heldout", vocabulary)
        if new_words:
            p = Persona(rng.choice(OOD_FIRST), rng.choice(OOD_LAST),
                        *(rng.choice(OOD_VALUES[k]) for k in ("profession", "employer", "city", "country")))
        sents = persona_sentences(p, rng, OOD_TEMPLATES if new_phrasing else TEMPLATES)
        for d in distractors(rng.randint(0, 2), rng):
            sents.insert(rng.randint(1, len(sents)), d)
        key = KEYS[i % len(KEYS)]
        q = rng.choice(QUESTIONS[key]).format(first=p.first)
        out.append(QA(tuple(sents), q, p.value(key), key, p.full_name))
    return out
