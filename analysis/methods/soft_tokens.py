"""Soft-token generation (GIRCSE: Tsai et al., 2025, "Let LLMs Speak Embedding Languages: Generative Text
Embeddings via Iterative Contrastive Refinement").

After the instruction-wrapped text the model generates K *soft* tokens: at step k the next-token
distribution s_k = softmax(logits / τ) over the vocabulary is not sampled but turned into an input vector,
the probability-weighted mix of the embedding matrix d_k = s_k · E, fed back with the KV cache (one new
position per step). The embedding is the mean of the final-layer states of the K generated positions.

GIRCSE's gains come from contrastive LoRA training with a stepwise loss. `adapter=shipped` (the default) uses the
LoRA adapter this repository trains with that loss (`python -m analysis train gircse`, analysis/training/gircse.py)
for the default model, merged into a copy of the model; `adapter=causal-eos` is its fair baseline (the same LoRA,
data, steps and contrastive loss, trained on the prompt's last state without generation: read it with k=0);
`adapter=none` shows what generation alone does to the frozen model; a folder loads any PEFT adapter. `mode="hard"`
feeds the argmax token instead (greedy decoding).

`adapter=bidirectional-avg` is GIRCSE's other fair baseline (§4.1 (4)(ii), Table 2: "bidirectional attention +
average pooling", trained with the same LoRA, data, steps and loss by `train gircse --objective bidirectional-avg`):
the decoder's causal mask removed (`analysis.methods._masks`), no generation (k=0), the mean of the text's final
states. `attention=auto` reads any adapter as it was trained (its manifest's objective), so that one is read this
way wherever it is named (by name or by folder), and every other adapter causally as before.

Queries and documents. GIRCSE embeds every text of a symmetric task (STS, classification, clustering) as
"Instruct: <the task's instruction>\nQuery: <text>", and in retrieval puts an instruction on the queries only
(`embedding/instructions.py` of its code: SciFact's is "Given a scientific claim, retrieve documents that support or
refute the claim"; the corpus side is bare text). Here a document, and every text of a symmetric task, gets
`instruction`; a retrieval query gets `query_instruction` in the same format (empty: queries as documents). One
difference is declared: GIRCSE's retrieval documents are bare text, ours carry `instruction` (the symmetric tasks
need it and a document is embedded one way); `instruction=""` gives its bare documents, and bare symmetric texts too.

Layout. `collate` appends K placeholder positions (segment `GENERATED`) right after each text's tokens, so
pooling, traces and `encode_layers` see one ordinary padded batch (B, T+K). Generation itself works in
*cache columns*: each row's prompt left-padded in columns 0..T-1 and step j in column T+j for every row;
explicit position ids (from the batch) keep RoPE positions per row, and the 2D mask hides the leading pads.
Left-padding the cache whatever the batch's padding side keeps a row's generated tokens adjacent to its prompt,
which sliding-window layers need (they count the window in cache columns). The captured states are permuted
back into the batch layout at the end.

Trace names added (per text): `soft.top_ids` (K, n) int64, `soft.top_tokens` (K, n) str, `soft.top_probs`
(K, n) float32 (the n most likely tokens of s_k), `soft.entropy` (K,) float32 in nats, `soft.argmax` (K,)
int64, `soft.step_embeddings` (K, d) float32 = the readout after 1..K steps (un-normalised).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from analysis.core.deviations import Deviation
from analysis.core.errors import UserError
from analysis.core.forward import Captured, resolve_layer, run
from analysis.core.params import param
from analysis.core.tokens import PLACEHOLDER, TOKEN_BUDGET, Batch, Encoded, batches_by_length, check_texts, encode_texts
from analysis.core.trace import Trace
from analysis.core.vectors import l2_normalize
from analysis.methods._masks import ATTENTIONS, attention_mask
from analysis.methods.base import EmbeddingMethod
from analysis.weights.adapters import BIDIRECTIONAL_AVG, adapter_spec, resolve_adapter, trained_objective

GENERATED = 127  # segment id of generated positions (fits the int8 segments kept in traces)
# A generation step pushes one position per text through every layer, so on a CPU it costs about one read of
# all the weights whatever the batch: more texts per batch share that read (see scripts/bench_soft_tokens.py).
BATCH_SIZE = 64
# Generation keeps the whole pass's key-value cache (on SmolLM2 30 layers x keys and values x 192 floats per token:
# 377 MB at the library's 8,192-token budget, the part of a 4,096-token pass that took soft tokens over 2 GiB), so a
# pass holds at most half the tokens other methods' passes do. Short texts are bounded by BATCH_SIZE well before this.
GENERATION_TOKENS = TOKEN_BUDGET // 2
TOPN = 10  # most likely tokens recorded per step in traces
DEFAULT_INSTRUCTION = "Represent this text."
# A retrieval query's instruction when the task gives none (GIRCSE writes one per task, in E5-Mistral's wording).
QUERY_INSTRUCTION = "Given a query, retrieve relevant documents that answer the query"
POOLINGS = ("generated", "generated+text", "last_generated")

DEVIATIONS = (  # the training recipe's differences are the trainer's (analysis.training.gircse.DEVIATIONS)
    Deviation("instruction", paper="gives every task its own instruction, 'Instruct: <task>\\nQuery:<text>' (no "
              "space after 'Query:' in its reference code)", here="uses one neutral instruction, 'Represent this "
              "text.', with a space after 'Query:'", why="the shipped adapters were trained with it, and one "
              "instruction keeps one cache entry per text", restore="instruction=<the task's instruction>"),
    Deviation("retrieval documents", paper="embeds retrieval documents as bare text, instructions on queries only "
              "(its reference code; a non-retrieval task's texts all get the instruction)",
              here="puts `instruction` before documents too", why="a document is embedded one way here, and the "
              "symmetric tasks need the instruction", restore="instruction= (bare documents, and bare symmetric "
              "texts too)"),
)


@dataclass(frozen=True)
class SoftTokenParams:
    k: int = param(5, "Soft tokens generated after the input. GIRCSE trains with 5 and reports that 5 -> 20 at "
                      "test time keeps improving its trained models; 0 = no generation (last prompt token: the "
                      "readout of the Causal-EOS baseline; with bidirectional attention the text's mean state, "
                      "Bidirectional-Avg's).",
                   min=0, max=64)
    temperature: float = param(1.0, "τ in softmax(logits/τ). GIRCSE mixes the model's plain next-token "
                                    "distribution (τ=1); τ -> 0 tends to the argmax token.", min=1e-4, max=10.0)
    top_k: int = param(0, "Mix only the k most likely tokens (renormalised); 0 = the whole vocabulary, as GIRCSE.",
                       min=0)
    instruction: str = param(DEFAULT_INSTRUCTION, "Task instruction placed before the text as "
                             "'Instruct: ...\\nQuery: <text>' (GIRCSE's format); a neutral default. Write an "
                             "intention or emotion instruction to steer what the tokens express; empty = text only. "
                             "Documents and every text of a symmetric task get it.")
    query_instruction: str = param(QUERY_INSTRUCTION, "Instruction on retrieval queries, in the same format, as "
                                   "GIRCSE instructs queries only (its per-task wording, e.g. SciFact's 'Given a "
                                   "scientific claim, retrieve documents that support or refute the claim'); a "
                                   "generic one by default; empty = queries embedded as documents.")
    pooling: str = param("generated", "generated = mean of the K generated states (GIRCSE); generated+text = mean "
                         "over the text's tokens and the generated ones; last_generated = the K-th state only.",
                         choices=list(POOLINGS))
    mode: str = param("soft", "soft = probability-weighted mix of token embeddings (GIRCSE); hard = the argmax "
                      "token (greedy decoding), the discrete baseline.", choices=["soft", "hard"])
    layer: int = param(-1, "Hidden state read out at the generated positions; GIRCSE uses the final layer.",
                       kind="layer")
    adapter: str = param("shipped", "LoRA adapter merged into a copy of the model: shipped = the one this repository "
                         "trained with GIRCSE's contrastive refinement (`python -m analysis train gircse`) for this "
                         "model (the default model has one; other models stay frozen); causal-eos = its fair "
                         "baseline, trained with the same LoRA, data, steps and loss on the prompt's last state, no "
                         "generation: use k=0, its trained readout; with k > 0 it generates soft tokens like any "
                         "model though it was never trained to, which shows what generation alone adds to "
                         "contrastive training; bidirectional-avg = its other fair baseline (the causal mask "
                         "removed, the mean of the text's states, no generation: k=0); none = the frozen model; or "
                         "the folder of a PEFT adapter.")
    attention: str = param("auto", "The decoder's attention: causal, or bidirectional = the causal mask removed, the "
                           "text's states averaged, nothing generated (k=0): GIRCSE's Bidirectional-Avg baseline. auto "
                           "= as the adapter was trained (bidirectional for a Bidirectional-Avg adapter, else causal).",
                           choices=["auto", *ATTENTIONS])


@dataclass
class SoftCaptured(Captured):
    """Captured states in the batch layout plus what each generation step saw."""

    top_ids: torch.Tensor | None = None  # (B, K, n) most likely tokens of s_k
    top_probs: torch.Tensor | None = None  # (B, K, n)
    entropy: torch.Tensor | None = None  # (B, K) nats
    argmax: torch.Tensor | None = None  # (B, K)
    inputs: torch.Tensor | None = None  # (B, K, d) vectors fed at the generated positions
    probs: torch.Tensor | None = None  # (B, K, V) whole distributions, only with keep_probs


# ---- the mechanism, usable on its own ---------------------------------------------------------------------
def generation_budget(max_tokens: int | None) -> int:
    """A caller's padded-token budget per pass ("at most", None = none) within `GENERATION_TOKENS`: a lower bound
    still honours the caller's, and no caller can make one pass hold a key-value cache for a whole corpus."""
    return GENERATION_TOKENS if max_tokens is None else min(int(max_tokens), GENERATION_TOKENS)


def next_token_logits(backbone, h: torch.Tensor) -> torch.Tensor:
    """(B, d) final states (after the final norm) -> (B, V) logits, as the causal-LM head computes them."""
    logits = backbone.model.get_output_embeddings()(h)  # (B, V)
    cfg = backbone.model.config.get_text_config()
    cap = getattr(cfg, "final_logit_softcapping", None)  # Gemma-2/3 squash logits; absent elsewhere
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def token_distribution(logits: torch.Tensor, temperature: float, top_k: int = 0) -> torch.Tensor:
    """s = softmax(logits / τ), optionally restricted to the top-k logits and renormalised. (B, V) -> (B, V)."""
    z = logits.to(torch.promote_types(logits.dtype, torch.float32)) / temperature  # half -> float32
    if 0 < top_k < z.shape[-1]:
        vals, idx = z.topk(top_k, dim=-1)  # (B, k)
        return torch.zeros_like(z).scatter_(-1, idx, torch.softmax(vals, dim=-1))
    return torch.softmax(z, dim=-1)


def embed_mix(backbone, probs: torch.Tensor) -> torch.Tensor:
    """d = s · E: (B, V) -> (B, d), on the same scale the embedding module gives a token (Gemma multiplies its
    embeddings by sqrt(d) inside the module, so a one-hot s reproduces the token's input vector exactly)."""
    emb = backbone.input_embeddings
    mixed = probs.to(emb.weight.dtype) @ emb.weight  # (B, d)
    scale = getattr(emb, "embed_scale", None)
    return mixed * scale.to(mixed.dtype) if isinstance(scale, torch.Tensor) else mixed * (scale or 1.0)


def generate(backbone, batch: Batch, layers, *, temperature: float = 1.0, top_k: int = 0, mode: str = "soft",
             attention: bool = False, topn: int = TOPN, keep_probs: bool = False) -> SoftCaptured:
    """Run the prompt once, then one cached step per `GENERATED` slot of `batch`; states in the batch layout.

    Args:
        batch: from `SoftTokens.collate`: every row has the same number K of `GENERATED` slots after its text.
        layers: hidden-state indices or "all" (the final one is always computed: it gives the logits).
        attention: also return attention weights (B, H, T+K, T+K) in the batch layout (eager backend).
        topn: how many of each step's most likely tokens to record.
        keep_probs: also return every step's whole distribution (B, K, V) (for one or a few texts).
    """
    from transformers import DynamicCache  # lazy: keeps transformers off the pages' and the command line's start

    L = backbone.facts.n_layers
    layers = range(L + 1) if layers == "all" else layers
    wanted = sorted({resolve_layer(L, l) for l in layers} | {L})
    gen = batch.segments == GENERATED  # (B, S)
    B, S = gen.shape
    K = int(gen[0].sum())
    if not bool((gen.sum(dim=1) == K).all()):
        raise ValueError("every row must have the same number of generated slots")
    T = S - K
    order, prompt, gen_pos = _cache_layout(batch, gen, T)

    # run() calls the decoder with use_cache=False; a cache passed explicitly is still read and extended by
    # every attention layer (use_cache only decides whether the decoder creates and returns one).
    cache = DynamicCache(config=backbone.model.config)
    cap = run(backbone, prompt, wanted, attention=attention, past_key_values=cache)
    states = {l: [cap.hidden[l]] for l in wanted}  # cache layout, (B, T, d) then (B, 1, d) per step
    att_steps = [cap.attention] if attention else []
    rows = torch.arange(B)
    h = cap.hidden[L][rows, prompt.last_index]  # (B, d) state that predicts the first generated token
    mask = prompt.attention_mask
    top_ids, top_probs, entropy, argmax, fed, kept = [], [], [], [], [], []
    for j in range(K):
        probs = token_distribution(next_token_logits(backbone, h), temperature, top_k)  # (B, V)
        p, i = probs.topk(min(topn, probs.shape[-1]), dim=-1)  # (B, n)
        top_ids.append(i)
        top_probs.append(p)
        entropy.append(torch.special.entr(probs).sum(dim=-1))  # (B,), 0·log 0 = 0
        argmax.append(i[:, 0])
        if keep_probs:
            kept.append(probs)
        if mode == "hard":
            x = backbone.input_embeddings(i[:, :1])  # (B, 1, d): exactly the token's input path
        else:
            x = embed_mix(backbone, probs).unsqueeze(1)  # (B, 1, d)
        fed.append(x[:, 0])
        mask = torch.cat([mask, mask.new_ones(B, 1)], dim=1)  # (B, T+j+1): the leading pads stay hidden
        step = run(backbone, None, wanted, attention=attention, inputs_embeds=x, attention_mask=mask,
                   position_ids=gen_pos[:, j:j + 1], past_key_values=cache)
        for l in wanted:
            states[l].append(step.hidden[l])
        if attention:
            att_steps.append(step.attention)
        h = step.hidden[L][:, 0]  # (B, d)

    out = _batch_layout(states, att_steps, order, T)
    d = backbone.facts.hidden_size
    stack = (lambda xs, *shape: torch.stack(xs, dim=1) if xs else torch.zeros(B, 0, *shape))
    out.top_ids, out.top_probs = stack(top_ids, topn).long(), stack(top_probs, topn)
    out.entropy, out.argmax, out.inputs = stack(entropy), stack(argmax).long(), stack(fed, d)
    if keep_probs:
        out.probs = stack(kept, backbone.model.get_output_embeddings().out_features)
    return out


def _cache_layout(batch: Batch, gen, T: int):
    """(order, the prompt as a left-padded Batch, (B, K) positions of the generated slots). Cache column i holds batch
    column order[b, i]: the prompt's pads, its real tokens, then the K slots. The cache is always left-padded, so no
    pad gap separates a row's prompt from its generated tokens: sliding-window layers (Gemma 3, Mistral) measure the
    window in cache columns, and a gap would shrink it."""
    rank = torch.where(gen, 2, batch.attention_mask.to(torch.int8))  # (B, S): 0 pad, 1 prompt token, 2 slot
    order = torch.argsort(rank, dim=1, stable=True)  # (B, S)
    prompt_cols, gen_cols = order[:, :T], order[:, T:]  # (B, T), (B, K)
    prompt = Batch(batch.input_ids.gather(1, prompt_cols), batch.attention_mask.gather(1, prompt_cols),
                   batch.position_ids.gather(1, prompt_cols), batch.segments.gather(1, prompt_cols), "left")
    return order, prompt, batch.position_ids.gather(1, gen_cols)  # row b's step j sits at its length + j


def _batch_layout(states: dict, att_steps: list, order, T: int) -> SoftCaptured:
    """The prompt's and every step's hidden states (and attention weights) moved from the cache layout back into the
    batch layout."""
    B, S = order.shape
    inverse = torch.argsort(order, dim=1)  # batch column c is cache column inverse[b, c]
    out = SoftCaptured()
    for l, parts in states.items():
        x = torch.cat(parts, dim=1)  # (B, S, d) cache layout
        out.hidden[l] = x.gather(1, inverse.unsqueeze(-1).expand_as(x))  # (B, S, d) batch layout
    for layer in (att_steps[0] if att_steps else {}):
        H = att_steps[0][layer].shape[1]
        full = att_steps[0][layer].new_zeros(B, H, S, S)  # (B, H, S, S) cache layout
        full[:, :, :T, :T] = att_steps[0][layer]
        for j, a in enumerate(att_steps[1:]):
            full[:, :, T + j, : T + j + 1] = a[layer][:, :, 0]
        idx = inverse[:, None, :, None].expand(B, H, S, S)
        full = full.gather(2, idx)  # query rows into the batch layout
        out.attention[layer] = full.gather(3, idx.transpose(2, 3))  # key columns too
    return out


# ---- the method -------------------------------------------------------------------------------------------
class SoftTokens(EmbeddingMethod):
    name = "soft_tokens"
    bench_reference = {"k": 0}  # benchmark: against the same prompt's forward without generation
    title = "Soft tokens (GIRCSE)"
    summary = "Generate K soft tokens (probability-weighted embeddings) with the KV cache; mean of their states."
    Params = SoftTokenParams

    def validate(self, params):
        for name in ("instruction", "query_instruction"):
            if PLACEHOLDER in getattr(params, name):
                raise UserError(f"soft_tokens: the {name} must not contain {PLACEHOLDER}; the text is added after it.")
        # The key of cached results includes the params: record the adapter's content, not only its path.
        spec = adapter_spec(params.adapter)
        attention = params.attention
        if attention == "auto":  # read an adapter the way it was trained
            attention = "bidirectional" if trained_objective(spec) == BIDIRECTIONAL_AVG else "causal"
        if attention == "causal":
            return dataclasses.replace(params, adapter=spec, attention=attention)
        if params.k:
            raise UserError(f"soft_tokens: bidirectional attention (the Bidirectional-Avg baseline's) reads the prompt "
                            f"without generating, so k={params.k} has nothing to read: use k=0.")
        # one spelling of its readout, the mean of the text's states (= generated+text at k=0), for cache keys
        return dataclasses.replace(params, adapter=spec, attention=attention, pooling="generated+text")

    def asymmetric(self) -> bool:
        return bool(self.params.query_instruction.strip()) and \
            self.params.query_instruction.strip() != self.params.instruction.strip()

    @property
    def template(self) -> str:
        p = self.params
        instruction = (p.query_instruction if self.role == "query" and self.asymmetric() else p.instruction).strip()
        return f"Instruct: {instruction}\nQuery: {PLACEHOLDER}" if instruction else PLACEHOLDER

    # The base class uses these two for traces' pool_mask; readout_at is the single source of truth.
    @property
    def readout_pooling(self) -> str:
        p = self.params
        return "last" if p.pooling == "last_generated" or (p.k == 0 and p.pooling == "generated") else "mean"

    @property
    def mean_segments(self):
        if self.params.pooling == "generated+text":
            return (1, GENERATED) if self.params.k else (1,)
        return (GENERATED,)

    def prepare(self, backbone, texts: list[str]) -> list[Encoded]:
        room = backbone.facts.max_length - self.params.k  # the generated tokens need positions too
        if room < 2:
            raise UserError(f"soft_tokens: k={self.params.k} leaves no room for text in this model's "
                            f"{backbone.facts.max_length} positions.")
        return encode_texts(backbone.tokenizer, self.template, texts, room)

    def collate(self, backbone, items: list[Encoded], padding_side: str) -> Batch:
        k, pad = self.params.k, backbone.tokenizer.pad_token_id
        slots = [Encoded(np.concatenate([e.ids, np.full(k, pad, dtype=np.int64)]),
                         np.concatenate([e.segments, np.full(k, GENERATED, dtype=np.int8)]), e.truncated)
                 for e in items]
        return super().collate(backbone, slots, padding_side)

    def forward(self, backbone, batch: Batch, layers, attention: bool = False, trace: bool = False) -> Captured:
        p = self.params
        with attention_mask(backbone, p.attention, attention=attention):  # bidirectional: the prompt pass only (k=0)
            return generate(backbone, batch, layers, temperature=p.temperature, top_k=p.top_k, mode=p.mode,
                            attention=attention)

    def readout(self, hidden: torch.Tensor, batch: Batch) -> torch.Tensor:
        return readout_at(hidden, batch, self.params.k, self.params.pooling)

    def trace_batch(self, backbone, batch: Batch, cap: SoftCaptured, trace: Trace) -> None:
        n_before = len(trace.tokens)
        super().trace_batch(backbone, batch, cap, trace)
        tok = backbone.tokenizer
        layer = resolve_layer(backbone.facts.n_layers, self.params.layer)
        hidden = cap.hidden[layer]  # (B, S, d)
        K = self.params.k
        steps = torch.stack([readout_at(hidden, batch, k, self.params.pooling) for k in range(1, K + 1)], dim=1) \
            if K else hidden.new_zeros(hidden.shape[0], 0, hidden.shape[-1])  # (B, K, d)
        for b in range(batch.input_ids.shape[0]):
            ids = cap.top_ids[b]  # (K, n)
            trace.add("soft.top_ids", [ids.numpy()])
            trace.add("soft.top_tokens", [np.array([[token_text(tok, int(i)) for i in row] for row in ids],
                                                   dtype=str).reshape(ids.shape)])
            trace.add("soft.top_probs", [cap.top_probs[b].float().numpy()])
            trace.add("soft.entropy", [cap.entropy[b].float().numpy()])
            trace.add("soft.argmax", [cap.argmax[b].numpy()])
            trace.add("soft.step_embeddings", [steps[b].float().numpy()])
            # Generated positions have no token of their own: label them with their most likely token.
            real = batch.attention_mask[b].nonzero().squeeze(1)
            is_gen = (batch.segments[b, real] == GENERATED).tolist()
            names = iter(f"⟨{token_text(tok, int(i))}⟩" for i in cap.argmax[b])
            trace.tokens[n_before + b] = [next(names) if g else t for t, g in zip(trace.tokens[n_before + b], is_gen)]

    # ---- entry points: the adapter (if any) is merged into a copy of the model once -------------------------
    def encode(self, backbone, texts, *, batch_size: int = BATCH_SIZE, max_tokens: int | None = GENERATION_TOKENS,
               **kwargs):
        return super().encode(self.adapted(backbone), texts, batch_size=batch_size,
                              max_tokens=generation_budget(max_tokens), **kwargs)

    def encode_layers(self, backbone, texts, layers="all", *, batch_size: int = BATCH_SIZE,
                      max_tokens: int | None = GENERATION_TOKENS, **kwargs):
        return super().encode_layers(self.adapted(backbone), texts, layers, batch_size=batch_size,
                                     max_tokens=generation_budget(max_tokens), **kwargs)

    def adapted(self, backbone):
        """The backbone with this method's adapter merged into a copy (the same object when there is none)."""
        return resolve_adapter(backbone, self.params.adapter)

    def encode_steps(self, backbone, texts, ks, *, batch_size: int = BATCH_SIZE, normalize: bool = True,
                     padding_side: str = "right", progress=None) -> np.ndarray:
        """Embeddings for several K from one generation of max(ks) tokens: (n, len(ks), d).

        Generation is causal, so the first k steps of a longer run are exactly a run with K=k (the tests check
        it); k=0 is the no-generation readout (last prompt token, or the text mean for generated+text).
        """
        ks = [int(k) for k in ks]
        if not ks or min(ks) < 0:
            raise UserError("soft_tokens: give one or more K >= 0.")
        run_k = dataclasses.replace(self.params, k=max(ks))
        method = type(self)(run_k)
        backbone = method.adapted(backbone)
        texts = check_texts(texts)
        layer = resolve_layer(backbone.facts.n_layers, self.params.layer)
        items = method.prepare(backbone, texts)
        out = np.zeros((len(texts), len(ks), backbone.facts.hidden_size), dtype=np.float32)
        done = 0
        with torch.inference_mode(), backbone.lock:
            for idx in batches_by_length([len(e) for e in items], batch_size):
                batch = method.collate(backbone, [items[i] for i in idx], padding_side)
                cap = method.forward(backbone, batch, [layer])
                for j, k in enumerate(ks):
                    out[idx, j] = readout_at(cap.hidden[layer], batch, k, self.params.pooling).float().numpy()
                done += len(idx)
                if progress is not None:
                    progress(done, len(texts))
        if normalize:
            out = l2_normalize(out, axis=-1)
        return out


def readout_at(hidden: torch.Tensor, batch: Batch, k: int, pooling: str) -> torch.Tensor:
    """The embedding a run with K=k gives, read from a batch with >= k generated slots. (B, S, d) -> (B, d)."""
    gen = batch.segments == GENERATED  # (B, S)
    rank = gen.long().cumsum(dim=1)  # (B, S): 1..K at the generated slots
    first_k = gen & (rank <= k)
    text = batch.segments == 1
    if pooling == "generated+text":
        keep = (first_k | text).to(hidden.dtype)  # (B, S)
        return (hidden * keep.unsqueeze(-1)).sum(dim=1) / keep.sum(dim=1, keepdim=True)
    rows = torch.arange(hidden.shape[0])
    if k == 0:  # no generation: the state that predicts the first token
        prompt = batch.attention_mask.bool() & ~gen
        pos = torch.arange(gen.shape[1]).expand_as(gen)
        return hidden[rows, torch.where(prompt, pos, -1).max(dim=1).values]
    if pooling == "last_generated":
        return hidden[rows, (gen & (rank == k)).long().argmax(dim=1)]
    if pooling == "generated":
        keep = first_k.to(hidden.dtype)
        return (hidden * keep.unsqueeze(-1)).sum(dim=1) / keep.sum(dim=1, keepdim=True)
    raise ValueError(f"unknown pooling {pooling!r}; choose one of {POOLINGS}")


def token_text(tokenizer, token_id: int) -> str:
    """Readable text of one token id (ids past the tokenizer's vocabulary are padding rows of the matrix)."""
    if token_id >= len(tokenizer):
        return f"<id {token_id}>"
    return tokenizer.decode([token_id])
