"""Lesson 1: why the last token of a causal LM is a poor sentence vector, and how a prompt fixes it."""

from ui.lessons import views
from ui.lessons.base import Control, Lesson, Step, hidden_state

TEXTS = ("The bank raised its interest rates again.", "The bank was steep and muddy after the flood.",
         "Interest rates went up at the bank this week.", "We sat on the grassy river bank.",
         "She bought a second-hand bicycle.", "She purchased a used bike.")
TEXT = "The bank by the river raised its interest rates after the flood damaged the town."
THREE = [("last", {}), ("prompteol", {}), ("echo", {})]

LESSON = Lesson("why-last", "Why the last token is a poor sentence vector",
                "A causal LM reads left to right, so only its final token has seen the whole text; and that token "
                "is trained to guess the next word, not to sum up. A prompt changes what it guesses.", (
    Step("Only the last token has read everything",
         "A decoder-only model lets every token look only to its left, so the final token is the one place where "
         "the whole sentence has been read. The obvious sentence vector is its hidden state. Here are the cosine "
         "similarities of six sentences under that readout: two about banks and money, two about river banks, a "
         "paraphrase pair about a bicycle. Look at the colour scale: almost every pair looks alike.",
         Control("texts", "Your sentences (one per line)", TEXTS),
         lambda texts: views.similarity([("last", {})], texts),
         "Why would the final token of \"...interest rates again.\" resemble the final token of \"...after the "
         "flood.\"?",
         "Both final tokens are a full stop, and the model's job at a full stop is to predict what comes next in a "
         "document, which does not depend much on what the sentence said. The state is built for that guess.",
         seconds=5),
    Step("What the final token actually reads",
         "Attention tells where the final token takes its information from. Without a prompt most of it goes to "
         "the first word (a resting place many heads use, an attention sink) and to the final word itself. "
         "PromptEOL wraps the text in *This sentence: \"...\" means in one word:\"* so the next token must be a "
         "summary word, and the final token reads the content words to choose it. Echo repeats the text, so the "
         "second copy's tokens can read the whole first copy.",
         Control("text", "Your text", TEXT),
         lambda text: views.word_reading(THREE, text),
         "Which words does PromptEOL's final token favour over the plain last token?",
         "Compare the bars on the nouns and verbs: the prompt asks for a one-word meaning, so its final token "
         "leans on the words that carry it. The Attention page shows the same per layer.",
         seconds=25),
    Step("A prompt reshapes the whole space",
         "The same six sentences, now three ways: the plain last token, PromptEOL and Echo. With a prompt the "
         "money sentences group together, the river sentences group together, and the bicycle paraphrases find "
         "each other, while unrelated pairs drop to lower cosines.",
         Control("texts", "Your sentences (one per line)", TEXTS),
         lambda texts: views.similarity(THREE, texts),
         "Is a higher cosine for every pair a good sign?",
         "No: what matters is the contrast, related pairs above unrelated ones. A readout where everything is "
         "similar (anisotropy) cannot rank anything.", seconds=20),
    Step("Paraphrases against look-alikes, layer by layer",
         "The built-in demo pairs: ten paraphrases and ten that are not (swapped roles such as the dog chased the "
         "postman / the postman chased the dog, changed facts, unrelated sentences). A good sentence vector "
         "separates the green from the red boxes. "
         "Move the layer: the readout does not have to come from the last hidden state. Measured on "
         "SmolLM2-135M-Instruct on 500 held-out STS-B dev pairs of all six sources (docs/RESULTS.md), "
         "the last token scores a Spearman of 0.359, PromptEOL 0.728 and Echo 0.658.",
         Control("layer", "Hidden state read out", None, lo=1),
         lambda layer: views.separation([(n, {"layer": hidden_state(layer)}) for n, _ in THREE]),
         "Why does Echo cost more than PromptEOL?",
         "It reads the text twice, so the forward pass is about twice as long (2.8x the plain last token against "
         "1.9x in docs/RESULTS-old-protocol.md).", seconds=40),
))
