"""Lesson 3: summary tokens (Token Prepending and HTP), and what the Jacobian says about last-token against mean
readout."""

from ui.lessons import views
from ui.lessons.base import Control, Lesson, Step
from ui.lessons.why_last import TEXTS

TEXT = "The bank by the river raised its interest rates after the flood damaged the town."
SHORT = ("Heavy rain flooded the valley overnight. The river burst its banks near the old mill. By morning the "
         "bakery on the corner was under water, and the owner was bailing it out with a bucket.")

LESSON = Lesson("summary-tokens", "Summary tokens and what the readout sees",
                "Early tokens of a causal model never see the end of the text. Token Prepending and HTP give them "
                "a summary to read; Jacobians measure which input tokens the embedding really depends on.", (
    Step("A placeholder that carries the summary",
         "Token Prepending puts one placeholder before the text. In the early layers, the placeholder's state is "
         "overwritten with the final token's state from the layer before: a summary of the whole sentence, which "
         "every later token can now read. After a few layers (7/32 of the depth) the model runs as usual. The "
         "bars show which words the final token reads, with and without the placeholder.",
         Control("text", "Your text", TEXT),
         lambda text: views.word_reading([("prompteol", {}), ("token_prepending", {})], text),
         "Why stop rewriting after a few layers?",
         "Later layers have learned to expect ordinary token states; the summary is most useful early, where the "
         "text tokens still have time to use it.", seconds=30),
    Step("HTP: one summary per sentence",
         "HTP (hierarchical token prepending) gives each sentence its own summary token and adds a global one, "
         "and reads the mean of the text's states from an early exit. On one-sentence inputs it has a single "
         "block. Compare the similarity matrices with PromptEOL's: which separates the meanings best here?",
         Control("texts", "Your sentences (one per line)", TEXTS),
         lambda texts: views.similarity([("prompteol", {}), ("token_prepending", {}), ("htp", {})], texts),
         "Why does HTP read a mean rather than the last token?",
         "Its paper argues that the last token's dependence on early tokens decays along a long text, so a mean "
         "over all positions keeps them; the next steps test that argument.", seconds=30),
    Step("Which tokens can move the embedding?",
         "The Jacobian of the embedding with respect to each input token's vector says how much that token can "
         "change the result. The HTP paper expects the last-token readout to forget early tokens and the mean "
         "readout to stay flat. Measured on SmolLM2-135M-Instruct (docs/RESULTS-old-protocol.md), that picture "
         "does not appear: both readouts are most sensitive to the first tokens. Try your own text.",
         Control("text", "Your text", SHORT),
         lambda text: views.sensitivity("mean", text),
         "Why are the first tokens so influential?",
         "The first positions act as attention sinks: many heads park attention there, so a change at the start "
         "reaches every later state.", seconds=60),
    Step("Does HTP's rewiring change the picture?",
         "The same Jacobians with HTP's summary tokens in place. If the summaries carried late information to "
         "early positions, the curves would change shape; compare with the previous step.",
         Control("text", "Your text", SHORT),
         lambda text: views.sensitivity("htp", text),
         "What would a flat mean-readout curve mean?",
         "That every token can move the embedding about equally: no position is forgotten or favoured.",
         seconds=60),
))
