"""Sentence-pool context compression: each sentence of a context becomes one vector from a frozen sentence
encoder, a trained linear adapter maps it into the decoder's input space as one prefix position, and the decoder
(frozen, with a small LoRA) answers questions about the facts in the compressed context.

Input layout, one row per question (positions left to right)::

    [start] ([identifier tokens] [pool])*  "\\nQuestion: <q>\\nAnswer:"  " <answer>" [eos]
    sentence: one pool per sentence   paragraph: one pool for the joined context
    text: "Context: <sentences>" as ordinary tokens instead of pools   none: no context at all

The start token (the tokenizer's BOS, else EOS) keeps position 0 an ordinary token: it is the model's attention
sink, and a pool there would be read differently. Identifier tokens (option `ids`) are the literal tokens
" [<name>]" in front of a pool. An item with one identifier per sentence (`QA.ids`, JSON "ids": the person each
sentence is about) gets, before each sentence's pool, the name of the person THAT sentence is about (the source's
Experiment B2; before every pool, also within a grouped person's run of sentences; an empty name puts nothing
there); its one paragraph pool gets every named person in order of first mention. An item without per-sentence
ids gets its single identifier (`QA.identifier`, JSON "id") before every pool, as before.

    sys = CompressionSystem.from_artefact(backbone)            # the shipped adapter + LoRA
    sys.answer([qa], mode="sentence")                          # ["Lyon"]
    sys.reconstruct([qa])                                      # the paragraph back from its pools (Experiment C)

Reconstruction (the source's Experiment C): a row whose question is `RECONSTRUCT_QUESTION` and whose answer is the
context's text asks for the paragraph back from its pools; `row(..., content_weight=3)` weighs the answer tokens of
content words (not in `FUNCTION_WORDS`) three times in the loss (`Row.weights`), as the source does, and
`reconstruction_scores` gives token F1 (bag of words, SQuAD's) and exact match of what `reconstruct` generates.
"""

from __future__ import annotations

import copy
import math
import re
import string
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.core.partition import _segmenter
from analysis.eval.stats import wilson
from analysis.models import minilm  # by module: tests replace load_encoder
from analysis.models.minilm import encoder_identity
from analysis.weights.artefacts import artefact_digest, load_artefact, read_manifest, shipped_dir
from analysis.weights.lora import add_lora, lora_config, lora_tensors

MODES = ("sentence", "paragraph", "text", "none")
TABLE_MODES = ("sentence", "sentence+ids", "paragraph", "text", "none")  # "+ids": identifier tokens before pools
SCALING_SIZES = (5, 10, 20, 50, 100)  # pools per context for the scaling curve (5 = the facts alone)


def split_mode(mode: str) -> tuple[str, bool]:
    """"sentence+ids" -> ("sentence", True)."""
    return mode.split("+")[0], mode.endswith("+ids")
ENCODER_DIM = 384
MAX_SENTENCE_TOKENS = 128  # the encoder's training length; a longer "sentence" is almost surely a paragraph
METHOD = "compression"
RECONSTRUCT_QUESTION = "Repeat the context word for word."
RECONSTRUCT_SLACK = 8  # tokens a reconstruction may run past its context's length before generation stops
# Function words weigh 1 in a reconstruction's loss, every other word `content_weight` (the source: 3): the facts are
# in the content words, and a decoder can fill in "the" and "in" from the template it has learnt.
FUNCTION_WORDS = frozenset("""a an the and or but nor so yet of in on at to by for from with about as into onto upon
over under after before during since until up down out off than then there here this that these those is are was were be
been being am do does did has have had will would shall should can could may might must it its he him his she her hers
they them their we us our you your i me my who whom whose which what when where why how all every each some any no
not one very too also just""".split())


@dataclass(frozen=True)
class CompressionConfig:
    lora_rank: int = 16  # source: rank 16
    lora_alpha: int = 32  # source: alpha 32 (scale 2)
    lora_first_layer: float = 0.5  # LoRA on q/v of the last half of the decoder layers (source)
    adapter_init_std: float = 0.02  # source: N(0, 0.02^2) weights, zero bias
    # The adapter reads pool_scale * v and starts at std adapter_init_std / pool_scale: the same function at
    # initialisation, but AdamW's per-weight steps (~lr) move its output pool_scale times faster, i.e. the
    # adapter's learning rate is pool_scale x the LoRA's. Needed here: MiniLM vectors of two facts differ by
    # ~0.4 in norm, a word embedding has norm ~3.2, and at scale 1 a few hundred steps of lr 2e-3 never grew
    # the adapter enough for the decoder to tell pools apart (validation stayed at the no-context level).
    pool_scale: float = 1.0
    max_answer_tokens: int = 12  # the longest persona answer (a full name) is < 10 tokens


# ---------------------------------------------------------------------------------------------------------
# The frozen sentence encoder: the shared all-MiniLM-L6-v2 loader (analysis.models.minilm), raw mean pool.

def encode_sentences(sentences: list[str]) -> np.ndarray:
    """(n, 384) float32 mean-pooled MiniLM vectors, not normalised (the source feeds the raw mean pool)."""
    return minilm.load_encoder().embed(list(sentences), normalize=False).numpy().astype(np.float32)


def encoder_token_count(sentence: str) -> int:
    return len(minilm.load_encoder().tokenizer(sentence, add_special_tokens=False)["input_ids"])


def encoder_name() -> str:
    return encoder_identity()


# ---------------------------------------------------------------------------------------------------------
# Items -> rows of token ids with pool slots -> a padded batch.

@dataclass
class Row:
    ids: list[int]  # token ids; pool positions hold the pad id (replaced by the adapter's output)
    pool: list[int]  # per position: index into `vectors` or -1
    labels: list[int]  # per position: the token id to predict *at this position* or -100
    vectors: np.ndarray  # (P, 384) this row's pools
    context_tokens: int  # the context as text, in decoder tokens (for the compression ratio)
    context_positions: int  # positions the context takes in this row (pools + identifier tokens, or tokens)
    weights: list[float] | None = None  # per position: the loss weight of its label (None: every label weighs 1)


@dataclass
class PoolBatch:
    ids: torch.Tensor  # (B, T)
    mask: torch.Tensor  # (B, T) 1 = real
    position_ids: torch.Tensor  # (B, T) from the mask, so the padding side never changes a result
    pool: torch.Tensor  # (B, T) index into `vectors` (flat over the batch) or -1
    labels: torch.Tensor  # (B, T)
    vectors: torch.Tensor  # (N, 384) every pool of the batch
    weights: torch.Tensor | None = None  # (B, T) loss weight of each label; None when every row weighs its labels 1


def check_item(item: dict, where: str = "") -> None:
    """One sentence for each kind of bad item (used for user JSONL)."""
    for k in ("context", "question", "answer"):
        if k not in item:
            raise UserError(f"{where}missing field '{k}' (each line needs context, question and answer).")
    ctx = item["context"]
    if isinstance(ctx, str):
        raise UserError(f"{where}'context' must be a list of sentences, not one string.")
    if not isinstance(ctx, list) or not ctx or not all(isinstance(s, str) and s.strip() for s in ctx):
        raise UserError(f"{where}'context' must be a non-empty list of non-empty sentences.")
    check_sentences(len(ctx), where)
    ids = item.get("ids")
    if ids is not None and not (isinstance(ids, list) and len(ids) == len(ctx)
                                and all(isinstance(i, str) for i in ids)):
        raise UserError(f"{where}'ids' must be a list of {len(ctx)} strings, one per context sentence (the person "
                        "each sentence is about).")
    if not isinstance(item["question"], str) or not item["question"].strip():
        raise UserError(f"{where}'question' must be a non-empty string.")
    if not isinstance(item["answer"], str) or not item["answer"].strip():
        raise UserError(f"{where}'answer' must be a non-empty string.")


def check_sentences(n: int, where: str = "") -> None:
    """A context's sentence count against the budget (one pool, one decoder position each), before any work."""
    at = f" ({where.rstrip(': ')})" if where else ""
    budgets.check("context_sentences", n, f"the number of sentences in one context{at}")


def split_sentences(text: str) -> list[str]:
    """A paragraph -> its sentences (pysbd, as the prepending methods split)."""
    return [s.sent.strip() for s in _segmenter().segment(text) if s.sent.strip()] if text.strip() else []


def normalise_answer(s: str) -> str:
    """Exact-match normal form: lower case, surrounding whitespace and punctuation removed."""
    return s.strip().strip(string.punctuation + " \t\n").lower()


class CompressionSystem:
    """The adapter + LoRA decoder around a loaded backbone. The backbone itself is never modified: the LoRA
    lives on a private copy of its model (other views keep using the plain model)."""

    def __init__(self, backbone, config: CompressionConfig = CompressionConfig(), *, seed: int = 0, encoder=None):
        self.backbone, self.config = backbone, config
        tok = backbone.tokenizer
        self.start_id = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        self.eos_id = tok.eos_token_id
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        torch.manual_seed(seed)
        d = backbone.facts.hidden_size
        self.adapter = torch.nn.Linear(ENCODER_DIM, d)
        torch.nn.init.normal_(self.adapter.weight, std=config.adapter_init_std / config.pool_scale)
        torch.nn.init.zeros_(self.adapter.bias)
        n = backbone.facts.n_layers
        first = int(n * config.lora_first_layer)
        self.lora = lora_config(config.lora_rank, config.lora_alpha, layers=list(range(first, n)))
        with backbone.lock:
            model = copy.deepcopy(backbone.model)
        self.model = add_lora(model, self.lora)  # B = 0 at init: the LoRA model starts equal to the base
        self.model.eval()
        self.lora_layers = (first, n)
        self.weights_digest = f"init:seed{seed}"  # cache-key part; an artefact's digest once loaded
        self.manifest: dict = {}
        self._vec_cache: dict[str, np.ndarray] = {}
        self._encode = encoder or encode_sentences  # list[str] -> (n, 384); tests pass a cheap stand-in

    # -- parameters and persistence ---------------------------------------------------------------------
    @property
    def causal(self):
        """The decoder copy with the LoRA layers (a *ForCausalLM)."""
        return self.model

    def trainable(self) -> list[torch.nn.Parameter]:
        lora = [p for n, p in self.model.named_parameters() if "lora_" in n]
        for p in lora:
            p.requires_grad_(True)
        self.adapter.requires_grad_(True)
        return list(self.adapter.parameters()) + lora

    def project(self, vectors: torch.Tensor) -> torch.Tensor:
        """(N, 384) pooled sentence vectors -> (N, d) decoder input vectors."""
        return self.adapter(vectors * self.config.pool_scale)

    def tensors(self) -> dict[str, torch.Tensor]:
        out = {f"adapter.{k}": v.detach().clone() for k, v in self.adapter.state_dict().items()}
        out.update(lora_tensors(self.model))
        return out

    def load_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        params = {n: p for n, p in self.model.named_parameters() if "lora_" in n}
        lora = {k[5:]: v for k, v in tensors.items() if k.startswith("lora.")}
        if set(lora) != set(params) or any(params[k].shape != v.shape for k, v in lora.items()):
            raise UserError("These compression weights do not fit this model's LoRA layout.")
        adapter = {k[8:]: v for k, v in tensors.items() if k.startswith("adapter.")}
        want = {k: tuple(v.shape) for k, v in self.adapter.state_dict().items()}
        if {k: tuple(v.shape) for k, v in adapter.items()} != want:
            raise UserError(f"These compression weights map the encoder to another hidden size: the model needs an "
                            f"adapter of shape {want.get('weight')}.")
        with torch.no_grad():
            for k, v in lora.items():
                params[k].copy_(v)
        self.adapter.load_state_dict(adapter)

    @classmethod
    def from_artefact(cls, backbone, folder: str | Path | None = None):
        folder = Path(folder) if folder else default_artefact(backbone)
        if not (folder / "manifest.json").exists():
            raise UserError(f"No compression weights at {folder}; train them with `python -m analysis train "
                            "compression`.")
        system = cls(backbone, manifest_config(read_manifest(folder), backbone, folder))  # its fresh tensors give the shapes the file must hold, read from its header
        tensors, manifest = load_artefact(folder, method=METHOD, model_identity=backbone.identity,
                                          encoder=encoder_name(),
                                          shapes={k: tuple(v.shape) for k, v in system.tensors().items()})
        system.load_tensors(tensors)
        system.manifest, system.weights_digest = manifest, artefact_digest(folder)
        return system

    # -- building rows --------------------------------------------------------------------------------------
    def _tok(self, text: str) -> list[int]:
        return self.backbone.tokenizer(text, add_special_tokens=False)["input_ids"]

    def vectors(self, sentences: list[str]) -> np.ndarray:
        """(n, 384) pools, memoised per sentence (training reuses the same sentences many times)."""
        missing = list(dict.fromkeys(s for s in sentences if s not in self._vec_cache))
        if missing:
            for s, v in zip(missing, self._encode(missing)):
                self._vec_cache[s] = v
        return np.stack([self._vec_cache[s] for s in sentences]) if sentences else np.zeros((0, ENCODER_DIM),
                                                                                             np.float32)

    def row(self, item, mode: str, *, ids: bool = False, with_answer: bool = True, encode: bool = True,
            content_weight: float = 1.0) -> Row:
        """One item (a `personas.QA` or a dict) as a row. `with_answer=False` stops after "Answer:"; `encode=False`
        lays the row out without its pool vectors (no encoder runs: `check_contexts` measures rows this way);
        `content_weight` != 1 weighs the answer tokens of content words that much in the loss (`Row.weights`)."""
        get = (lambda k, d=None: item.get(k, d)) if isinstance(item, dict) else \
            (lambda k, d=None: getattr(item, "identifier" if k == "id" else k, d))
        context, question, answer = list(get("context")), get("question"), get("answer")
        if mode not in MODES:
            raise UserError(f"Unknown pools mode '{mode}'; choose from {', '.join(MODES)}.")
        names = list(get("ids", ()) or ()) or [get("id", "") or ""] * len(context)  # one per sentence
        if len(names) != len(context):
            raise UserError(f"An item has {len(names)} ids for {len(context)} context sentences; give one per "
                            "sentence.")
        if ids and mode in ("sentence", "paragraph") and not any(names):
            raise UserError("Identifier tokens need an 'id' (or 'ids', one per sentence) for every item: the name "
                            "the sentences are about.")
        text = " ".join(s.strip() for s in context)
        context_tokens = len(self._tok(" " + text))
        toks, pool, vectors = [self.start_id], [-1], np.zeros((0, ENCODER_DIM), np.float32)
        if mode in ("sentence", "paragraph"):
            if encode:
                vectors = self.vectors(context if mode == "sentence" else [text])
            shown = [[n] for n in names] if mode == "sentence" else [list(dict.fromkeys(names))]  # per pool
            for p, who in enumerate(shown):
                id_toks = [t for n in who if n and ids for t in self._tok(f" [{n}]")]
                toks += id_toks + [self.pad_id]
                pool += [-1] * len(id_toks) + [p]
            positions = len(toks) - 1
        elif mode == "text":
            ctx = self._tok("Context: " + text)
            toks += ctx
            pool += [-1] * len(ctx)
            positions = context_tokens
        else:
            positions = 0
        q = self._tok("\nQuestion: " + question.strip() + "\nAnswer:")
        toks += q
        pool += [-1] * len(q)
        labels = [-100] * len(toks)
        weights = None
        if with_answer:
            a = self._tok(" " + answer.strip()) + [self.eos_id]
            labels[-1] = a[0]  # the last prompt position predicts the first answer token
            toks += a[:-1]
            pool += [-1] * (len(a) - 1)
            labels += a[1:]
            if content_weight != 1.0:  # each label's weight sits where the label does
                weights = [1.0] * (len(labels) - len(a)) + [*self.content_weights(answer, content_weight), 1.0]
        return Row(toks, pool, labels, vectors, context_tokens, positions, weights)

    def content_weights(self, text: str, weight: float) -> list[float]:
        """One weight per token of " " + text: `weight` for a token inside a content word (a word not in
        `FUNCTION_WORDS`), 1 for function words, punctuation and spaces."""
        enc = self.backbone.tokenizer(" " + text.strip(), add_special_tokens=False, return_offsets_mapping=True)
        words = [(m.start() + 1, m.end() + 1, m.group().lower() not in FUNCTION_WORDS)
                 for m in re.finditer(r"[A-Za-z0-9']+", text.strip())]  # (+1: the leading space)
        out = []
        for lo, hi in enc["offset_mapping"]:
            content = any(a < hi and lo < b and c for a, b, c in words)
            out.append(weight if content else 1.0)
        return out

    def collate(self, rows: list[Row], padding_side: str = "right") -> PoolBatch:
        T = max(len(r.ids) for r in rows)
        B = len(rows)
        ids = torch.full((B, T), self.pad_id, dtype=torch.long)
        mask = torch.zeros((B, T), dtype=torch.long)
        pool = torch.full((B, T), -1, dtype=torch.long)
        labels = torch.full((B, T), -100, dtype=torch.long)
        weights = torch.ones((B, T)) if any(r.weights is not None for r in rows) else None
        vecs, offset = [], 0
        for b, r in enumerate(rows):
            n = len(r.ids)
            sl = slice(0, n) if padding_side == "right" else slice(T - n, T)
            ids[b, sl] = torch.tensor(r.ids)
            mask[b, sl] = 1
            p = torch.tensor(r.pool)
            pool[b, sl] = torch.where(p >= 0, p + offset, p)
            labels[b, sl] = torch.tensor(r.labels)
            if weights is not None and r.weights is not None:
                weights[b, sl] = torch.tensor(r.weights)
            vecs.append(r.vectors)
            offset += len(r.vectors)
        position_ids = (mask.cumsum(1) - 1).clamp(min=0)  # (B, T)
        vectors = torch.from_numpy(np.concatenate(vecs)) if offset else torch.zeros((0, ENCODER_DIM))
        return PoolBatch(ids, mask, position_ids, pool, labels, vectors, weights)

    # -- forward ------------------------------------------------------------------------------------------------
    def embed(self, batch: PoolBatch) -> torch.Tensor:
        """(B, T, d) input embeddings: token embeddings, with the adapter's output at every pool position."""
        emb = self.causal.get_input_embeddings()(batch.ids)  # (B, T, d)
        at = batch.pool >= 0  # (B, T)
        if at.any():
            pooled = self.project(batch.vectors)  # (N, d)
            emb = emb.clone()
            emb[at] = pooled[batch.pool[at]].to(emb.dtype)
        return emb

    def hidden(self, batch: PoolBatch, **kwargs):
        return self.causal.model(inputs_embeds=self.embed(batch), attention_mask=batch.mask,
                                 position_ids=batch.position_ids, use_cache=False, **kwargs)

    @torch.no_grad()
    def generate(self, rows: list[Row], max_new: int | None = None) -> list[list[int]]:
        """Greedy answers (token ids, without eos) for rows built with `with_answer=False`. Left padding, so
        every row's next token is at the last position; later steps feed one token each through the KV cache."""
        max_new = max_new or self.config.max_answer_tokens
        batch = self.collate(rows, "left")
        emb, mask, pos = self.embed(batch), batch.mask, batch.position_ids
        table = self.causal.get_input_embeddings()
        out = [[] for _ in rows]
        done = torch.zeros(len(rows), dtype=torch.bool)
        past = None
        for _ in range(max_new):
            res = self.causal.model(inputs_embeds=emb, attention_mask=mask, position_ids=pos, past_key_values=past,
                                    use_cache=True)
            past = res.past_key_values
            nxt = self.causal.lm_head(res.last_hidden_state[:, -1]).argmax(-1)  # (B,)
            for b in range(len(rows)):
                if not done[b]:
                    if int(nxt[b]) == self.eos_id:
                        done[b] = True
                    else:
                        out[b].append(int(nxt[b]))
            if done.all():
                break
            emb = table(nxt).unsqueeze(1)  # (B, 1, d) only the new token; the rest is in the cache
            pos = pos[:, -1:] + 1  # (B, 1)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)  # (B, T+k) the cache's positions too
        return out

    def check_contexts(self, items, mode: str, *, ids: bool = False, answer_tokens: int | None = None) -> None:
        """Refuse, before the encoder or the decoder runs, a request too large for one run (items, sentences per
        context) or an item whose row and longest answer (`answer_tokens`, default the config's) do not fit the
        model's positions (one sentence each)."""
        budgets.check("qa_items", len(items))
        limit = self.backbone.facts.max_length
        for i, item in enumerate(items, 1):
            context = item.get("context", ()) if isinstance(item, dict) else item.context
            check_sentences(len(context), f"item {i}")
            need = len(self.row(item, mode, ids=ids, with_answer=False, encode=False).ids) + \
                (answer_tokens or self.config.max_answer_tokens)
            if need > limit:
                raise UserError(f"Item {i} needs {need:,} positions with {mode} pools, more than the model's "
                                f"{limit:,}; give it fewer or shorter sentences.")

    def answer(self, items, mode: str = "sentence", *, ids: bool = False, batch_size: int = 16) -> list[str]:
        return [a["answer"] for a in self.predict(items, mode, ids=ids, batch_size=batch_size)]

    def predict(self, items, mode: str = "sentence", *, ids: bool = False, batch_size: int = 16,
                progress=None) -> list[dict]:
        """Per item: {"answer", "first_token_ok", "exact", "context_tokens", "context_positions"}."""
        self.check_contexts(items, mode, ids=ids)
        tok = self.backbone.tokenizer
        out = []
        for s in range(0, len(items), batch_size):
            chunk = items[s:s + batch_size]
            rows = [self.row(it, mode, ids=ids, with_answer=False) for it in chunk]
            gen = self.generate(rows)
            for it, r, g in zip(chunk, rows, gen):
                gold = it["answer"] if isinstance(it, dict) else it.answer
                text = tok.decode(g, skip_special_tokens=True).split("\n")[0].strip()
                first_gold = self._tok(" " + gold.strip())[0]
                out.append({"answer": text, "exact": normalise_answer(text) == normalise_answer(gold),
                            "first_token_ok": bool(g) and g[0] == first_gold,
                            "context_tokens": r.context_tokens, "context_positions": r.context_positions})
            if progress:
                progress(min(s + batch_size, len(items)), len(items))
        return out

    def reconstruct(self, items, mode: str = "sentence", *, ids: bool = False, batch_size: int = 8) -> list[str]:
        """Each item's context generated back from its pools (the question `RECONSTRUCT_QUESTION`, greedy), at most
        its text's length plus `RECONSTRUCT_SLACK` tokens."""
        asked = [reconstruction_item(it) for it in items]
        longest = max(len(self._tok(" " + it["answer"])) for it in asked) + RECONSTRUCT_SLACK
        self.check_contexts(asked, mode, ids=ids, answer_tokens=longest)
        tok, out = self.backbone.tokenizer, []
        for s in range(0, len(asked), batch_size):
            chunk = asked[s:s + batch_size]
            rows = [self.row(it, mode, ids=ids, with_answer=False) for it in chunk]
            out += [tok.decode(g, skip_special_tokens=True).strip() for g in self.generate(rows, longest)]
        return out

    @torch.no_grad()
    def pool_attention(self, item, mode: str = "sentence", *, ids: bool = False) -> tuple[np.ndarray, list[int]]:
        """Attention of the position that emits the answer's first token to every context position, per
        decoder layer, mean over heads: ((L, n_positions) array, the pool positions' indices in the row)."""
        self.check_contexts([item], mode, ids=ids)
        row = self.row(item, mode, ids=ids, with_answer=False)
        batch = self.collate([row])
        prev = self.causal.config._attn_implementation
        self.causal.set_attn_implementation("eager")  # attention maps need eager
        try:
            outs = self.hidden(batch, output_attentions=True)
        finally:
            self.causal.set_attn_implementation(prev)
        att = torch.stack([a[0, :, -1] for a in outs.attentions])  # (L, H, T)
        return att.mean(1).numpy(), [i for i, p in enumerate(row.pool) if p >= 0]


def reconstruction_item(item) -> dict:
    """The item (a `personas.QA` or a dict) asking for its context back: the question `RECONSTRUCT_QUESTION`, the
    answer its sentences joined by spaces."""
    get = (lambda k, d=None: item.get(k, d)) if isinstance(item, dict) else \
        (lambda k, d=None: getattr(item, "identifier" if k == "id" else k, d))
    context = list(get("context"))
    out = {"context": context, "question": RECONSTRUCT_QUESTION, "answer": " ".join(s.strip() for s in context),
           "id": get("id", "") or ""}
    return {**out, "ids": list(get("ids"))} if get("ids") else out


def token_f1(prediction: str, reference: str) -> float:
    """Bag-of-words F1 of two texts (SQuAD's: lower case, punctuation removed, tokens counted with multiplicity)."""
    p, r = (re.findall(r"[a-z0-9']+", t.lower()) for t in (prediction, reference))
    common = sum((Counter(p) & Counter(r)).values())
    if not p or not r or not common:
        return float(p == r)
    precision, recall = common / len(p), common / len(r)
    return 2 * precision * recall / (precision + recall)


def reconstruction_scores(items, generated: list[str]) -> dict:
    """Token F1 (mean) and exact match (with its 95% Wilson interval) of reconstructions against the items' texts."""
    texts = [reconstruction_item(it)["answer"] for it in items]
    f1 = [token_f1(g, t) for g, t in zip(generated, texts)]
    hits = sum(normalise_answer(g) == normalise_answer(t) for g, t in zip(generated, texts))
    return {"token_f1": float(np.mean(f1)) if f1 else 0.0, "token_f1_per_item": f1,
            "exact_match": hits / len(texts) if texts else 0.0, "exact_match_ci": wilson(hits, len(texts)),
            "n": len(texts)}


def person_attention(item, attention: np.ndarray, pools: list[int]) -> dict:
    """`pool_attention`'s output for an item read with per-sentence pools, split by person: per decoder layer, the
    attention mass on the asked person's pools ("asked"), on everyone else's ("others"), and the asked share of
    the mass on pools ("share"; NaN where a layer puts none on pools). Which person a pool holds comes from the
    item's per-sentence ids; the asked person is its identifier.

    Args:
        item: a `personas.QA` or a dict with "ids" (one name per context sentence) and "id" (the asked person).
        attention: (L, T) attention of the answer's first position over the row's positions.
        pools: the pool positions' indices in the row, one per sentence, in sentence order.
    """
    asked = item.get("id") if isinstance(item, dict) else item.identifier
    people, per_person = person_masses(item, attention, pools)  # (N, L)
    on_asked = per_person[people.index(asked)] if asked in people else np.zeros(per_person.shape[1])
    on_others = per_person.sum(0) - on_asked  # (L,) each
    total = on_asked + on_others
    share = np.divide(on_asked, total, out=np.full_like(total, np.nan), where=total > 0)
    return {"asked": on_asked, "others": on_others, "share": share}


def person_masses(item, attention: np.ndarray, pools: list[int]) -> tuple[list[str], np.ndarray]:
    """`pool_attention`'s output summed per person: (the people in order of first appearance, (N, L) attention
    mass on each person's pools per decoder layer). The per-person view of `person_attention`'s split."""
    get = item.get if isinstance(item, dict) else lambda k: getattr(item, k)
    who = list(get("ids") or ())
    if len(who) != len(pools):
        raise UserError(f"The attention split needs one person per pool: {len(who)} ids for {len(pools)} pools "
                        "(per-sentence pools of an item with per-sentence ids).")
    people = list(dict.fromkeys(who))
    mass = np.asarray(attention)[:, pools]  # (L, P)
    if not people:  # no pools: no mass on anyone
        return people, np.zeros((0, mass.shape[0]))
    return people, np.stack([mass[:, [w == person for w in who]].sum(1) for person in people])


def manifest_config(manifest: dict, backbone, folder) -> CompressionConfig:
    """The configuration an artefact's manifest records, checked before anything is built from it: positive finite
    numbers, a LoRA rank no wider than the model (a hand-edited rank of 10^7 would allocate gigabytes), a share of
    the depth below 1, answers shorter than the model's positions."""
    raw = manifest.get("config")
    values = {k: v for k, v in (raw if isinstance(raw, dict) else {}).items()
              if k in CompressionConfig.__dataclass_fields__}
    for name, v in values.items():
        whole = isinstance(getattr(CompressionConfig, name), int)
        if isinstance(v, bool) or not isinstance(v, int if whole else (int, float)) or not 0 <= v < math.inf:
            raise UserError(f"{folder}/manifest.json has an invalid config value {name}={v!r:.40}.")
    cfg = CompressionConfig(**values)
    facts = backbone.facts
    if not (1 <= cfg.lora_rank <= facts.hidden_size and cfg.lora_first_layer < 1 and cfg.pool_scale > 0
            and 1 <= cfg.max_answer_tokens < facts.max_length):
        raise UserError(f"{folder}/manifest.json describes a system that does not fit {facts.name}: LoRA rank "
                        f"{cfg.lora_rank} (1 to {facts.hidden_size}), LoRA from {cfg.lora_first_layer:g} of the depth "
                        f"(below 1), pool scale {cfg.pool_scale:g} (above 0), answers of {cfg.max_answer_tokens} tokens "
                        f"(below {facts.max_length}).")
    return cfg


def default_artefact(backbone) -> Path:
    """analysis/artefacts/compression/<model folder>/ (the shipped weights' folder for this model)."""
    return shipped_dir(METHOD, backbone.facts)


def shipped_variants(backbone) -> dict[str, Path]:
    """{"shipped": the default artefact, "ablations/<name>": each kept predecessor} for this model, those with a
    manifest only: the weights a reader can choose among without typing a folder."""
    root = default_artefact(backbone)
    found = {"shipped": root} if (root / "manifest.json").is_file() else {}
    ablations = root / "ablations"
    for folder in sorted(ablations.iterdir()) if ablations.is_dir() else ():
        if (folder / "manifest.json").is_file():
            found[f"ablations/{folder.name}"] = folder
    return found


def _rates(preds: list[dict]) -> dict:
    """Exact match with its 95% Wilson interval, first-token accuracy and n of a list of predictions."""
    n = len(preds)
    hits = sum(bool(p["exact"]) for p in preds)
    return {"exact_match": hits / n if n else 0.0, "exact_match_ci": wilson(hits, n),
            "first_token": float(np.mean([p["first_token_ok"] for p in preds])) if n else 0.0, "n": n}


def score(preds: list[dict], keys: list[str] | None = None) -> dict:
    """Exact match (with its 95% Wilson interval), first-token accuracy, and both per key."""
    res = {**_rates(preds), "per_key": {}}
    if keys:
        for k in dict.fromkeys(keys):
            res["per_key"][k] = _rates([p for p, kk in zip(preds, keys) if kk == k])
    pos = sum(p["context_positions"] for p in preds)
    res["compression"] = (sum(p["context_tokens"] for p in preds) / pos) if pos else None
    return res
