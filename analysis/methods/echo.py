"""Echo embeddings (Springer et al., 2024, "Repetition Improves Language Model Embeddings"): repeat the
text inside a rewrite prompt and mean-pool only the second copy, whose tokens can attend to the whole
first copy and so see the text's future context despite causal attention.

Layouts (`layout`): "clean" tokenizes the template as is (a BOS only if the tokenizer adds one) and pools the
second copy's text tokens. "reference" follows the reference code's README and templates: the prompt starts with
the BOS token (added when the tokenizer adds none, e.g. SmolLM2) and ends with the EOS token, which is pooled
together with the second copy.

Queries and documents: embedded alike (a retrieval query is read as any other text;
`EmbeddingMethod.as_role` returns the method itself).
"""

from dataclasses import dataclass, replace

import numpy as np

from analysis.core.deviations import Deviation
from analysis.core.params import param
from analysis.core.tokens import encode_texts, start_token
from analysis.methods.base import EmbeddingMethod, PromptParams

LAYOUTS = ("clean", "reference")

DEVIATIONS = (
    Deviation("special tokens", paper="starts the prompt with the BOS token and ends it with an EOS token pooled with "
              "the second copy (its reference code's README and templates)",
              here="tokenizes the template exactly as written and pools the second copy's text tokens (layout=clean)",
              why="the two extra tokens are a convention of the reference's tokenizers, not part of the method",
              restore="layout=reference"),
)


@dataclass(frozen=True)
class EchoParams(PromptParams):
    template: str = param("Rewrite the sentence: {text}, rewritten sentence: {text}",
                          "A rewrite prompt with the text twice, the paper's zero-shot prompt as this project read "
                          "it (not checked word for word; the reference README's templates are 'Query: ... Query "
                          "again:' and 'Document: ... Document again:'); the text must appear exactly twice.",
                          kind="template", copies=(2, 2))
    layout: str = param(
        "clean",
        "clean: the template exactly as written, mean over the second copy's tokens. reference: as the reference "
        "code's README and templates, a BOS token in front (when the tokenizer adds none) and an EOS token at the "
        "end that is pooled with the second copy.", choices=LAYOUTS)


class Echo(EmbeddingMethod):
    name = "echo"
    title = "Echo"
    summary = "Text repeated twice; mean over the second copy only."
    Params = EchoParams
    pooling = "mean"
    mean_segments = (2,)

    def prompt_template(self, tokenizer) -> str:
        if self.params.layout == "reference":
            return start_token(tokenizer) + self.template
        return self.template

    def prepare(self, backbone, texts):
        tok = backbone.tokenizer
        if self.params.layout == "clean":
            return super().prepare(backbone, texts)
        eos = tok.eos_token_id
        # one position is kept free for the final EOS, which belongs to the pooled second copy (segment 2)
        items = encode_texts(tok, self.prompt_template(tok), texts, backbone.facts.max_length - 1)
        return [replace(e, ids=np.append(e.ids, eos).astype(np.int64), segments=np.append(e.segments, 2).astype(np.int8))
                for e in items]
