"""Lesson 5: a contextual token from a small encoder: Causal2Vec, what the decoder reads from it, and what the
encoder alone already knows."""

from ui.lessons import views
from ui.lessons.base import Control, Lesson, Step
from ui.lessons.why_last import TEXTS
from ui.recorded import Cited

TEXT = "The bank by the river raised its interest rates after the flood damaged the town."
# The record this lesson's numbers come from, as its words were written (`ui.recorded`; `results --check`).
CITES = {"causal2vec": "856fcab61a27"}
measured = Cited(CITES)("causal2vec")


def spearman(configuration: str) -> str:
    return measured.value("scores", configuration, "Spearman")

LESSON = Lesson("causal2vec", "A contextual token from a small encoder",
                "Causal2Vec lets a small bidirectional encoder (MiniLM) read the whole text first and hands its "
                "summary to the decoder as one extra token at the front. Does the decoder use it, and does it add "
                "anything to what the encoder knew?", (
    Step("The decoder reads the contextual token",
         "A trained bridge (a small network, trained here) turns MiniLM's sentence vector into one input token C "
         "placed before the text. Every text token can attend to C, so early tokens see a summary of the whole "
         "text. The bars are the share of the text tokens' attention that lands on C, per decoder layer: on "
         "SmolLM2 a few percent, most of it in the first layer.",
         Control("text", "Your text", TEXT),
         lambda text: views.contextual_reading(text),
         "The bars are small. Is C then useless?",
         "Not necessarily: attention shares say where the decoder looks, not how much what it finds changes the "
         "result. A few percent of attention on one well-made vector can still move the states; step 4 compares "
         "the embeddings themselves.", seconds=30),
    Step("Trained bridge against an untrained one",
         "The same measurement with an untrained bridge (random weights, seeded): the decoder still looks at C, "
         "but what it finds there is not a summary in a form it can use. Switch between the two.",
         Control("choice", "Bridge", "shipped", options=("shipped", "untrained"),
                 labels=("trained here (shipped)", "untrained")),
         lambda bridge: views.contextual_reading(TEXT, bridge),
         "If attention to C looks similar in both, has training changed nothing?",
         "Attention says where the decoder looks, not what it reads: the next steps compare the embeddings.",
         seconds=30),
    Step("Three embeddings of the same sentences",
         "Causal2Vec's embedding (C's final state next to the last token's), MiniLM alone and PromptEOL on the "
         "decoder alone.",
         Control("texts", "Your sentences (one per line)", TEXTS),
         lambda texts: views.similarity([("causal2vec", {}), ("sentence_encoder", {}), ("prompteol", {})], texts),
         "Which of the three spaces is the least anisotropic (lowest typical cosine)?",
         "Compare the mean cosines between different texts in the titles: a space where unrelated texts are far "
         "apart can rank pairs more easily.", seconds=30),
    Step("What the encoder alone already knows",
         f"The demo pairs: paraphrases against look-alikes. Measured on {measured.sample()} held-out STS-B dev "
         f"pairs of all six sources (docs/RESULTS.md), the shipped Causal2Vec scores {spearman('trained concat')}, "
         f"well above PromptEOL ({spearman('PromptEOL')}) and above the paper's first control, trained here with "
         "the same recipe and budget: the decoder without the contextual token, "
         f"{spearman('no-C control (Table 2)')}. The token does help the decoder. But MiniLM alone scores "
         f"{spearman('encoder alone')}, and the paper's second control, the decoder's last-token state next to "
         f"MiniLM's vector trained the same way, {spearman('trained concatenation (Table 4)')} "
         f"({spearman('frozen concatenation')} untrained): at this scale the decoder adds nothing the encoder did "
         "not already know, and "
         "the paper's gains over its encoder and over plain concatenation do not hold here.",
         Control("choice", "Causal2Vec readout", "concat", options=("concat", "eos", "contextual"),
                 labels=("C and the last token (paper)", "last token only", "C only")),
         lambda readout: views.separation([("causal2vec", {"readout": readout}), ("sentence_encoder", {}),
                                           ("prompteol", {})]),
         "Then why use Causal2Vec at all?",
         "The paper's decoders are billions of parameters; with a strong decoder the contextual token makes it a "
         "better embedder at little cost. Here the decoder is smaller than the gap it would have to close.",
         seconds=40),
), trained="causal2vec")
