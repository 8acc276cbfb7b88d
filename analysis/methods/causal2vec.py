"""Causal2Vec (Lin et al., 2025, "Causal2Vec: Improving Decoder-only LLMs as Versatile Embedding Models"): a small
bidirectional encoder summarises the text into one vector h; a trained MLP maps it into the decoder's
word-embedding space, C = W2 GELU(W1 h), and C is placed as ONE extra input position before the text, so every
text token can attend to a summary of the whole text despite the causal mask. No attention change (the paper's
point; removing the causal mask is its Table 15 variant, `attention` below).

Layout (one row): [start?] [instruction] [C] [text tokens] [EOS], the paper's x = [I; C; T; EOS] (§3.2, Eq. 2).
The start token (the model's BOS, else its EOS) is put in front only when the tokenizer adds none and there is no
instruction, so C never sits at position 0 (the attention sink; see `core.tokens.start_token`). C enters through
`inputs_embeds` at its position (`Causal2VecBatch.c_pos`, valid for either padding side). `contextual_position=before`
is the paper's other placement (Appendix C.5, Table 14): [start] [C] [instruction] [text tokens] [EOS], the start
token then always in front (C still never at position 0).

Attention (`attention`): causal, the paper's, or bidirectional: the decoder's causal mask removed in every layer (the
paper's Appendix C.6, Table 15; `analysis.methods._masks`). Both settings, like the instruction, default to what the
bridge was trained with (`auto`: its manifest's `attention` and `contextual_position`; causal and after for the
untrained bridge, the frozen concatenation and bridges trained before the options existed), so a bridge is read the
way it was trained.

Readouts (`readout`): concat = [final state of C ; final state of EOS] (the paper's answer to last-token recency
bias; 2d dimensions), eos, contextual (C's state only), mean (over C and the text tokens), and direct: the frozen
concatenation, the plain decoder's EOS state (no contextual token) next to the encoder vector (each L2-normalised,
d + 384 dimensions). Nothing in it is trained, so it is not the paper's controls (this project's reading of its
ablations; their table numbers, 2 and 4 here before, were not checked), which are trained with the same recipe:
`python -m analysis train causal2vec --control no-contextual` (the decoder's LoRA on its EOS state, no contextual
token) or `--control concat` (the same LoRA on the plain concatenation of its EOS state and the encoder's vector).
A control's folder as `bridge` runs its LoRA without C (`CONTROLS`): readout eos for either, direct for the
concatenation it was trained on.

The MLP ("bridge") comes from `bridge`: shipped (trained by `python -m analysis train causal2vec` and committed
for the default model), untrained (its seeded initialisation, to see what training adds) or a folder written by
the trainer (weights.safetensors + manifest.json; with LoRA weights the decoder update is merged into a copy, and
with `encoder_lora.*` weights, trained with `--encoder-lora-rank`, the encoder's into a copy of the encoder).
Cache keys see the bridge's weights, all of them in its one file, through `bridge_digest` (filled in automatically).

Queries and documents. Causal2Vec embeds as E5-Mistral does, as this project reads it (not verified against the
paper's text): "Instruct: <task>\nQuery: " before a query, and the symmetric tasks' instruction on every text of
those. Here `instruction` (the one the bridge was trained with) goes before every document and every text of a
symmetric task, and `query_instruction` before a retrieval query (empty: queries as documents). The contextual
token reads the text alone either way (the encoder never sees an instruction).

Trace names added (per text): `c2v.contextual_index` () int64, the position of C in the text's tokens.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from analysis.core.deviations import Deviation
from analysis.core.errors import UserError
from analysis.core.forward import Captured, run
from analysis.core.params import param
from analysis.core.pooling import mean_pool, token_mask
from analysis.core.tokens import Batch, Encoded, encode_texts, start_token
from analysis.core.trace import Trace
from analysis.methods._masks import ATTENTIONS, attention_mask
from analysis.methods.base import EmbeddingMethod
from analysis.models import minilm  # by module: tests replace load_encoder
from analysis.models.minilm import encoder_identity
from analysis.weights import encoder_lora
from analysis.weights.artefacts import (WEIGHTS, artefact_digest, load_artefact, read_manifest, runs_root, same_weights,
                                       shipped_dir)
from analysis.weights.lora import merged_backbone

METHOD = "causal2vec"
CONTEXTUAL = 125  # segment id of the contextual token (fits the int8 segments kept in traces)
READOUTS = ("concat", "eos", "contextual", "mean", "direct")
CONTROLS = ("no-contextual", "concat")  # the trained controls (this project's reading): no contextual token in either
POSITIONS = ("after", "before")  # C after the instruction (the paper's Eq. 2) or before it (its Table 14)
INIT_SEED = 0

DEVIATIONS = (  # the recipe's differences are the trainer's (analysis.training.causal2vec.DEVIATIONS)
    Deviation("controls", paper="trains its controls with the same recipe: the LLM without the contextual token and "
              "the plain concatenation of the encoder's and the LLM's embeddings (this project's reading of the "
              "paper's ablations; neither they nor their table numbers were checked against its text)",
              here="offers readout=direct, the untrained concatenation: the frozen decoder's EOS state next to "
                   "MiniLM's vector",
              why="the frozen concatenation costs no training and shows what the decoder adds untrained; the "
                  "trained controls are weights of their own",
              restore="bridge=<a folder trained with `train causal2vec --control no-contextual` or `--control "
                      "concat`>"),
)
# A retrieval query's prefix when the task gives none: E5-Mistral's format, a generic retrieval instruction.
QUERY_INSTRUCTION = "Instruct: Given a query, retrieve relevant documents that answer the query\nQuery: "
# loaded bridges per backbone: freed with the backbone (a weak key), never keyed by a reusable id()
_memo: "weakref.WeakKeyDictionary[object, dict[str, tuple]]" = weakref.WeakKeyDictionary()
_memo_lock = threading.Lock()
GELU_SECOND_MOMENT = 0.4252  # E[GELU(z)^2] for z ~ N(0, 1), used to give C the scale of a word embedding


def shipped_folder(backbone=None) -> Path:
    """Where this repository's bridge for `backbone` lives (absent for models it was not trained for); for the
    default model when None, since parameters are checked before a model is known."""
    return shipped_dir(METHOD, backbone.facts if backbone is not None else SimpleNamespace(name="default"))


def shipped_fits(backbone) -> bool:
    """Whether a shipped bridge exists for this backbone and was trained for exactly these weights."""
    folder = shipped_folder(backbone)
    return (folder / "manifest.json").is_file() and same_weights(read_manifest(folder).get("model_identity"),
                                                                  backbone.identity)


def bridge_choices() -> list[str]:
    """`shipped`, `untrained` and every finished bridge trained on this machine (<cache>/runs/causal2vec/<model>/
    <run>/, the CLI's runs and the app's live runs alike), for the method pickers."""
    root = runs_root(METHOD)
    found = sorted(str(p.parent) for p in root.glob("*/*/manifest.json")) if root.is_dir() else []
    return ["shipped", "untrained", *found]


@dataclass(frozen=True)
class Causal2VecParams:
    bridge: str = param("shipped", "The MLP that makes the contextual token: shipped = trained by this repository "
                        "for the default model (STS-B train), untrained = its seeded initialisation (what training "
                        "adds), or the folder of a bridge trained with `python -m analysis train causal2vec`.",
                        options=bridge_choices)
    readout: str = param("concat", "concat = final states of the contextual token and of EOS side by side (paper); "
                         "eos, contextual, mean = ablations; direct = the frozen concatenation: the plain decoder's "
                         "EOS state next to the encoder vector, no contextual token, nothing trained (not the paper's "
                         "trained controls).", choices=list(READOUTS))
    instruction: str = param("auto", "Text before the contextual token. auto = the instruction the bridge was trained "
                             "with (its manifest says; none for the untrained bridge and the direct control). "
                             "Documents and every text of a symmetric task get it.")
    query_instruction: str = param(QUERY_INSTRUCTION, "Text before the contextual token of a retrieval query, in "
                                   "E5-Mistral's 'Instruct: <task>\\nQuery: ' format, as this project reads "
                                   "Causal2Vec's query instructions (not verified); "
                                   "a generic retrieval instruction by default; empty = queries embedded as documents.")
    attention: str = param("auto", "The decoder's attention: causal (the paper's), or bidirectional: the causal mask "
                           "removed in every layer (the paper's Table 15 variant). auto = as the bridge was trained "
                           "(its manifest says; causal for the untrained bridge).", choices=["auto", *ATTENTIONS])
    contextual_position: str = param("auto", "Where the contextual token sits: after the instruction, right before the "
                                     "text (the paper's), or before the instruction (its Table 14 variant). auto = as "
                                     "the bridge was trained (its manifest says; after for the untrained bridge).",
                                     choices=["auto", *POSITIONS])
    layer: int = param(-1, "Hidden state read out; the paper uses the final layer.")
    bridge_digest: str = param("", "Digest of the bridge weights, filled in automatically (cache keys).", hidden=True)


class Bridge(torch.nn.Module):
    """C = W2 GELU(W1 h): encoder space (e) -> word-embedding space (d)."""

    def __init__(self, e: int, d: int, hidden: int | None = None):
        super().__init__()
        self.w1 = torch.nn.Linear(e, hidden or d)
        self.w2 = torch.nn.Linear(hidden or d, d)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.w2(F.gelu(self.w1(h)))  # (B, e) -> (B, d)

    @classmethod
    def initial(cls, e: int, d: int, target_rms: float, seed: int = INIT_SEED) -> "Bridge":
        """The seeded initialisation (= bridge=untrained): for a unit-norm h, W1 h has unit variance per unit and
        C has the root-mean-square of the model's word embeddings, so the untrained token is in range."""
        g = torch.Generator().manual_seed(seed)
        b = cls(e, d)
        with torch.no_grad():
            b.w1.weight.copy_(torch.randn(d, e, generator=g))  # |h| = 1 -> each pre-activation ~ N(0, 1)
            b.w2.weight.copy_(torch.randn(d, d, generator=g) * target_rms / math.sqrt(d * GELU_SECOND_MOMENT))
            b.w1.bias.zero_()
            b.w2.bias.zero_()
        return b


class Loaded(NamedTuple):
    """What a bridge setting runs on: the MLP (None for the direct control), the decoder (a merged copy when the
    bridge carries a LoRA) and the sentence encoder (a merged copy when it carries an encoder LoRA)."""

    bridge: Bridge | None
    runner: object
    encoder: object


def embedding_rms(backbone) -> float:
    return float(backbone.input_embeddings.weight.detach().float().pow(2).mean().sqrt())


@dataclass(frozen=True)
class C2VEncoded(Encoded):
    text: str = ""
    c_index: int = -1  # position of C in this text's tokens (-1: none, the direct readout)


@dataclass
class Causal2VecBatch(Batch):
    c_pos: torch.Tensor | None = None  # (B,) column of C in the padded batch (-1: none)
    texts: list | None = None  # the raw texts, for the encoder
    encoded: torch.Tensor | None = None  # (B, e) encoder vectors, set by the forward pass


def contextual_inputs(backbone, batch: Causal2VecBatch, c: torch.Tensor) -> torch.Tensor:
    """Word embeddings of the batch with C written at each row's contextual position. (B, T, d)."""
    embeds = backbone.input_embeddings(batch.input_ids)  # (B, T, d), with any embedding scale (Gemma)
    rows = torch.arange(embeds.shape[0])
    return embeds.index_put((rows, batch.c_pos), c.to(embeds.dtype))  # out of place: gradients reach C


def readout_at(hidden: torch.Tensor, batch: Causal2VecBatch, how: str) -> torch.Tensor:
    """(B, T, d) -> (B, D) for one readout (D = 2d for concat, d + e for direct, else d)."""
    rows = torch.arange(hidden.shape[0])
    eos = hidden[rows, batch.last_index]  # (B, d): the final real token is EOS
    if how == "eos":
        return eos
    if how == "direct":
        return torch.cat([F.normalize(eos, dim=-1), F.normalize(batch.encoded.to(eos.dtype), dim=-1)], dim=-1)
    ctx = hidden[rows, batch.c_pos]  # (B, d)
    if how == "concat":
        return torch.cat([ctx, eos], dim=-1)  # (B, 2d)
    if how == "contextual":
        return ctx
    if how == "mean":
        return mean_pool(hidden, token_mask(batch, (CONTEXTUAL, 1)))
    raise ValueError(f"unknown readout {how!r}")


class Causal2Vec(EmbeddingMethod):
    name = METHOD
    title = "Causal2Vec"
    summary = ("A small encoder's summary of the text (MiniLM -> trained MLP) enters the decoder as one contextual "
               "token before the text; readout = that token's and EOS's final states, concatenated.")
    Params = Causal2VecParams
    mean_segments = (CONTEXTUAL, 1)

    def validate(self, params):
        if "{text}" in params.query_instruction:
            raise UserError("causal2vec: the query_instruction must not contain {text}; the text is added after it.")
        control = self.control(params)
        if control and params.readout in ("concat", "contextual"):
            raise UserError(f"causal2vec: this bridge folder is the {control} control, trained without the "
                            f"contextual token: read it with readout=eos" + (" or direct." if control == "concat"
                                                                           else "."))
        return dataclasses.replace(params, bridge_digest=self._digest(params),
                                   instruction=self._instruction(params),
                                   attention=self._trained(params, "attention", "causal"),
                                   contextual_position=self._trained(params, "contextual_position", "after"))

    def control(self, params=None) -> str:
        """"no-contextual" or "concat" when `bridge` is a folder trained as one of the controls (its manifest
        says, `CONTROLS`): its LoRA then runs without a contextual token. "" for everything else."""
        if (params or self.params).bridge.strip() == "untrained":
            return ""
        folder = self.bridge_folder(params)
        if not (folder / "manifest.json").is_file():
            return ""
        control = read_manifest(folder).get("hyperparameters", {}).get("control", "none")
        return control if control in CONTROLS else ""

    def contextual(self) -> bool:
        """Whether C is in the input: not for the frozen concatenation (readout=direct) nor a trained control."""
        return self.params.readout != "direct" and not self.control()

    def _instruction(self, params) -> str:
        """`auto` -> the instruction recorded by the trainer in the bridge's manifest ("" when there is none)."""
        return self._trained(params, "instruction", "")

    def _trained(self, params, name: str, default: str) -> str:
        """Setting `name` as given, or for `auto` as the trainer recorded it in the bridge's manifest (`default` when
        there is none: the untrained bridge, the frozen concatenation, a bridge trained before the setting existed)."""
        if getattr(params, name) != "auto":
            return getattr(params, name)
        folder = None if params.readout == "direct" and not self.control(params) else self.bridge_folder(params)
        if folder is None or not (folder / "manifest.json").is_file():
            return default
        return read_manifest(folder).get("hyperparameters", {}).get(name, default) or default

    def _digest(self, params) -> str:
        b = params.bridge.strip()
        if params.readout == "direct" and not self.control(params):
            return f"none|{encoder_identity()}"  # the frozen concatenation uses no trained weights
        if b == "untrained":
            return f"untrained:seed{INIT_SEED}|{encoder_identity()}"
        folder = self.bridge_folder(params)
        if b == "shipped" and not (folder / "manifest.json").exists():
            return "shipped:missing"  # encode says so in one sentence; listing the method must still work
        return artefact_digest(folder)

    def bridge_folder(self, params=None, backbone=None) -> Path | None:
        b = (params or self.params).bridge.strip()
        if b == "untrained":
            return None
        if b == "shipped":
            return shipped_folder(backbone)
        folder = Path(b).expanduser()
        if not folder.is_dir():
            raise UserError(f"causal2vec: bridge must be shipped, untrained or a bridge folder; '{b}' is none of "
                            "these.")
        return folder.resolve()

    # ---- the bridge (and the decoder's and the encoder's LoRA updates, if the bridge has them) --------------
    def load(self, backbone) -> Loaded:
        """The bridge (None for direct), the backbone and the encoder to run, memoised per backbone and digest."""
        if self.params.readout == "direct" and not self.control():
            return Loaded(None, backbone, minilm.load_encoder())
        key = self.params.bridge_digest
        with _memo_lock:
            done = _memo.get(backbone, {}).get(key)
            if done is not None:
                return done
            e, d = minilm.load_encoder().dim, backbone.facts.hidden_size
            folder = self.bridge_folder(backbone=backbone)
            if folder is None:
                loaded = Loaded(Bridge.initial(e, d, embedding_rms(backbone)), backbone, minilm.load_encoder())
            else:
                if self.params.bridge_digest == "shipped:missing":
                    raise UserError("causal2vec: no shipped bridge in this checkout; train one with `python -m "
                                    "analysis train causal2vec` or use bridge=untrained.")
                loaded = load_bridge(folder, backbone, minilm.load_encoder().identity)
            if loaded.bridge is not None:  # (a trained control has none)
                loaded.bridge.eval().requires_grad_(False)
            _memo.setdefault(backbone, {})[key] = loaded
            _memo.setdefault(loaded.runner, {})[key] = loaded  # encode runs on `runner`, which asks again
            return loaded

    # ---- the embedding pipeline ---------------------------------------------------------------------------------
    def asymmetric(self) -> bool:
        return bool(self.params.query_instruction) and self.params.query_instruction != self.params.instruction

    def prompt_template(self, tokenizer) -> str:
        """The prompt as tokenized, without C: [start?] instruction {text} EOS (a query's instruction for a query).
        With C before the instruction the start token leads whatever the instruction, so C is never at position 0."""
        p = self.params
        instruction = p.query_instruction if self.role == "query" and self.asymmetric() else p.instruction
        before = p.contextual_position == "before" and self.contextual()
        lead = start_token(tokenizer) if not instruction or before else ""
        return f"{lead}{instruction}{{text}}{tokenizer.eos_token or ''}"

    def prepare(self, backbone, texts: list[str]) -> list[C2VEncoded]:
        tok = backbone.tokenizer
        direct = not self.contextual()
        items = encode_texts(tok, self.prompt_template(tok), texts, backbone.facts.max_length - (0 if direct else 1))
        special = set(tok.all_special_ids)
        out = []
        for e, t in zip(items, texts):
            first = int(np.flatnonzero(e.segments == 1)[0])  # after: C goes right before the first text token
            if self.params.contextual_position == "before":  # before: right after the leading start token, if any
                first = min(first, 1 if int(e.ids[0]) in special else 0)
            if direct:
                out.append(C2VEncoded(e.ids, e.segments, e.truncated, text=t, c_index=-1))
                continue
            ids = np.insert(e.ids, first, tok.pad_token_id if tok.pad_token_id is not None else 0)
            seg = np.insert(e.segments, first, CONTEXTUAL).astype(np.int8)
            out.append(C2VEncoded(ids, seg, e.truncated, text=t, c_index=first))
        return out

    def collate(self, backbone, items: list[C2VEncoded], padding_side: str) -> Causal2VecBatch:
        b = super().collate(backbone, items, padding_side)
        T = b.input_ids.shape[1]
        shift = [0 if padding_side == "right" else T - len(e) for e in items]
        c_pos = torch.tensor([e.c_index + s if e.c_index >= 0 else -1 for e, s in zip(items, shift)])
        return Causal2VecBatch(**{f.name: getattr(b, f.name) for f in dataclasses.fields(Batch)}, c_pos=c_pos,
                               texts=[e.text for e in items])

    def forward(self, backbone, batch: Causal2VecBatch, layers, attention: bool = False,
                trace: bool = False) -> Captured:
        bridge, runner, encoder = self.load(backbone)
        batch.encoded = encoder.embed(batch.texts)  # (B, e) unit norm
        embeds = None if bridge is None else contextual_inputs(runner, batch, bridge(batch.encoded))  # (B, T, d)
        with attention_mask(runner, self.params.attention, attention=attention):
            return run(runner, batch, layers, attention=attention, inputs_embeds=embeds)

    def readout(self, hidden: torch.Tensor, batch: Causal2VecBatch) -> torch.Tensor:
        return readout_at(hidden, batch, self.params.readout)

    def output_dim(self, backbone) -> int:
        d = backbone.facts.hidden_size
        if self.params.readout == "concat":
            return 2 * d
        if self.params.readout == "direct":
            return d + minilm.load_encoder().dim
        return d

    def trace_batch(self, backbone, batch: Causal2VecBatch, cap: Captured, trace: Trace) -> None:
        n_before = len(trace.tokens)
        super().trace_batch(backbone, batch, cap, trace)
        for b in range(batch.input_ids.shape[0]):
            start = int(batch.attention_mask[b].nonzero()[0])  # first real column (left padding shifts it)
            c = int(batch.c_pos[b]) - start if int(batch.c_pos[b]) >= 0 else -1
            trace.add("c2v.contextual_index", [np.array(c, dtype=np.int64)])
            if c >= 0:
                trace.tokens[n_before + b][c] = "⟨C⟩"

    # ---- entry points: a bridge with LoRA runs on its merged copy of the decoder (for attention backends) ------
    def encode(self, backbone, texts, **kwargs):
        return super().encode(self.load(backbone).runner, texts, **kwargs)

    def encode_layers(self, backbone, texts, layers="all", **kwargs):
        return super().encode_layers(self.load(backbone).runner, texts, layers, **kwargs)


def load_bridge(folder, backbone, encoder: str) -> Loaded:
    """(Bridge, backbone to run, encoder to run) from a trained folder; refuses a bridge made for another model or
    encoder, or whose sizes do not fit them (checked from the file's header before the weights are read). A folder
    without an encoder LoRA (its manifest has no `encoder_lora`) runs the shared, frozen encoder, as before; a
    trained control (`CONTROLS`, its manifest's `control`) has no bridge: (None, its LoRA's decoder, encoder)."""
    e, d = minilm.load_encoder().dim, backbone.facts.hidden_size  # the bridge maps e -> (any hidden width) -> d
    control = read_manifest(folder).get("hyperparameters", {}).get("control", "none") in CONTROLS
    shapes = {} if control else {"bridge.w1.weight": (None, e), "bridge.w1.bias": (None,),
                                 "bridge.w2.weight": (d, None), "bridge.w2.bias": (d,)}
    tensors, manifest = load_artefact(folder, method=METHOD, model_identity=backbone.identity, encoder=encoder,
                                      shapes=shapes)
    bridge = None
    if not control:
        w1 = tensors["bridge.w1.weight"]  # (hidden, e)
        bridge = Bridge(e, d, hidden=w1.shape[0])
        try:
            bridge.load_state_dict({k[len("bridge."):]: v for k, v in tensors.items() if k.startswith("bridge.")})
        except RuntimeError:  # the two layers disagree on the hidden width, or a tensor is missing or extra
            raise UserError(f"{Path(folder) / WEIGHTS} is not a consistent bridge: its two layers do not fit each "
                            "other.") from None
    runner = backbone
    if manifest.get("lora"):
        runner = merged_backbone(backbone, tensors, manifest["lora"], f"c2v-lora:{artefact_digest(folder)}")
    sentence_encoder = minilm.load_encoder()
    if manifest.get("encoder_lora"):
        sentence_encoder = encoder_lora.merged_copy(sentence_encoder, tensors, manifest["encoder_lora"],
                                                    f"c2v-encoder-lora:{artefact_digest(folder)}")
    return Loaded(bridge, runner, sentence_encoder)
