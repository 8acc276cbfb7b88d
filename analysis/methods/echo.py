"""Echo embeddings (Springer et al., 2024, "Repetition Improves Language Model Embeddings"): repeat the
text inside a rewrite prompt and mean-pool only the second copy, whose tokens can attend to the whole
first copy and so see the text's future context despite causal attention."""

from dataclasses import dataclass

from analysis.methods.base import EmbeddingMethod, PromptParams, param


@dataclass(frozen=True)
class EchoParams(PromptParams):
    template: str = param("Rewrite the sentence: {text}, rewritten sentence: {text}",
                          "The paper's symmetric-task prompt; the text must appear exactly twice.",
                          kind="template", copies=(2, 2))


class Echo(EmbeddingMethod):
    name = "echo"
    title = "Echo"
    summary = "Text repeated twice; mean over the second copy only."
    Params = EchoParams
    pooling = "mean"
    mean_segments = (2,)
