"""Lesson 6: one vector per sentence: context compression, pool dilution, reading the right pool among many."""

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
         "Ask about another fact and the bright row moves.",
         Control("text", "Your question", QUESTION),
         lambda question: views.pool_reading(question),
         "Why read attention at the first answer token?",
         "It is where the model commits to the answer; later tokens mostly continue the word they started.",
         seconds=30),
    Step("One vector per sentence against one per paragraph",
         "Held-out persona questions answered four ways: one vector per sentence, one vector for the whole "
         "paragraph, the full text, and no context at all (the floor). Measured on SmolLM2-135M "
         "(docs/RESULTS-old-protocol.md), per-sentence pools beat one paragraph pool by 51 points, more than the "
         "source's 33: that claim holds, and more.",
         Control("slider", "Questions", 25, lo=10, hi=50),
         lambda n: views.compression_modes(n),
         "Why does one paragraph vector lose facts?",
         "A mean over every sentence blends them: the first name survives, the surname and the city blur into "
         "the others.", seconds=90),
    Step("Pool dilution",
         "Now the same questions with distractor sentences added, so the right pool is one among many. The source "
         "reports a slow, sub-linear decay; measured here (docs/RESULTS-old-protocol.md), per-sentence pools stay "
         "flat to 100 pools and decline slowly after, while one paragraph pool falls to zero.",
         Control("slider", "Largest number of pools", 20, lo=5, hi=50),
         lambda max_pools: views.dilution(max_pools, ("sentence", "paragraph")),
         "Why does the paragraph pool suffer most?",
         "Every distractor is averaged into the one vector, so the fact's share of it shrinks with each sentence.",
         seconds=120),
    Step("Reading the right pool among many: identifiers",
         "The source adds an identifier token before each pool to help the decoder find the right one. Measured "
         "here (docs/RESULTS-old-protocol.md), there is nothing to rescue: plain pools already answer almost "
         "every name, identifiers match them within noise, and they cost most of the compression (9.3x down to "
         "1.14x). That claim does not reproduce on this model.",
         Control("slider", "Largest number of pools", 20, lo=5, hi=50),
         lambda max_pools: views.dilution(max_pools, ("sentence", "sentence+ids")),
         "When would identifiers help?",
         "When pools are hard to tell apart by content, for instance many near-identical sentences; the persona "
         "facts here are distinct enough.", seconds=120),
), trained="compression")
