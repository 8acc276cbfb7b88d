"""Lesson 6: one vector per sentence: context compression, pool dilution, reading the right person's pools among
many."""

from analysis.data import personas
from ui.lessons import views
from ui.lessons.base import Control, Lesson, Step
from ui.recorded import MISSING, Cited

QUESTION = personas.generate("heldout", 4)[3].question
# The records this lesson's numbers come from, as its words were written (`ui.recorded`; `results --check`).
CITES = {"compression": "821511b66d54", "compression_source_vocabulary": "a5ad8a0b6307",
         "compression_people": "2b4675aafa6a"}
cited = Cited(CITES)
single, source, people = cited("compression"), cited("compression_source_vocabulary"), cited("compression_people")
SOURCE = personas.vocabulary_of("source")


def _points(a, b) -> str:
    """a - b in points, rounded (two rate numbers of the records), or MISSING."""
    return MISSING if a is None or b is None else f"{a - b:.0f}"


def _span(values: list) -> str:
    """"lo-hi" of a column of percentages (a single number when they agree), or MISSING."""
    found = [v for v in values if isinstance(v, (int, float))]
    lo, hi = (f"{min(found):.0f}", f"{max(found):.0f}") if found else (MISSING, MISSING)
    return lo if lo == hi else f"{lo}-{hi}"


DILUTION = single.column("dilution", "sentence"), single.column("dilution", "paragraph")
POOLS = single.column("dilution", "pools")

LESSON = Lesson("compression", "One vector per sentence",
                "Context compression turns each sentence of a context into one MiniLM vector, one input position "
                "for the decoder, which then answers questions about it. How much survives, and what happens when "
                "there are many sentences?", (
    Step("Which sentence does the answer read?",
         "A persona paragraph, each sentence pooled into one vector (a trained adapter maps it to the decoder's "
         "width). When the decoder writes its answer, its attention over the pools shows which sentence it reads. "
         "Ask about another fact and the bright row moves. Steps 1-3 read the weights trained on one person per "
         "context.",
         Control("text", "Your question", QUESTION),
         lambda question: views.pool_reading(question),
         "Why read attention at the first answer token?",
         "It is where the model commits to the answer; later tokens mostly continue the word they started.",
         seconds=30),
    Step("One vector per sentence against one per paragraph",
         "Held-out persona questions answered four ways: one vector per sentence, one vector for the whole "
         "paragraph, the full text, and no context at all (the floor). Measured on SmolLM2-135M on "
         f"{single.sample()} held-out questions (docs/RESULTS.md), per-sentence pools answer "
         f"{single.percent('heldout', 'sentence', 'all')} and one paragraph pool "
         f"{single.percent('heldout', 'paragraph', 'all')}: "
         f"{_points(single.number('heldout', 'sentence', 'all'), single.number('heldout', 'paragraph', 'all'))} "
         "points, more than the source's 33. Part of that gap is training: these weights saw paragraph pools in a "
         "fifth of their rows (RESULTS.md's training-recipe section has a model trained for paragraph pools). Part "
         f"of the {single.percent('heldout', 'sentence', 'all')} is a small vocabulary: trained the same way on the "
         f"source's list sizes ({len(SOURCE.first)} first names, {len(SOURCE.cities)} cities...), per-sentence pools "
         f"answer {source.rate('heldout', 'sentence', 'all')}, and neither model reads a value it never saw "
         f"({single.percent('ood', 'values', 'pools')} and {source.percent('ood', 'values', 'pools')}).",
         Control("slider", "Questions", 25, lo=10, hi=50),
         lambda n: views.compression_modes(n),
         "Why does one paragraph vector lose facts?",
         "A mean over every sentence blends them: the first name survives, the surname and the city blur into "
         "the others.", seconds=90),
    Step("Pool dilution",
         "Now the same questions with distractor sentences added, so the right pool is one among many. The source "
         f"reports a slow, sub-linear decay; measured here (docs/RESULTS.md), per-sentence pools stay at "
         f"{_span(DILUTION[0])}% up to {_span(POOLS[-1:])} pools while one paragraph pool falls from "
         f"{_span(DILUTION[1][:1])}% to {_span(DILUTION[1][-1:])}%. The source calls this setting benign: every "
         "pool is about the same person, so the right one differs by content alone.",
         Control("slider", "Largest number of pools", 20, lo=5, hi=50),
         lambda max_pools: views.dilution(max_pools, ("sentence", "paragraph")),
         "Why does the paragraph pool suffer most?",
         "Every distractor is averaged into the one vector, so the fact's share of it shrinks with each sentence.",
         seconds=120),
    Step("Picking the right person among many: names",
         "Now each context holds five people's facts and the question names one of them. Trained on such "
         f"contexts without names for {people.value('budget', 'five people', 'steps trained')} steps, the model "
         f"answers {people.percent('experiment_b', 'five people', 'all')} of held-out questions and its attention "
         "on the asked person's pools is at chance "
         f"({people.value('experiment_b', 'five people', 'asked share of pool attention', 2)} against "
         f"{people.value('experiment_b', 'five people', 'chance', 2)}): a pool about Ana's city looks like a pool "
         "about Ben's. Put each person's name as tokens before their pools (the source's Experiment B2, the "
         f"shipped weights, {people.value('runs', 'five people, names', 'steps')} steps) and it answers "
         f"{people.percent('experiment_b', 'five people, names', 'all')}, selection becoming copying. But trained "
         f"for {people.value('budget', 'five people, longer run', 'steps trained')} steps, the source's length, the "
         f"run without names answers {people.percent('budget', 'five people, longer run', 'all')} too "
         "(docs/RESULTS.md): names make the selection quick to learn, not possible. Watch the asked person's row "
         "(▶) light up in the last layers; add people to make the search harder.",
         Control("slider", "People in the context", 5, lo=2, hi=10),
         lambda people: views.people_reading(people),
         "Why do names help so much?",
         "The question and the name tokens share token ids, so attention can match them exactly; a pool vector "
         "holds the first name only faintly, mixed with the fact it carries.", seconds=30),
), trained="compression")
