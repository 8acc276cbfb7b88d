"""Why are these two texts similar? Token and token-pair attribution of a cosine similarity, for any method.

For texts A and B a method gives unit embeddings g(x_A), g(x_B) in R^D, where x (P, d) are the vectors the decoder's
first layer reads: every token of the text, every token the method adds (its prompt, Token Prepending's and HTP's
summary placeholders, Causal2Vec's contextual token, the soft tokens GIRCSE generates) and nothing else. The score is
s(A, B) = g(x_A) . g(x_B). With a baseline r (`baseline`: the average token vector at every position but the first)
and the straight path x(α) = r + α (x - r), the integrated Jacobian of position i,

    c_i = ∫_0^1 ∂g/∂x_i (x(α)) dα · (x_i - r_i)      in R^D,  with  Σ_i c_i = g(x) - g(r) = Δg,

splits each text's embedding change into one vector per input position (integrated Jacobians: Moeller et al., 2023,
"An Attribution Method for Siamese Encoders"). What the parts add up to is the *interaction*

    I = Δg_A . Δg_B = s(A, B) - s(A, B̃) - s(Ã, B) + s(Ã, B̃)     (Ã, B̃: the baselines),

the similarity once what each text shares with the baseline is taken out. Token A_i gets a_i = c_A_i . Δg_B (the
integrated gradients of x_A -> g(x_A) . Δg_B), B_j gets b_j = c_B_j . Δg_A, and Σ a_i = Σ b_j = I. The token pair
(A_i, B_j) gets M_ij = c_A_i . c_B_j (Σ_ij M_ij = I, row i sums to a_i). The completeness gap, Σ of the parts minus
I, is the integral's numerical error only, and is reported (`Explanation.gap`).

The integral. On the real models the path is far from smooth: the score moves back and forth and turns within a
few hundredths of α (SmolLM2, 65-point grids, any of four baselines: its total variation is up to twice its net
change), so a fixed rule needs hundreds of nodes. `contributions` is an adaptive Simpson rule that knows each panel's
own error exactly (the forward passes give F(α) at the panel's ends, and the panel's parts must add up to its
change), halves the worst panels and stops at `steps` nodes or when the errors are below `TOLERANCE`.

Cost and the pair matrix. A path node is one forward pass of its row (nodes batched as rows) and one backward pass
per output direction q, which gives q . c_i for every position i at once. The token attributions need one direction
per text (`directions=1`). The pair matrix's cells need c_i whole: D directions (576 on SmolLM2: minutes). The
default (`directions=2`) computes it in the plane of Δg_A and Δg_B, where the similarity lives: M_ij = c_A_i^∥ .
c_B_j^∥, an exact decomposition of I whose rows and columns are exactly the token attributions; what it leaves out
has zero row and column sums (it only moves credit between pairs). `directions=K > 2` adds K - 2 seeded random
directions of the rest, scaled by (D - 2)/(K - 2), for an unbiased estimate of Moeller's full matrix with a standard
error per cell (`pairs_se`); `directions=0` computes all D: the full matrix exactly.

What is attributed, per method (also in `Explanation.notes`):
* every decoder method: the first layer's input vectors, prompt included, but the first position, which keeps its
  own vector in the baseline (causal LMs park attention there; moving it made the score jump); TP/HTP's summary
  placeholders with their fixed vectors (from the first rewired layer on they carry copies of other states, so what
  flows through them is credited to the positions it was copied from);
* soft tokens: by default the generated soft-token inputs are held as inputs of their own (detached from the
  generation that produced them, moved along the same path), so they get attributions beside the words
  (`through_generation=True` instead differentiates through the generation: the soft tokens' effect is credited to
  the words that caused it, and they get none of their own);
* Causal2Vec: its contextual token C is one input position (MiniLM's reading of the text that made C is not broken
  down); with readout=direct the MiniLM half of the vector is not a function of the decoder's inputs and is held;
* the sentence encoder: MiniLM's own word vectors (before its position embeddings and layer norm), [CLS] and [SEP]
  as the tokens it adds.

Why not captum: its IntegratedGradients explains one scalar output per call with a fixed rule (Riemann or
Gauss-Legendre) and runs the path again for every output; here one forward pass per node serves every direction
through one batched backward pass (`torch.autograd.grad(is_grads_batched=True)`), and the nodes go where the path
turns, which a fixed rule cannot do on these models. tests/test_attribution.py checks completeness (tiny models of
two architectures and the real model), the exact matrix, the estimator, and that captum's IntegratedGradients gives
the same token attributions on a smooth tiny model when it is installed.

    ex = explain_pair(backbone, get_method("prompteol"), "A cat sat on the mat.", "A kitten rested on a rug.")
    ex.score, ex.interaction, ex.a.attribution, ex.pairs, ex.gap   # cos, what the parts add up to, (P_A,), (P_A, P_B)
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.core.forward import hooks, resolve_layer
from analysis.core.tokens import check_texts
from analysis.inspect.explain_settings import BASELINES, DIRECTIONS, STEPS, check_settings
from analysis.methods.causal2vec import CONTEXTUAL
from analysis.methods.soft_tokens import GENERATED, token_text
from analysis.models import minilm  # by module: tests replace load_encoder

TOLERANCE = 1e-3  # stop refining when the panels' errors sum to 0.1% of the path's total variation
FIRST_NODES = 9  # the uniform grid the adaptive rule starts from: four Simpson panels
ROW_TOKENS = 1024  # path rows x positions per forward pass: bounds the kept autograd graph
CHUNK = 16  # output directions per batched backward pass
KINDS = ("text", "template", "placeholder", "contextual", "soft")  # what an input position is


# ---- one text as the method runs it ----------------------------------------------------------------------------
@dataclass
class Prepared:
    """One text ready for substituted runs: the vectors the decoder's first layer reads and what each one is.

    `x` (P, d) holds the first call's positions (the prompt as the method laid it out), then, for soft tokens, one
    vector per generation step; `calls` says how many positions each call of the first layer reads ((P,) for one
    call, (T, 1, 1, ...) for generation)."""

    method: object
    runner: object  # the backbone the method's forward really runs on (a merged adapter copy for some)
    text: str
    items: list  # the method's prepared item for this text (collated n times for n path rows)
    layer: int  # hidden state read out
    x: torch.Tensor  # (P, d) actual inputs
    g: torch.Tensor  # (D,) unit embedding of the actual inputs
    tokens: list[str]  # (P,) what each position is, placeholders and generated tokens labelled
    kinds: list[str]  # (P,) one of KINDS
    copy: np.ndarray  # (P,) int: the copy of the text a position belongs to (1, 2 for Echo), 0 otherwise
    calls: list[int]  # positions read by each call of the first layer
    held: bool = True  # generated soft inputs are replaced too (False: left to the generation)
    encoder: bool = False  # the sentence encoder: MiniLM's word vectors are the inputs


def _runner(backbone, method):
    """The backbone a method's forward runs on: soft tokens merge their adapter into a copy, Causal2Vec its
    bridge's LoRA; the hook must sit on that copy's first layer."""
    if hasattr(method, "adapted"):
        return method.adapted(backbone)
    if hasattr(method, "load"):
        return method.load(backbone).runner
    return backbone


@contextlib.contextmanager
def grad_mode(enabled: bool = True):
    """Gradients on (or off) whatever the caller's mode: the library's callers often run under inference_mode."""
    with torch.inference_mode(False), torch.set_grad_enabled(enabled):
        yield


@contextlib.contextmanager
def first_layer_inputs(module, replace: list | None = None, record: list | None = None):
    """Hook the first decoder layer (or MiniLM's word embeddings): call i of it reads `replace[i]` instead of what
    the method computed (None: left alone); `record` collects what each call would have read. Always removed."""
    calls = [0]

    def swap(h, i):
        if record is not None:
            record.append(h.detach())
        new = replace[i] if replace is not None and i < len(replace) else None
        if new is not None and new.shape != h.shape:
            raise RuntimeError(f"substituted inputs {tuple(new.shape)} do not fit the layer's {tuple(h.shape)}")
        return new

    def pre(mod, args, kwargs):  # a decoder layer: hidden_states positional or by name
        i, calls[0] = calls[0], calls[0] + 1
        new = swap(args[0] if args else kwargs["hidden_states"], i)
        if new is None:
            return None
        return ((new, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": new})

    def post(mod, args, output):  # an embedding module: its output
        i, calls[0] = calls[0], calls[0] + 1
        return swap(output, i)

    is_embedding = isinstance(module, torch.nn.Embedding)
    register = (lambda: module.register_forward_hook(post)) if is_embedding else \
        (lambda: module.register_forward_pre_hook(pre, with_kwargs=True))
    with hooks(register):
        yield calls


def _labels(runner, method, batch, cap) -> tuple[list[str], list[str], np.ndarray]:
    """Tokens, kinds and copies of the first call's positions (one row, no padding), then generated steps."""
    ids = batch.input_ids[0].tolist()
    seg = batch.segments[0].numpy()
    place = getattr(batch, "kind", None)
    tokens, kinds, copies = [], [], []
    tok = runner.tokenizer
    for t, (i, s) in enumerate(zip(ids, seg)):
        if s == GENERATED:
            continue  # generated slots are read by later calls, labelled below
        if place is not None and int(place[0, t]) > 0:
            tokens.append(getattr(method, "labels", {}).get(int(place[0, t]), "<PST>"))
            kinds.append("placeholder")
        elif s == CONTEXTUAL:
            tokens.append("⟨C⟩")
            kinds.append("contextual")
        else:
            tokens.append(tok.convert_ids_to_tokens(i))
            kinds.append("text" if s >= 1 else "template")
        copies.append(int(s) if 1 <= s < CONTEXTUAL else 0)
    for j, i in enumerate(getattr(cap, "argmax", torch.zeros(1, 0, dtype=torch.long))[0].tolist()):
        tokens.append(f"⟨soft {j + 1}: {token_text(tok, int(i)).strip() or '·'}⟩")
        kinds.append("soft")
        copies.append(0)
    return tokens, kinds, np.array(copies, dtype=np.int64)


def prepare(backbone, method, text: str, *, layer: int | None = None, through_generation: bool = False) -> Prepared:
    """Run `method` once on `text`, recording the first layer's inputs and the unit embedding; no gradients."""
    text = check_texts([text])[0]
    if method.name == "sentence_encoder":
        return _prepare_encoder(method, text)
    method.check(backbone)
    runner = _runner(backbone, method)
    k = resolve_layer(runner.facts.n_layers, method.params.layer if layer is None else layer)
    items = method.prepare(runner, [text])
    batch = method.collate(runner, items, "right")
    record: list = []
    with grad_mode(False), runner.lock, first_layer_inputs(runner.layers[0], record=record):
        cap = method.forward(runner, batch, [k])
        y = method.readout(cap.hidden[k], batch)[0]  # (D,)
    x = torch.cat([r[0] for r in record])  # (P, d): the prompt's positions, then one per generation step
    tokens, kinds, copies = _labels(runner, method, batch, cap)
    if len(tokens) != x.shape[0]:
        raise RuntimeError(f"{method.name}: {x.shape[0]} first-layer inputs but {len(tokens)} labelled positions")
    calls = [r.shape[1] for r in record]
    if through_generation:  # the generation's inputs stay functions of the prompt: not inputs of their own
        P = calls[0]
        x, tokens, kinds, copies, calls = x[:P], tokens[:P], kinds[:P], copies[:P], calls[:1]
    return Prepared(method, runner, text, items, k, x, torch.nn.functional.normalize(y.float(), dim=-1),
                    tokens, kinds, copies, calls, held=not through_generation)


def _prepare_encoder(method, text: str) -> Prepared:
    enc = minilm.load_encoder()
    ids = enc.tokenizer([text], truncation=True, max_length=enc.max_tokens, return_tensors="pt")
    record: list = []
    with grad_mode(False), enc.lock, first_layer_inputs(enc.model.embeddings.word_embeddings, record=record):
        g = _encoder_embed(enc, ids)[0]
    special = set(enc.tokenizer.all_special_ids)
    tokens = enc.tokenizer.convert_ids_to_tokens(ids["input_ids"][0].tolist())
    kinds = ["template" if i in special else "text" for i in ids["input_ids"][0].tolist()]
    copies = np.array([1 if k == "text" else 0 for k in kinds], dtype=np.int64)
    return Prepared(method, enc, text, [ids], 0, record[0][0], g, tokens, kinds, copies, [len(tokens)], encoder=True)


def _encoder_embed(enc, ids) -> torch.Tensor:
    """MiniLM's unit sentence vectors, as `SentenceEncoder.embed` computes them but with gradients allowed."""
    res = enc.model(**ids)
    mask = ids["attention_mask"].unsqueeze(-1).float()  # (n, T, 1)
    return torch.nn.functional.normalize((res.last_hidden_state * mask).sum(1) / mask.sum(1), dim=-1)  # (n, D)


def embed_rows(prep: Prepared, X: torch.Tensor, *, generated: bool | None = None) -> torch.Tensor:
    """(n, D) unit embeddings with the first layer reading X (n, P, d) instead of the text's own inputs; differentiable
    in X when gradients are on. `generated=False` leaves the soft-token steps to the generation (deletion curves)."""
    n = X.shape[0]
    if prep.encoder:
        ids = {k: v.expand(n, -1) for k, v in prep.items[0].items()}
        with prep.runner.lock, first_layer_inputs(prep.runner.model.embeddings.word_embeddings, replace=[X]):
            return _encoder_embed(prep.runner, ids)
    held = prep.held if generated is None else generated
    cuts = np.cumsum([0, *prep.calls])
    replace = [X[:, a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    replace = replace[:1] + (replace[1:] if held else [None] * (len(replace) - 1))
    batch = prep.method.collate(prep.runner, prep.items * n, "right")
    with prep.runner.lock, first_layer_inputs(prep.runner.layers[0], replace=replace):
        cap = prep.method.forward(prep.runner, batch, [prep.layer])
        y = prep.method.readout(cap.hidden[prep.layer], batch)  # (n, D)
    return torch.nn.functional.normalize(y.float(), dim=-1)


def baseline(prep: Prepared, kind: str, hold_first: bool = True) -> torch.Tensor:
    """(P, d) the baseline inputs, the same vector at every position: the embedding matrix's mean row ("mean") or
    the padding token's row ("pad"), at the scale the first layer reads tokens (Gemma multiplies its embeddings by
    sqrt(d): the scale is read off this text's own tokens, so no model's convention is assumed).

    Not zero: every decoder here starts with an RMSNorm, which is blind to scale, so the model gives 0 at an all-zero
    input and, for any α > 0, what it gives for α = 1 up to the residual stream's scale: a step at the path's start
    that no quadrature sees (gaps of the size of the score, measured on the tiny models).

    `hold_first`: a decoder's first position keeps its own vector (never for the sentence encoder). Causal LMs park
    attention on their first position (an attention sink); moving its input along with the rest made SmolLM2's
    score jump by more than 0.5 within 0.02 of α, and holding it removed the jumps (tests/test_attribution.py). The
    first position then gets no attribution, which the view says (`Side.held`)."""
    if kind not in BASELINES:
        raise UserError(f"Unknown baseline '{kind}'; choose one of {', '.join(BASELINES)}.")
    table = prep.runner.model.embeddings.word_embeddings if prep.encoder else prep.runner.input_embeddings
    W = table.weight.detach().float()  # (V, d)
    ids = _token_ids(prep)
    rows = [i for i, k in enumerate(prep.kinds) if k in ("text", "template")][: len(ids)]
    e, x = W[ids[: len(rows)]], prep.x[rows]
    scale = float((x * e).sum() / (e * e).sum().clamp_min(1e-30))  # least-squares x ≈ scale · E[id]
    tok = prep.runner.tokenizer
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    r = (scale * (W.mean(0) if kind == "mean" else W[int(pad or 0)])).expand_as(prep.x).clone()
    if hold_first and not prep.encoder:
        r[0] = prep.x[0]
    return r


def _token_ids(prep: Prepared) -> torch.Tensor:
    """Input ids of the positions that are plain tokens (text and template), in order."""
    if prep.encoder:
        return prep.items[0]["input_ids"][0]
    batch = prep.method.collate(prep.runner, prep.items, "right")
    keep = batch.segments[0] != GENERATED
    place = getattr(batch, "kind", None)
    if place is not None:
        keep &= place[0] == 0
    keep &= batch.segments[0] != CONTEXTUAL
    return batch.input_ids[0][keep]


# ---- the path integral ---------------------------------------------------------------------------------------------
@dataclass
class Path:
    """What the adaptive rule learnt along one text's path: the nodes it used and what is left of completeness."""

    alphas: np.ndarray  # (N,) nodes, sorted, 0 and 1 included
    values: np.ndarray  # (N, K) F_k(α) = g(x(α)) . u_k at each node (forward passes: exact)
    gap: np.ndarray  # (K,) Σ of the parts minus F_k(1) - F_k(0), per direction: the quadrature's error


def _vjps(g: torch.Tensor, X: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """(k, *X.shape): the gradient of Σ G[j] · g with respect to X for each j, batched when the graph allows it."""
    if G.shape[0] == 1:  # one direction (token attributions only): a plain backward pass, no batching machinery
        return torch.autograd.grad(g, X, grad_outputs=G[0], retain_graph=True)[0][None]
    try:
        return torch.autograd.grad(g, X, grad_outputs=G, retain_graph=True, is_grads_batched=True)[0]
    except RuntimeError:  # an op without a batching rule: one ordinary backward pass per direction
        return torch.stack([torch.autograd.grad(g, X, grad_outputs=u, retain_graph=True)[0] for u in G])


def _at(prep: Prepared, r: torch.Tensor, delta: torch.Tensor, U: torch.Tensor, alphas) -> tuple:
    """(F (n, K), G (n, K, P)) at path nodes `alphas`: F_k = g . u_k, and G[:, k, i] = ∂F_k/∂x_i · Δ_i, so
    Σ_i G[:, k, i] = dF_k/dα. Rows in chunks of ROW_TOKENS positions, directions in chunks of CHUNK."""
    P = delta.shape[0]
    rows = max(1, ROW_TOKENS // P)
    F, G = [], []
    with grad_mode(True):
        for start in range(0, len(alphas), rows):
            a = torch.tensor(alphas[start:start + rows], dtype=torch.float32)  # (n,)
            X = (r[None] + a[:, None, None] * delta[None]).detach().requires_grad_(True)  # (n, P, d)
            g = embed_rows(prep, X)  # (n, D)
            F.append((g.detach().double() @ U.double().T).numpy())  # (n, K)
            parts = []
            for k0 in range(0, U.shape[0], CHUNK):
                grads = _vjps(g, X, U[k0:k0 + CHUNK, None, :].expand(-1, len(a), -1).to(g.dtype))  # (k, n, P, d)
                parts.append(torch.einsum("knpd,pd->nkp", grads.double(), delta.double()).numpy())
            G.append(np.concatenate(parts, axis=1))  # (n, K, P)
            del g, X
    return np.concatenate(F), np.concatenate(G)


def contributions(prep: Prepared, r: torch.Tensor, U: torch.Tensor, steps: int, *, tolerance: float = TOLERANCE,
                  progress: Callable[[int], None] | None = None) -> tuple[torch.Tensor, Path]:
    """(U C^T (K, P), Path): the integrated Jacobian of every input position projected on each output direction (rows
    of U, (K, D)), by an adaptive Simpson rule along x(α) = r + α (x - r) with at most `steps` nodes.

    Why adaptive: on the real models the path is smooth for long stretches and then turns within a few hundredths
    of α, where a fixed rule of any order puts too few nodes. Here each panel's own error is known exactly, because
    F(α) at its ends comes from the forward passes: Simpson's Σ_i over the panel must equal F(b) - F(a). The fewest
    panels holding half the error are halved (each gains two nodes; its three are kept), round after round, until
    the panels' errors sum to less than `tolerance` x the path's total variation, or the nodes run out.
    `progress(nodes used)`."""
    delta = (prep.x - r).float()  # (P, d)
    first = max(3, min(steps, FIRST_NODES) - (min(steps, FIRST_NODES) + 1) % 2)  # odd: panels of three nodes
    alphas = list(np.linspace(0.0, 1.0, first))
    F, G = _at(prep, r, delta, U, alphas)
    node = {a: (F[i], G[i]) for i, a in enumerate(alphas)}  # α -> (F (K,), G (K, P)); dyadic α are exact floats
    panels = [tuple(alphas[i:i + 3]) for i in range(0, first - 1, 2)]  # (a, m, b), m the midpoint
    while True:
        if progress is not None:
            progress(len(node))
        errors = np.array([_panel(node, p)[1] for p in panels])  # (S,)
        change = sum(np.abs(node[b][0] - node[a][0]).sum() for a, _, b in panels)
        room = (steps - len(node)) // 2
        if room <= 0 or errors.sum() <= tolerance * change:
            break
        order = np.argsort(-errors)  # the fewest panels holding half the error: a step needs many halvings in a row
        n = int(np.searchsorted(np.cumsum(errors[order]), errors.sum() / 2)) + 1
        worst = [panels[i] for i in order[:min(n, room, CHUNK // 2)]]
        new = [x for a, m, b in worst for x in ((a + m) / 2, (m + b) / 2)]
        Fn, Gn = _at(prep, r, delta, U, new)
        node.update({x: (Fn[i], Gn[i]) for i, x in enumerate(new)})
        split = {(a, m, b): [(a, (a + m) / 2, m), (m, (m + b) / 2, b)] for a, m, b in worst}
        panels = [q for p in panels for q in split.get(p, [p])]
    C = sum(_panel(node, p)[0] for p in panels)  # (K, P)
    alphas = sorted(node)
    F = np.stack([node[a][0] for a in alphas])
    return torch.from_numpy(C), Path(np.array(alphas), F, C.sum(1) - (F[-1] - F[0]))


def _panel(node: dict, panel: tuple) -> tuple[np.ndarray, float]:
    """(Simpson's integral of G over the panel (K, P), its error: Σ_k |Σ_i of it - (F_k(b) - F_k(a))|)."""
    a, m, b = panel
    part = (b - a) / 6 * (node[a][1] + 4 * node[m][1] + node[b][1])  # (K, P)
    return part, float(np.abs(part.sum(1) - (node[b][0] - node[a][0])).sum())


def output_directions(dg_a: torch.Tensor, dg_b: torch.Tensor, directions: int | None, seed: int = 0):
    """(U (K, D) orthonormal rows, plane size p): the plane of the two embedding changes first (Δg_B's direction,
    then Δg_A's remainder; fewer when they are parallel or zero), then K - p seeded random directions of the rest,
    or the whole rest for `directions=0` (exact)."""
    D = dg_a.shape[0]
    basis = []
    for v in (dg_b.double(), dg_a.double()):
        for b in basis:
            v = v - (v @ b) * b
        if float(v.norm()) > 1e-10 * max(float(dg_a.norm()), float(dg_b.norm()), 1e-30):
            basis.append(v / v.norm())
    p = len(basis)
    want = D if directions == 0 else max(int(directions), p)
    plane = torch.stack(basis, 1) if basis else torch.zeros(D, 0, dtype=torch.float64)  # (D, p)
    if want >= D:  # every direction: the eigenvectors of the projector on the rest (eigenvalue 1)
        vals, vecs = torch.linalg.eigh(torch.eye(D, dtype=torch.float64) - plane @ plane.T)
        basis += list(vecs[:, vals > 0.5].T)
    elif want > p:
        g = torch.Generator().manual_seed(int(seed))
        extra = torch.randn(D, want - p, generator=g, dtype=torch.float64)
        extra = extra - plane @ (plane.T @ extra)  # the rest only
        basis += list(torch.linalg.qr(extra)[0].T)
    return torch.stack(basis).float(), p


# ---- reading an explanation ------------------------------------------------------------------------------------
def word_groups(side) -> list[tuple[str, list[int]]]:
    """(token, positions) for each token of the text, in order, with its positions in every copy of the text (Echo
    reads it twice: the copies' attributions are one word's), for views that show each token once. Copies that do
    not tokenize alike (a merge across a template boundary) are listed as they are."""
    copies = sorted(int(k) for k in set(side.copy[side.copy > 0].tolist()))
    per = [np.flatnonzero(side.copy == k) for k in copies]
    if len(per) > 1 and len({len(p) for p in per}) == 1:
        return [(side.tokens[per[0][j]], [int(p[j]) for p in per]) for j in range(len(per[0]))]
    return [(side.tokens[i], [int(i)]) for i in np.flatnonzero(side.copy > 0)]


def added_positions(side) -> list[int]:
    """Positions the method adds (prompt, special tokens, placeholders, the contextual token, soft tokens)."""
    return [int(i) for i in np.flatnonzero(side.copy == 0)]


def grouped_pairs(ex) -> tuple[list[str], list[str], np.ndarray]:
    """(row labels, column labels, matrix) of the pair matrix with each word once (copies summed) and every token
    the method adds summed into one last row and column, so the matrix still sums to the interaction."""
    groups = []
    for side in ex.sides():
        words = word_groups(side)
        groups.append(([t for t, _ in words] + ["(added by the method)"],
                       [idx for _, idx in words] + [added_positions(side)]))
    (ra, ia), (rb, ib) = groups
    M = np.array([[ex.pairs[np.ix_(i, j)].sum() if i and j else 0.0 for j in ib] for i in ia])
    return ra, rb, M


# ---- the explanation -------------------------------------------------------------------------------------------
@dataclass
class Side:
    """One text's input positions and their attributions (a_i: Σ_i a_i = the interaction, up to the gap)."""

    text: str
    tokens: list[str]  # (P,)
    kinds: list[str]  # (P,) one of KINDS
    copy: np.ndarray  # (P,) copy of the text a position belongs to (0: not the text)
    attribution: np.ndarray  # (P,)
    held: np.ndarray  # (P,) bool: positions whose baseline is their own vector (attribution 0 by construction)


@dataclass
class Explanation:
    """Why two texts are similar under one method: scores, token attributions, the pair matrix, the gaps."""

    method: str
    layer: int
    baseline: str
    steps: int
    pairs_kind: str  # "plane" (exact, in the plane of the two changes), "estimated", "exact", or "" (no matrix)
    dim: int  # D, the embedding's width
    score: float  # s(A, B) = cos of the two embeddings
    score_a: float  # s(A, B̃): A against B's baseline
    score_b: float  # s(Ã, B)
    score_baselines: float  # s(Ã, B̃)
    interaction: float  # I = s(A,B) - s(A,B̃) - s(Ã,B) + s(Ã,B̃) = Δg_A . Δg_B: what every part adds up to
    a: Side
    b: Side
    pairs: np.ndarray | None  # (P_A, P_B) M_ij, Σ = the interaction (None: token attributions only)
    pairs_se: np.ndarray | None  # (P_A, P_B) standard error of each estimated cell (None unless "estimated")
    gap: dict  # {"a", "b", "pairs"}: Σ of the parts minus the interaction; "relative": the largest over Σ|parts|
    notes: list[str] = field(default_factory=list)  # what is attributed, for this method, in words
    nodes: tuple = (0, 0)  # path nodes the adaptive rule used for A and for B (at most `steps` each)
    seconds: float = 0.0

    def sides(self):
        return (self.a, self.b)

    def to_json(self) -> dict:
        """Plain JSON (lists for arrays; float64 round-trips exactly): what `Compute.remember` keeps
        (`analysis.inspect.explain`) and what the `explain` command prints."""
        def side(s: Side) -> dict:
            return {"text": s.text, "tokens": list(s.tokens), "kinds": list(s.kinds), "copy": s.copy.tolist(),
                    "held": s.held.tolist(), "attribution": s.attribution.tolist()}

        return {**{k: getattr(self, k) for k in SCALARS}, "a": side(self.a), "b": side(self.b),
                "pairs": None if self.pairs is None else self.pairs.tolist(),
                "pairs_se": None if self.pairs_se is None else self.pairs_se.tolist(), "gap": dict(self.gap),
                "notes": list(self.notes), "nodes": list(self.nodes), "seconds": self.seconds}

    @classmethod
    def from_json(cls, value: dict) -> Explanation:
        """The explanation `to_json` wrote."""
        def side(s: dict) -> Side:
            return Side(s["text"], list(s["tokens"]), list(s["kinds"]), np.asarray(s["copy"], dtype=np.int64),
                        np.asarray(s["attribution"], dtype=np.float64), np.asarray(s["held"], dtype=bool))

        def matrix(m):
            return None if m is None else np.asarray(m, dtype=np.float64)

        return cls(**{k: value[k] for k in SCALARS}, a=side(value["a"]), b=side(value["b"]),
                   pairs=matrix(value["pairs"]), pairs_se=matrix(value["pairs_se"]), gap=dict(value["gap"]),
                   notes=list(value["notes"]), nodes=tuple(value["nodes"]), seconds=float(value["seconds"]))


SCALARS = ("method", "layer", "baseline", "steps", "pairs_kind", "dim", "score", "score_a", "score_b",
           "score_baselines", "interaction")


def count_positions(backbone, method, text: str) -> int:
    """Input positions an explanation of `text` attributes (tokenizing only, no forward pass): the method's prompt,
    its placeholders, contextual token and soft tokens included; MiniLM's tokens for the sentence encoder."""
    text = check_texts([text])[0]
    if method.name == "sentence_encoder":
        enc = minilm.load_encoder()
        return len(enc.tokenizer(text, truncation=True, max_length=enc.max_tokens)["input_ids"])
    return int(method.collate(backbone, method.prepare(backbone, [text]), "right").attention_mask.sum())


def check_request(backbone, method, texts, steps: int, directions: int) -> list[int]:
    """Every limit of one explanation, before any forward pass; returns the texts' position counts."""
    check_settings(steps, directions)
    if directions == 0:
        budgets.check("explain_directions", method.output_dim(backbone), "output directions of an exact pair "
                      "matrix (all of them: the embedding's width)")
    counts = [count_positions(backbone, method, t) for t in texts]
    for n in counts:
        budgets.check("explain_tokens", n, "the positions one explanation attributes in a text (the method's "
                                           "prompt and added tokens included)")
    return counts


def explain_pair(backbone, method, text_a: str, text_b: str, *, steps: int = STEPS, baseline_kind: str = "mean",
                 directions: int = DIRECTIONS, seed: int = 0, through_generation: bool = False,
                 hold_first: bool = True, progress: Callable[[int, int], None] | None = None) -> Explanation:
    """Attribute cos(A, B) under `method` to A's and B's input positions and to pairs of them (see the module).

    Args:
        steps: at most this many path nodes per text (the adaptive rule of `contributions`).
        baseline_kind: "mean" or "pad" (`BASELINES`), for every input position of both texts.
        directions: 1 = token attributions only (one backward pass per node and text, the cheapest); 2 = and the
            pair matrix in the plane of the two changes (exact); K > 2 = the full pair matrix estimated in K
            directions (the plane + K - 2 random ones; cells with standard errors); 0 = the full matrix exactly
            (all D directions).
        seed: seed of the random directions.
        through_generation: soft tokens: differentiate through the generation instead of holding its inputs.
        hold_first: the first position keeps its own vector in the baseline (see `baseline`).
        progress: progress(done, total) over path nodes of both texts.
    """
    began = time.perf_counter()
    if baseline_kind not in BASELINES:
        raise UserError(f"Unknown baseline '{baseline_kind}'; choose one of {', '.join(BASELINES)}.")
    check_request(backbone, method, [text_a, text_b], steps, directions)
    A, B = (prepare(backbone, method, t, through_generation=through_generation) for t in (text_a, text_b))
    ra, rb = baseline(A, baseline_kind, hold_first), baseline(B, baseline_kind, hold_first)
    with grad_mode(False):
        ga0, gb0 = embed_rows(A, ra[None])[0], embed_rows(B, rb[None])[0]
    dga, dgb = (A.g - ga0).double(), (B.g - gb0).double()
    tick = (lambda base: (lambda done: progress(base + done, 2 * steps))) if progress else (lambda base: None)
    if directions == 1:  # token attributions only: A along Δg_B, B along Δg_A
        ua, ub = [(v / v.norm().clamp_min(1e-30)).float()[None] for v in (dgb, dga)]
        (ca, pa), (cb, pb) = contributions(A, ra, ua, steps, progress=tick(0)), \
            contributions(B, rb, ub, steps, progress=tick(steps))
        att_a, att_b = dgb.norm() * ca[0], dga.norm() * cb[0]
        pairs = se = None
        kind = ""
    else:
        U, p = output_directions(dga, dgb, 2 if directions == 2 else directions, seed)
        (ca, pa), (cb, pb) = contributions(A, ra, U, steps, progress=tick(0)), \
            contributions(B, rb, U, steps, progress=tick(steps))
        att_a, att_b = ca.T @ (U.double() @ dgb), cb.T @ (U.double() @ dga)  # exact: Δg's lie in the plane
        kind = "plane" if directions == 2 else "exact" if U.shape[0] == dga.shape[0] else "estimated"
        pairs, se = _pair_matrix(ca, cb, p, dga.shape[0], kind)
    interaction = float(dga @ dgb)
    scores = [float(A.g @ B.g), float(A.g @ gb0), float(ga0 @ B.g), float(ga0 @ gb0)]
    sides = [Side(P.text, P.tokens, P.kinds, P.copy, att.numpy(), (P.x - r).abs().sum(-1).numpy() == 0)
             for P, r, att in ((A, ra, att_a), (B, rb, att_b))]
    return Explanation(method.name, A.layer, baseline_kind, steps, kind, int(dga.shape[0]), *scores, interaction,
                       *sides, pairs, se, _gaps(sides, pairs, interaction), notes(method, A, baseline_kind, hold_first),
                       nodes=(len(pa.alphas), len(pb.alphas)), seconds=time.perf_counter() - began)


def _pair_matrix(ca: torch.Tensor, cb: torch.Tensor, p: int, D: int, kind: str):
    """(M, se): the plane's part exactly; the rest (every direction for "exact", an unbiased estimate from the random
    ones scaled by (D - p)/R for "estimated") double-centred, since each of its directions is orthogonal to both
    changes, so its exact rows and columns sum to zero and any sum it has is quadrature error."""
    M = ca[:p].T @ cb[:p]  # (P_A, P_B)
    R = ca.shape[0] - p
    if kind == "plane" or R == 0:
        return M.numpy(), None
    terms = ca[p:, :, None] * cb[p:, None, :]  # (R, P_A, P_B): one product per direction
    terms = terms - terms.mean(1, keepdim=True) - terms.mean(2, keepdim=True) + terms.mean((1, 2), keepdim=True)
    if kind == "exact":
        return (M + terms.sum(0)).numpy(), None
    terms = (D - p) * terms  # each direction's estimate of the whole rest
    se = terms.std(0, unbiased=True) / np.sqrt(R) if R > 1 else torch.full_like(M, float("nan"))
    return (M + terms.mean(0)).numpy(), se.numpy()


def _gaps(sides, pairs, interaction: float) -> dict:
    parts = {"a": float(sides[0].attribution.sum()), "b": float(sides[1].attribution.sum())}
    if pairs is not None:
        parts["pairs"] = float(pairs.sum())
    gap = {k: v - interaction for k, v in parts.items()}
    scale = max(float(np.abs(s.attribution).sum()) for s in sides) or 1.0
    gap["relative"] = max(abs(v) for v in gap.values()) / scale
    return gap


def notes(method, prep: Prepared, baseline_kind: str, hold_first: bool = True) -> list[str]:
    """What was attributed, in words a reader of the view needs."""
    held = hold_first and not prep.encoder
    out = [("Baseline: every input vector set to the average token vector" if baseline_kind == "mean" else
            "Baseline: every input vector set to the padding token's") + ": the words and everything the "
           "method adds" + (", except the first position (the attention sink), which keeps its own" if held else "")
           + ". The parts add up to the interaction I = s(A,B) − s(A,B̃) − s(Ã,B) + s(Ã,B̃)."]
    if prep.encoder:
        out.append("MiniLM's own tokens are attributed: its word vectors before its position embeddings and layer "
                   "norm; [CLS] and [SEP] are the tokens it adds.")
    if "placeholder" in prep.kinds:
        out.append("The summary placeholders are attributed with their fixed input vectors; from the first rewired "
                   "layer on they carry copies of other positions' states, credited to those positions.")
    if "contextual" in prep.kinds:
        out.append("The contextual token C is one input: how MiniLM read the text to make it is not broken down.")
    if getattr(method.params, "readout", "") == "direct":
        out.append("readout=direct: MiniLM's half of the vector is not a function of the decoder's inputs and is held.")
    if "soft" in prep.kinds:
        out.append("The generated soft-token inputs are held as inputs of their own (detached from the generation "
                   "that made them, moved along the same path), so they are attributed beside the words.")
    elif method.name == "soft_tokens":
        out.append("Gradients flow through the generation: the soft tokens' effect is credited to the words that "
                   "caused it, and they get no attribution of their own.")
    return out
