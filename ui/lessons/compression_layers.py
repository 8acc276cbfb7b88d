"""Lesson 2: where the model compresses: the intrinsic-dimension trajectory, KV-Embedding's re-routing, and why
the rule misses on SmolLM2 but works on Gemma 3."""

from dataclasses import replace

from ui.lessons import views
from ui.lessons.base import Control, Lesson, Step
from ui.recorded import Cited

TEXT = "The bank by the river raised its interest rates after the flood damaged the town."
MODELS = Control("choice", "Model", "sidebar", options=("sidebar", "gemma3-270m"),
                 labels=("the sidebar's model (SmolLM2-135M-Instruct unless changed)", "Gemma 3 270M"),
                 help="Gemma 3 270M is the second built-in model (Gemma Terms of Use); loading it takes seconds.")
WINDOWS = ("auto", "10-11", "22-29")
# The records this lesson's numbers come from, as its words were written (`ui.recorded`; `results --check`).
CITES = {"methods_models": "08b4b86da7d1", "layer_map": "f6c30b222bd1"}
cited = Cited(CITES)
scores, layer_map = cited("methods_models"), cited("layer_map")
SMOLLM2, GEMMA = "SmolLM2-135M-Instruct", "Gemma 3 270M (base)"  # the records' model columns and rows

LESSON = Lesson("where-compress", "Where the model compresses",
                "Layer by layer, how many dimensions do a model's text representations really use? KV-Embedding "
                "bets that the layer where they use the fewest is where to re-route a summary; this lesson tests "
                "the bet on both built-in models.", (
    Step("The intrinsic dimension along the depth",
         "Feed many texts through the model and look at the final token's state after each layer. The points "
         "live in 576 dimensions, but they may lie on a much thinner surface: its dimension, estimated by TwoNN "
         "from each point's two nearest neighbours, is the intrinsic dimension (ID). Where the ID dips, the model "
         "has squeezed the texts into fewer directions. KV-Embedding's rule takes the lowest dip after the first "
         "fifth of the depth and re-routes there (shaded).",
         MODELS, lambda choice: views.id_curve(choice),
         "Why is hidden state 0 left out of the rule?",
         "Hidden state 0 is the embedding of the final token itself: the same token for every text under a fixed "
         "prompt, so there is nothing to measure.", seconds=60),
    Step("Re-routing: a summary at the front",
         "KV-Embedding copies the final token's key and value to the front of the sequence in the window's "
         "layers, so every token can attend to a summary of the whole text, which a causal model never allows. "
         "The bias is added to the attention score of that copy: raise it and watch how much attention the "
         "window's layers (red) pour onto it.",
         Control("slider", "Re-routing bias", 1, lo=0, hi=3,
                 help="Added to the pre-softmax score of the re-routed position; the paper's default is 1."),
         lambda bias: views.prefix_mass(bias, TEXT),
         "What happens to the attention outside the window?",
         "Nothing: outside the window there is no copy to attend to, so those layers show 0.", seconds=30),
    Step("Does the ID window help on SmolLM2?",
         "The demo paraphrase pairs again, PromptEOL against KV-Embedding with three windows: the one the rule "
         f"picks, decoder layers 10-11, and a late window 22-29. Measured on SmolLM2-135M-Instruct on "
         f"{scores.sample()} held-out STS-B dev pairs of all six sources (docs/RESULTS.md), KV-Embedding with the "
         f"rule's window scores {scores.value('scores', 'kv_embedding', SMOLLM2)} against PromptEOL's "
         f"{scores.value('scores', 'prompteol', SMOLLM2)}, and on a map of {layer_map.value('maps', SMOLLM2, 'cells')} "
         f"windows over {layer_map.sample()} pairs of the same part the rule's window ranks "
         f"{layer_map.text('maps', SMOLLM2, 'ID rank')}, below late windows (best: "
         f"{layer_map.text('maps', SMOLLM2, 'best cell')}, {layer_map.value('maps', SMOLLM2, 'best Spearman')}). "
         "The paper's rule does not hold on this model.",
         Control("choice", "KV-Embedding's window (decoder layers)", "auto", options=WINDOWS,
                 labels=("the ID rule's (auto)", "10-11", "22-29")),
         lambda layers: views.separation([("prompteol", {}), ("kv_embedding", {"layers": layers})]),
         "If the ID dip does not mark the right layers here, what does it measure?",
         "Where the texts' final-token states are most compressed, which on an instruction-tuned model need not "
         "be where a re-routed summary is most useful: the two are different questions.", seconds=60),
    Step("Gemma 3: the same rule, another outcome",
         "The same trajectory on Gemma 3 270M, a base model with 18 layers. Its window also sits at about a third "
         f"of the depth, but there re-routing works: measured on {scores.sample()} held-out STS-B dev pairs of all "
         f"six sources (docs/RESULTS.md), KV-Embedding scores {scores.value('scores', 'kv_embedding', GEMMA)} on "
         f"Gemma 3, level with PromptEOL's {scores.value('scores', 'prompteol', GEMMA)} (paired difference "
         f"{scores.text('scores', 'kv_embedding', 'vs best decoder (paired)', after=GEMMA)}). Which method to use "
         "depends on the model; the Compare models page puts both side by side.",
         replace(MODELS, default="gemma3-270m"),
         lambda choice: views.id_curve(choice),
         "Both windows sit at a third of the depth. Why can the outcome still differ?",
         "The rule only says where the states are most compressed. Whether a re-routed summary helps there "
         "depends on what the model was trained for: SmolLM2-Instruct answers questions, Gemma 3 270M (base) "
         "continues text.", seconds=120),
))
