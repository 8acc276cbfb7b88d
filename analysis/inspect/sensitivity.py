"""How much the embedding depends on each input position: Jacobian norms for last-token vs mean readout.

For one text and a readout layer, y = readout(hidden state k) in R^d and v_i in R^d is the input embedding of
token i. The sensitivity of the embedding to position i is the Frobenius norm ||dy/dv_i||_F of a d x d block
of the Jacobian. Hierarchical Token Prepending (Ding et al., 2025) argues that under causal attention the
last-token readout y_n is over-squashed -- its sensitivity decays with the distance from the end -- while the
mean readout (1/n) sum_j y_j stays close to flat. This module measures that on a real model.

Estimator (Hutchinson-style random probes): for a probe u with E[u u^T] = I (Rademacher +-1 or Gaussian),
g = J^T u is one vector-Jacobian product, i.e. ONE backward pass, and it gives g_i = (dy/dv_i)^T u for every
position i at once; E||g_i||^2 = ||dy/dv_i||_F^2. With P probes we report the square root of the mean of the
P squared norms and its standard error (delta method: se(norm) = se(mean of squares) / (2 norm)). For short
inputs `exact=True` takes d backward passes (one per output coordinate) and gives the exact norms.

It works for any registered method that runs with gradients: the method's own prepare/collate/forward run
with a forward hook on the input-embedding layer that swaps its output for a leaf tensor requiring grad, so
interventions (TP/HTP pre-hooks, KV-Embedding's attention function) stay in the graph. Placeholder positions
(TP/HTP) have fixed input vectors, not token embeddings, so their sensitivity is reported as NaN.

Structural side of the HTP bound, from real attention maps (eager backend): per decoder layer, average the
attention over heads, add the identity for the residual path and renormalise rows, M_l = (Abar_l + I) / 2
(rewired layers also copy rows: placeholder <- source); A = M_{k-1} ... M_0. The bound's shape for the
last-token readout is the last row A[n, i]; for the mean readout it is the average of the pooled rows
(1/n) sum_j A[j, i]. `compare` correlates the logs of these with the measured Jacobian norms.

    s = jacobian_norms(backbone, get_method("mean"), "A long text ...", probes=16)   # s.last, s.mean: (T,)
    b = attention_bound(backbone, get_method("mean"), "A long text ...")           # b.last, b.mean: (T,)
    compare(s, b)   # {"last": {"spearman": ..., "pearson_log": ...}, "mean": {...}}
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.core.forward import attention_backend, hooks, resolve_layer
from analysis.core.pooling import pool, token_mask

SAMPLE_TEXT = (  # 64 tokens for SmolLM2: three sentences, so HTP has blocks and decay has room to show
    "The committee met on Monday morning to discuss the annual budget. Several members argued that the proposed "
    "cuts would hurt local schools, while others said the city had no choice. After three hours of debate, they "
    "agreed to postpone the vote until next week, when the new revenue figures will finally be available to the "
    "general public."
)
MAX_TOKENS = budgets.APP.sensitivity_tokens  # the autograd graph of every layer is kept (limit: analysis.core.budgets)

PROBES = ("rademacher", "gaussian")
READOUTS = ("last", "mean")


@dataclass
class Sensitivity:
    """Per-position Jacobian norms of one text for the last-token and the mean readout."""

    method: str
    layer: int  # hidden-state index read out
    tokens: list[str]  # (T,) what the model saw, placeholders labelled
    placeholder: np.ndarray  # (T,) bool: positions with a fixed input vector (no token embedding)
    pooled: np.ndarray  # (T,) bool: positions averaged by the mean readout
    last: np.ndarray  # (T,) estimated ||dy_last/dv_i||_F (NaN at placeholders)
    mean: np.ndarray  # (T,) estimated ||dy_mean/dv_i||_F
    last_se: np.ndarray  # (T,) standard error of `last`
    mean_se: np.ndarray  # (T,)
    probes: int  # probes per readout (0 when only exact norms were computed)
    probe: str  # "rademacher" or "gaussian"
    exact_last: np.ndarray | None = None  # (T,) exact norms when computed
    exact_mean: np.ndarray | None = None
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"last": self.last, "mean": self.mean, "last_se": self.last_se, "mean_se": self.mean_se,
               "placeholder": self.placeholder, "pooled": self.pooled}
        if self.exact_last is not None:
            out.update(exact_last=self.exact_last, exact_mean=self.exact_mean)
        return out


@dataclass
class Bound:
    """Structural quantities of the HTP bound from attention maps: A's last row and the pooled rows' mean."""

    layer: int
    last: np.ndarray  # (T,) A[n, i]
    mean: np.ndarray  # (T,) (1/|pooled|) sum_{j pooled} A[j, i]
    A: np.ndarray  # (T, T) the product matrix


# ---- one differentiable forward -----------------------------------------------------------------------------
@contextlib.contextmanager
def _grad_mode():
    with torch.inference_mode(False), torch.enable_grad():
        yield


def _prepare(backbone, method, text: str):
    if not isinstance(text, str) or not text.strip():
        raise UserError("Enter a text to analyse: it is empty.")
    items = method.prepare(backbone, [text])
    batch = method.collate(backbone, items, "right")
    T = batch.input_ids.shape[1]
    budgets.check("sensitivity_tokens", T, "the number of tokens in this text (prompt included; every layer's "
                  "gradients are kept)")
    return batch


def _labels(backbone, method, batch) -> tuple[list[str], np.ndarray]:
    tokens = backbone.tokenizer.convert_ids_to_tokens(batch.input_ids[0].tolist())
    kind = getattr(batch, "kind", None)
    placeholder = np.zeros(len(tokens), dtype=bool) if kind is None else kind[0].numpy() > 0
    labels = getattr(method, "labels", {})
    for t in np.flatnonzero(placeholder):
        tokens[t] = labels.get(int(kind[0, t]), "<PST>")
    return tokens, placeholder


def differentiable_readouts(backbone, method, text: str, layer: int | None = None):
    """Run `method` on one text with gradients to the input embeddings.

    Returns:
        (v, readouts, batch, layer, hidden): v (1, T, d) leaf tensor (the input embeddings the model used),
        readouts {"last": (d,), "mean": (d,)} at hidden state `layer` (default: the method's own readout
        layer), hidden (1, T, d) every position's state there; all differentiable with respect to v.
    """
    L = backbone.facts.n_layers
    k = resolve_layer(L, method.params.layer if layer is None else layer)
    batch = _prepare(backbone, method, text)
    leaf = {}

    def grab(module, args, output):  # the embedding layer's output becomes the leaf we differentiate against
        ids = args[0] if args else None
        same = isinstance(ids, torch.Tensor) and ids.shape == batch.input_ids.shape
        if not (same and torch.equal(ids, batch.input_ids)):
            return None  # another lookup (e.g. a method preparing itself on other texts): leave it alone
        if "v" in leaf:
            raise RuntimeError("the input embedding layer ran twice on this text in one forward pass")
        v = output.detach().requires_grad_(True)
        leaf["v"] = v
        return v

    with _grad_mode(), backbone.lock, hooks(lambda: backbone.input_embeddings.register_forward_hook(grab)):
        cap = method.forward(backbone, batch, [k])
        h = cap.hidden[k]  # (1, T, d)
        ys = {"last": pool(h, batch, "last")[0], "mean": pool(h, batch, "mean", method.mean_segments)[0]}  # (d,)
    if "v" not in leaf:
        raise UserError(f"{method.name} does not call the model's input embedding layer; its sensitivity cannot "
                        "be measured this way.")
    return leaf["v"], ys, batch, k, h


def _vjp_sq(y: torch.Tensor, v: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
    """Squared per-position norms of J^T u for each row u of U (P, *y.shape) -> (P, T). Batched backward when
    the graph allows it (vmap), one backward per probe otherwise."""
    try:
        g = torch.autograd.grad(y, v, grad_outputs=U, retain_graph=True, is_grads_batched=True)[0]  # (P, 1, T, d)
        return g.pow(2).sum(-1)[:, 0]  # (P, T)
    except RuntimeError:  # an op without a batching rule: fall back to a loop of ordinary backward passes
        rows = [torch.autograd.grad(y, v, grad_outputs=u, retain_graph=True)[0].pow(2).sum(-1)[0] for u in U]
        return torch.stack(rows)  # (P, T)


MAX_EXACT_TOKENS = budgets.APP.exact_jacobian_tokens  # exact norms take d backward passes per readout (576 on the
# default model): short texts only. The limit in force is budgets.limit("exact_jacobian_tokens") (--no-budgets lifts it)


def check_exact(n_tokens: int, hidden_size: int, limit: int | None = None) -> None:
    """UserError unless exact Jacobian norms are offered for a text of `n_tokens` tokens."""
    limit = budgets.limit("exact_jacobian_tokens") if limit is None else limit
    if n_tokens > limit:
        raise UserError(f"Exact norms take one backward pass per output dimension ({hidden_size}); they are offered "
                        f"for at most {limit} tokens and this text has {n_tokens}. Leave them out or shorten the text.")


def jacobian_norms(
    backbone,
    method,
    text: str,
    *,
    layer: int | None = None,
    probes: int = 16,
    probe: str = "rademacher",
    seed: int = 0,
    exact: bool = False,
    max_exact_tokens: int | None = None,
    chunk: int = 32,
    progress: Callable[[int, int], None] | None = None,
) -> Sensitivity:
    """Per-position Jacobian norms ||dy/dv_i||_F for the last-token and the mean readout of `method`.

    Args:
        backbone: a loaded Backbone.
        method: a configured EmbeddingMethod (vanilla "mean"/"last", "htp", "kv_embedding", ...).
        text: one text.
        layer: hidden state read out; default the method's own readout layer.
        probes: random probes per readout (0 with exact=True gives only exact norms).
        probe: "rademacher" (+-1, lower variance) or "gaussian".
        seed: seed of the probes.
        exact: also compute the exact norms (d backward passes per readout; at most `max_exact_tokens` tokens,
            MAX_EXACT_TOKENS unless a caller knows its model is small).
        chunk: probes per batched backward pass.
        progress: progress(done, total) over backward passes.
    """
    if probe not in PROBES:
        raise UserError(f"Unknown probe '{probe}'; choose one of {PROBES}.")
    if probes < 0 or (probes < 2 and not exact):
        raise UserError("Use at least 2 probes (the spread needs two), or ask for exact norms.")
    budgets.check("probes", probes, "the number of random probes per readout")
    if exact:  # counted before the pass: exact norms cost one backward pass per output dimension
        check_exact(len(_prepare(backbone, method, text).input_ids[0]), backbone.facts.hidden_size, max_exact_tokens)
    t0 = time.perf_counter()
    v, ys, batch, k, _ = differentiable_readouts(backbone, method, text, layer)
    d, T = v.shape[-1], v.shape[1]
    tokens, placeholder = _labels(backbone, method, batch)
    pooled = token_mask(batch, method.mean_segments)[0].numpy() > 0
    y = torch.stack([ys[name] for name in READOUTS])  # (2, d): both readouts share one graph
    rows = _probe_rows(d, probes, probe, exact, seed)
    with _grad_mode(), backbone.lock:
        sq_all = _squared_vjps(y, v, rows, chunk, T, progress)
    out = _norms(sq_all, rows, probes, exact)
    nan = np.where(placeholder, np.nan, 1.0)  # placeholders have no token embedding to perturb

    def get(key):
        return out[key] * nan if key in out else None

    est_last = get("last") if probes else get("exact_last")
    est_mean = get("mean") if probes else get("exact_mean")
    zeros = np.zeros(T) * nan
    return Sensitivity(
        method=method.name, layer=k, tokens=tokens, placeholder=placeholder, pooled=pooled,
        last=est_last, mean=est_mean,
        last_se=get("last_se") if probes else zeros, mean_se=get("mean_se") if probes else zeros,
        probes=probes, probe=probe, exact_last=get("exact_last"), exact_mean=get("exact_mean"),
        seconds=time.perf_counter() - t0,
    )


def _probe_rows(d: int, probes: int, probe: str, exact: bool, seed: int) -> list:
    """Every backward pass is one row (readout index, "probe" or "exact", u): a probe (or a basis vector) in the slot
    of one readout."""
    g = torch.Generator().manual_seed(int(seed))
    rows = []
    for r in range(len(READOUTS)):
        if probes:
            U = torch.randint(0, 2, (probes, d), generator=g).float() * 2 - 1 if probe == "rademacher" \
                else torch.randn(probes, d, generator=g)  # (P, d), E[u u^T] = I
            rows += [(r, "probe", u) for u in U]
        if exact:  # rows of J: summing ||e_c^T J_i||^2 over output coordinates c gives ||J_i||_F^2
            rows += [(r, "exact", u) for u in torch.eye(d)]
    return rows


def _squared_vjps(y, v, rows: list, chunk: int, T: int, progress) -> np.ndarray:
    """(N, T) samples of ||J_i^T u||^2, one per row. Batching probes of both readouts into one vmap'd backward is what
    keeps 16 probes under half a minute."""
    d = v.shape[-1]
    sq_all = []
    for c in range(0, len(rows), chunk):
        part = rows[c: c + chunk]
        G = torch.zeros(len(part), len(READOUTS), d, dtype=y.dtype)  # (n, 2, d)
        for n, (r, _, u) in enumerate(part):
            G[n, r] = u
        sq_all.append(_vjp_sq(y, v, G).double())  # (n, T)
        if progress:
            progress(c + len(part), len(rows))
    return torch.cat(sq_all).numpy() if rows else np.zeros((0, T))


def _norms(sq_all: np.ndarray, rows: list, probes: int, exact: bool) -> dict:
    """{readout, readout_se, exact_readout}: probe estimates (the mean of squares is unbiased for ||J_i||_F^2) with
    their standard errors, and the exact norms."""
    out = {}
    for r, name in enumerate(READOUTS):
        if probes:
            sq = sq_all[np.array([rr == r and kind == "probe" for rr, kind, _ in rows])]  # (P, T)
            norm = np.sqrt(sq.mean(0))
            out[name] = norm
            out[name + "_se"] = sq.std(0, ddof=1) / np.sqrt(probes) / (2 * np.maximum(norm, 1e-30))
        if exact:
            ex = np.array([rr == r and kind == "exact" for rr, kind, _ in rows])
            out["exact_" + name] = np.sqrt(sq_all[ex].sum(0))
    return out


# ---- the structural bound from attention maps ----------------------------------------------------------------
def attention_bound(backbone, method, text: str, *, layer: int | None = None) -> Bound:
    """A = product over decoder layers 0..k-1 of the row-normalised (head-averaged attention + identity)
    matrices, with the rewiring copies of TP/HTP in between; its last row and pooled-row mean.

    Methods that add attended prefix positions (KV-Embedding) report S > T columns; the prefix columns are
    dropped and rows renormalised, so for them A ignores the re-routed path (an approximation)."""
    L = backbone.facts.n_layers
    k = resolve_layer(L, method.params.layer if layer is None else layer)
    batch = _prepare(backbone, method, text)
    eager = getattr(method, "needs_eager", False)  # such methods return weights from their own backend
    backend = contextlib.nullcontext() if eager else attention_backend(backbone, "eager")
    with torch.inference_mode(), backbone.lock, backend:
        cap = method.forward(backbone, batch, [k], attention=True)
    T = batch.input_ids.shape[1]
    source = getattr(batch, "source", None)
    rewired = set(method.rewired_layers(L)) if hasattr(method, "rewired_layers") else set()
    A = torch.eye(T, dtype=torch.float64)
    eye = torch.eye(T, dtype=torch.float64)
    for l in range(min(k, L)):
        if l in rewired:  # the pre-hook copies rows: input_t = output_{source[t]}
            A = A[source[0]]
        if l not in cap.attention:
            raise UserError("No attention maps were returned; this method's attention backend does not expose them.")
        att = cap.attention[l][0].double().mean(0)  # (T, S) averaged over heads
        att = att[:, -T:]  # drop prefix columns a method adds (KV-Embedding)
        att = att / att.sum(-1, keepdim=True).clamp_min(1e-30)
        M = (att + eye) / 2  # residual path; rows sum to 1
        A = M @ A
    last = A[batch.last_index[0]].numpy()  # (T,)
    pooled = token_mask(batch, method.mean_segments)[0].double()  # (T,)
    mean = (pooled @ A / pooled.sum()).numpy()  # (T,)
    return Bound(layer=k, last=last, mean=mean, A=A.numpy())


# ---- summaries ------------------------------------------------------------------------------------------------
def _rank_corr(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    from scipy.stats import pearsonr, spearmanr  # lazy: keeps scipy off the pages' and the command line's start

    ok = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
    if ok.sum() < 3:
        return float("nan"), float("nan")
    la, lb = np.log(a[ok]), np.log(b[ok])
    if np.ptp(la) == 0 or np.ptp(lb) == 0:
        return float("nan"), float("nan")
    return float(spearmanr(la, lb).statistic), float(pearsonr(la, lb).statistic)


def compare(sens: Sensitivity, bound: Bound) -> dict:
    """How well the bound's shape matches the measured norms: Spearman and Pearson correlation of the logs
    over token positions (placeholders excluded), for each readout."""
    out = {}
    for name in READOUTS:
        rho, r = _rank_corr(getattr(sens, name), getattr(bound, name))
        out[name] = {"spearman": rho, "pearson_log": r}
    return out


def decay(sens: Sensitivity) -> dict:
    """Shape of each readout's sensitivity over the text tokens (placeholders and the final position, whose own
    residual path dominates the last readout, excluded): `decades` = log10 of the median norm in the last
    quarter over the median in the first quarter (> 0: later tokens matter more), and `spread` = the standard
    deviation of log10 norms (0 = perfectly flat)."""
    out = {}
    keep = ~sens.placeholder & sens.pooled
    idx = np.flatnonzero(keep)
    if len(idx) > 1:
        idx = idx[:-1] if idx[-1] == len(sens.placeholder) - 1 else idx
    for name in READOUTS:
        x = getattr(sens, name)[idx]
        x = x[np.isfinite(x) & (x > 0)]
        if len(x) < 4:
            out[name] = {"decades": float("nan"), "spread": float("nan")}
            continue
        q = max(1, len(x) // 4)
        out[name] = {"decades": float(np.log10(np.median(x[-q:]) / np.median(x[:q]))),
                     "spread": float(np.std(np.log10(x)))}
    return out


def describe_agreement(rho: float) -> str:
    """Plain words for a rank correlation between bound and measurement."""
    if not np.isfinite(rho):
        return "cannot be judged (too few positions)"
    if rho >= 0.8:
        return "closely"
    if rho >= 0.5:
        return "roughly"
    if rho >= 0.2:
        return "only loosely"
    return "not at all"
