"""Lesson 4: thinking in mixtures: GIRCSE's soft tokens step by step, frozen against trained, and whether more
steps help."""

from ui.lessons import views
from ui.lessons.base import Control, Lesson, Step
from ui.recorded import Cited

TEXT = "After months of waiting, the letter finally came: she had been accepted."
# The record this lesson's numbers come from, as its words were written (`ui.recorded`; `results --check`).
CITES = {"gircse": "6ba1b1b8e54d"}
gircse = Cited(CITES)("gircse")


def spearman(configuration: str) -> str:
    return gircse.value("scores", configuration, "Spearman")

LESSON = Lesson("soft-tokens", "Thinking in mixtures: soft tokens",
                "GIRCSE lets the model write a few tokens after the text, but never picks one: each step feeds back "
                "the probability-weighted mix of all token embeddings. The embedding is the mean of those steps' "
                "states. Does writing more make a better vector?", (
    Step("Soft tokens, step by step (frozen model)",
         "At each step the model's next-token distribution is turned into one input vector, the mix of every "
         "token's embedding weighted by its probability, and fed back. Each column is a step; the cells are the "
         "most likely tokens of that step's mix. The frozen model, with no training, mostly continues the text.",
         Control("text", "Your text", TEXT),
         lambda text: views.soft_steps("none", text),
         "Why a mix and not the most likely token?",
         "A mix keeps the model's uncertainty (several plausible words at once) and stays differentiable, so the "
         "generation can be trained end to end.", seconds=20),
    Step("After training (the adapter shipped here)",
         "This repository trained a small LoRA adapter with GIRCSE's objective (Iterative Contrastive Refinement: "
         "every step's embedding must find its paraphrase). The mixes change: the trained model writes tokens "
         "that describe the text rather than continue it. Change K, the number of steps.",
         Control("slider", "Soft tokens K", 5, lo=1, hi=20),
         lambda k: views.soft_steps("shipped", TEXT, k),
         "Why train at K = 5?",
         "It is the paper's training value; the question of the last step is whether going past it helps.",
         seconds=20),
    Step("How sure is each step?",
         "The entropy of each step's mix: low means one token dominates, high means a spread-out blend. Compare the "
         "frozen and the trained model on your text.",
         Control("text", "Your text", TEXT),
         lambda text: views.soft_entropy(text),
         "Is a low entropy good for an embedding?",
         "Not by itself: a confident step that continues the story says little about the meaning. What counts is "
         "whether the states help tell paraphrases apart, which the last step measures.", seconds=30),
    Step("Do more steps help?",
         "Spearman on 100 STS-B dev pairs (a genre-stratified sample; the 20 demo pairs when STS-B is not in the "
         "data folder) against K, for the frozen and the trained model (K = 0 reads the prompt's last token "
         "without generating). GIRCSE reports that generating more tokens at test time keeps improving the "
         f"embedding. Measured on SmolLM2-135M-Instruct on {gircse.sample()} held-out STS-B dev pairs of all six "
         f"sources (docs/RESULTS.md), training lifts K = 5 from {spearman('frozen model K=5')} to "
         f"{spearman('GIRCSE K=5')}, but K = 10 ({spearman('GIRCSE K=10')}) and K = 20 ({spearman('GIRCSE K=20')}) "
         "are worse than K = 5, and the fair baseline (the same training without generation, Causal-EOS) scores "
         f"{spearman('Causal-EOS K=0')}, above K = 5: on this model neither the test-time scaling claim nor the gain "
         "over Causal-EOS holds.",
         Control("slider", "Largest K", 20, lo=5, hi=20),
         lambda k_max: views.soft_scaling_curve(k_max),
         "How much should one trust a curve from 100 pairs?",
         "Not to the second decimal: a few pairs move it visibly. The Soft tokens page computes the same curve "
         "with bootstrap intervals, on as many pairs as you choose.", seconds=240),
), trained="gircse")
