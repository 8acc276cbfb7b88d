"""Lesson 6: one vector per sentence: context compression, pool dilution, reading the right person's pools among
many."""

from analysis.data import personas
from ui.lessons import views
from ui.lessons.base import Control, Lesson, Step

QUESTION = personas.generate("heldout", 4)[3].question

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
         "paragraph, the full text, and no context at all (the floor). Measured on SmolLM2-135M on 200 held-out "
         "questions (docs/RESULTS.md), per-sentence pools answer 99.5% and one paragraph pool 48.5%: 51 points, "
         "more than the source's 33. Part of that gap is training: these weights saw paragraph pools in a fifth of "
         "their rows (RESULTS.md's training-recipe section has a model trained for paragraph pools). Part of the "
         "99.5% is a small vocabulary: trained the same way on the source's list sizes (250 first names, 200 "
         "cities...), per-sentence pools answer 57.5% [50.6, 64.1], and neither model reads a value it never saw "
         "(0% and 4%).",
         Control("slider", "Questions", 25, lo=10, hi=50),
         lambda n: views.compression_modes(n),
         "Why does one paragraph vector lose facts?",
         "A mean over every sentence blends them: the first name survives, the surname and the city blur into "
         "the others.", seconds=90),
    Step("Pool dilution",
         "Now the same questions with distractor sentences added, so the right pool is one among many. The source "
         "reports a slow, sub-linear decay; measured here (docs/RESULTS.md), per-sentence pools stay at 98-100% up "
         "to 100 pools while one paragraph pool falls from 58% to 4%. The source calls this setting benign: every "
         "pool is about the same person, so the right one differs by content alone.",
         Control("slider", "Largest number of pools", 20, lo=5, hi=50),
         lambda max_pools: views.dilution(max_pools, ("sentence", "paragraph")),
         "Why does the paragraph pool suffer most?",
         "Every distractor is averaged into the one vector, so the fact's share of it shrinks with each sentence.",
         seconds=120),
    Step("Picking the right person among many: names",
         "Now each context holds five people's facts and the question names one of them. Trained on such "
         "contexts without names for 120 steps, the model answers 16% of held-out questions and its attention on "
         "the asked person's pools is at chance (0.19 against 0.20): a pool about Ana's city looks like a pool "
         "about Ben's. Put each person's name as tokens before their pools (the source's Experiment B2, the "
         "shipped weights, also 120 steps) and it answers 83%, selection becoming copying. But trained for 2,000 "
         "steps, the source's length, the run without names answers 80% too (docs/RESULTS.md): names make the "
         "selection quick to learn, not possible. Watch the asked person's row "
         "(▶) light up in the last layers; add people to make the search harder.",
         Control("slider", "People in the context", 5, lo=2, hi=10),
         lambda people: views.people_reading(people),
         "Why do names help so much?",
         "The question and the name tokens share token ids, so attention can match them exactly; a pool vector "
         "holds the first name only faintly, mixed with the fact it carries.", seconds=30),
), trained="compression")
