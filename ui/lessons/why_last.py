"""Lesson 1: why the last token of a causal LM is a poor sentence vector, and how a prompt fixes it."""

from ui.lessons import views
from ui.lessons.base import Control, Lesson, Step, hidden_state
from ui.recorded import Cited

TEXTS = ("The bank raised its interest rates again.", "The bank was steep and muddy after the flood.",
         "Interest rates went up at the bank this week.", "We sat on the grassy river bank.",
         "She bought a second-hand bicycle.", "She purchased a used bike.")
TEXT = "The bank by the river raised its interest rates after the flood damaged the town."
THREE = [("last", {}), ("prompteol", {}), ("echo", {})]
# The record this lesson's numbers come from, as its words were written (`ui.recorded`; `results --check`).
CITES = {"methods_models": "08b4b86da7d1"}
scores = Cited(CITES)("methods_models")


def spearman(method: str) -> str:
    return scores.value("scores", method, "SmolLM2-135M-Instruct")

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
         f"SmolLM2-135M-Instruct on {scores.sample()} held-out STS-B dev pairs of all six sources (docs/RESULTS.md), "
         f"the last token scores a Spearman of {spearman('last')}, PromptEOL {spearman('prompteol')} and Echo "
         f"{spearman('echo')}.",
         Control("layer", "Hidden state read out", None, lo=1),
         lambda layer: views.separation([(n, {"layer": hidden_state(layer)}) for n, _ in THREE]),
         "Why does Echo cost more than PromptEOL?",
         "It reads the text twice, so its forward pass runs over about twice as many tokens; the model report's "
         "Cost section times every method against the plain forward on this machine.", seconds=40),
))
