"""The Explain view's pieces, shared with the "Why are these two similar?" lesson: explanations, their curves and the
logit lens through the cache's `Compute` door (`analysis.inspect.explain` over `cache.Cached`, with a progress bar),
and the figures drawn from them: the pair
heatmap, each text's tokens coloured by attribution (the method's own tokens apart), the deletion and insertion
curves, the decoded tokens."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.inspect import explain
from analysis.inspect.attribution import added_positions, grouped_pairs, word_groups
from analysis.inspect.explain_settings import DEFAULT, ORDERS, Settings
from cache.cached import Cached
from ui.compute import shown
from ui.model import get_backbone, store
from ui.text import label

HEIGHT = 460
GAP_WARNING = 0.05  # a relative completeness gap above this is shown as a warning, with the remedy
ORDER_NAMES = {"attribution": "attribution order", "attention": "attention order", "random": "random order"}
ORDER_COLOURS = {"attribution": "#d62728", "attention": "#1f77b4", "random": "#7f7f7f"}
KIND_NAMES = {"template": "prompt", "placeholder": "placeholder", "contextual": "contextual token", "soft": "soft token"}


def clean(token: str) -> str:
    """A byte-level BPE token as text: its leading-space marker as a space, a newline as ↵."""
    return token.replace("Ġ", " ").replace("▁", " ").replace("Ċ", "↵").replace("ĉ", "⇥")


# ---- through the cache ----------------------------------------------------------------------------------------
def _through(label: str, call):
    """`call(compute, progress) -> (value, hit)` with the cache's door and a progress bar: (value, meta)."""
    def run(progress):
        value, hit = call(Cached(store()), progress)
        return value, {"seconds": getattr(value, "seconds", 0.0)}, hit

    return shown(label, run, quiet=True)


def explained(method, text_a: str, text_b: str, settings: Settings = DEFAULT):
    """(Explanation, meta) of the pair under `method`, through the cache with a progress bar."""
    backbone = get_backbone()
    return _through(f"{method.title}: attributing the similarity", lambda compute, progress: explain.explanation(
        compute, backbone, method, text_a, text_b, settings, progress))


def curves(method, text_a: str, text_b: str, settings: Settings = DEFAULT):
    backbone = get_backbone()
    return _through(f"{method.title}: deletion and insertion curves", lambda compute, progress: explain.curves(
        compute, backbone, method, text_a, text_b, settings, progress=progress))[0]


def lens(method, text: str):
    backbone = get_backbone()
    return _through(f"{method.title}: decoding the embedding",
                    lambda compute, progress: explain.logit_lens(compute, backbone, method, text))[0]


# ---- words ------------------------------------------------------------------------------------------------------
def sentence(ex) -> str:
    """The scores in one Markdown paragraph, the decomposition the parts add up to, and the gap."""
    rel = ex.gap["relative"]
    return (f"cos(A, B) = **{ex.score:.3f}** = s(Ã,B̃) {ex.score_baselines:.3f} + [s(A,B̃) − s(Ã,B̃)] "
            f"{ex.score_a - ex.score_baselines:+.3f} + [s(Ã,B) − s(Ã,B̃)] {ex.score_b - ex.score_baselines:+.3f} + "
            f"interaction **{ex.interaction:+.3f}**. The token attributions add up to the interaction within "
            f"{abs(ex.gap['a']):.3f} (A) and {abs(ex.gap['b']):.3f} (B): a completeness gap of {rel:.1%} of their "
            f"absolute sum, with {ex.nodes[0]} and {ex.nodes[1]} path nodes.")


def gap_warning(ex) -> str:
    """A sentence when the completeness gap is large enough to read the attributions with care, else ""."""
    if ex.gap["relative"] <= GAP_WARNING:
        return ""
    return (f"The parts miss the interaction by {ex.gap['relative']:.0%} of their size: the path turns faster than "
            f"{ex.steps} nodes can follow. Raise the steps for attributions that add up.")


# ---- figures ----------------------------------------------------------------------------------------------------
def scale(ex) -> float:
    """One colour scale for both texts (their attributions share units: both add up to the interaction)."""
    values = np.concatenate([s.attribution for s in ex.sides()])
    return float(np.abs(values).max()) or 1.0


def _colour(value: float, top: float) -> str:
    """Diverging: red for a positive share, blue for a negative one, white for none."""
    t = max(-1.0, min(1.0, value / top))
    r, g, b = (255, int(255 * (1 - t)), int(255 * (1 - t))) if t >= 0 else (int(255 * (1 + t)), int(255 * (1 + t)),
                                                                          255)
    return f"rgb({r},{g},{b})"


def _span(token: str, value: float, top: float, note: str = "") -> str:
    tip = html.escape(f"{value:+.4f}{note}", quote=True)
    return (f'<span title="{tip}" style="background:{_colour(value, top)};padding:1px 2px;margin:1px;'
            f'border-radius:3px;display:inline-block;white-space:pre">{html.escape(clean(token)) or "·"}</span>')


def token_strip(side, top: float) -> str:
    """HTML: the text's tokens coloured by attribution (Echo's copies summed), then the method's own tokens apart."""
    words = "".join(_span(t, float(side.attribution[idx].sum()), top,
                          " (held: the first position keeps its own vector)" if side.held[idx].all() else "")
                    for t, idx in word_groups(side))
    added = added_positions(side)
    extra = "".join(_span(side.tokens[i], float(side.attribution[i]), top,
                          f" ({KIND_NAMES.get(side.kinds[i], side.kinds[i])}"
                          + (", held" if side.held[i] else "") + ")") for i in added)
    share = float(side.attribution[added].sum()) if added else 0.0
    out = f'<div style="line-height:1.9;font-size:0.95rem">{words}</div>'
    if added:
        out += (f'<div style="line-height:1.9;font-size:0.8rem;color:#555">added by the method '
                f'(together {share:+.3f}): {extra}</div>')
    return out


def pair_heatmap(ex, title: str) -> tuple[go.Figure, pd.DataFrame]:
    """A's tokens (rows) x B's tokens (columns), each word once, the method's own tokens summed into the last row and
    column; diverging colours on one symmetric scale."""
    rows, cols, M = grouped_pairs(ex)
    held = [bool(side.held[idx].all()) for side in ex.sides() for _, idx in word_groups(side)]
    names = [f"{i}:{label(clean(t))}" for i, t in enumerate(rows[:-1] + cols[:-1])]
    names = [n + (" (held)" if h else "") for n, h in zip(names, held)]
    ys = names[:len(rows) - 1] + ["(added)"]
    xs = names[len(rows) - 1:] + ["(added)"]
    top = float(np.abs(M).max()) or 1.0
    fig = go.Figure(go.Heatmap(z=M, x=xs, y=ys, zmin=-top, zmax=top, colorscale="RdBu", reversescale=True,
                               colorbar=dict(title="share", thickness=12),
                               hovertemplate="A %{y}<br>B %{x}<br>%{z:+.4f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=9), automargin=True)
    fig.update_xaxes(tickangle=-60, tickfont=dict(size=9), automargin=True)
    kind = {"plane": "in the plane of the two embedding changes", "estimated": "estimated in the full space",
            "exact": "exact"}.get(ex.pairs_kind, "")
    # a short title on the left, the rest below it: the always-visible toolbar sits at the top right
    fig.update_layout(title=dict(text=f"{title}: token pairs", subtitle=dict(text=f"A (rows) x B (columns), {kind}; "
                                                                                   "(added): the method's own tokens"),
                                 font=dict(size=13), x=0.01), height=HEIGHT + 80, margin=dict(l=10, r=10, t=70, b=10))
    frame = pd.DataFrame([{"a": r, "b": c, "share": float(M[i, j])} for i, r in enumerate(rows)
                          for j, c in enumerate(cols)])
    return fig, frame


def curves_figure(c, title: str) -> tuple[go.Figure, pd.DataFrame]:
    """Interaction against the fraction of words deleted (solid) or inserted (dotted), per order; the random
    permutations' spread as a band."""
    x = c.fractions
    fig = go.Figure()
    for curve, dash in (("deletion", "solid"), ("insertion", "dot")):
        rand = getattr(c, f"random_{curve}")
        fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[rand.max(0), rand.min(0)[::-1]], fill="toself",
                                 mode="lines", fillcolor="rgba(127,127,127,0.15)", line=dict(width=0),
                                 hoverinfo="skip", showlegend=False))
        for order in ORDERS:
            fig.add_trace(go.Scatter(x=x, y=getattr(c, curve)[order], mode="lines+markers", name=f"{curve}, "
                                     f"{ORDER_NAMES[order]}", line=dict(color=ORDER_COLOURS[order], dash=dash)))
    g = c.gains
    fig.update_layout(title=dict(text=f"{title}: deletion and insertion", x=0.01, font=dict(size=13),
                                 subtitle=dict(text=f"deletion gain vs random {g['deletion_vs_random']:+.3f}, vs "
                                                    f"attention {g['deletion_vs_attention']:+.3f} (> 0: the "
                                                    "attribution order is better)")),
                      xaxis_title="fraction of the words moved (both texts, ranked together)",
                      yaxis_title="interaction", height=HEIGHT, margin=dict(l=10, r=10, t=70, b=10),
                      legend=dict(orientation="h", y=-0.25, font=dict(size=10)))
    frame = pd.DataFrame([{"curve": cv, "order": o, "fraction": float(f), "interaction": float(v)}
                          for cv in ("deletion", "insertion") for o in ORDERS
                          for f, v in zip(x, getattr(c, cv)[o])])
    return fig, frame


def shown_token(token: str) -> str:
    """A decoded token as a reader sees it: its text, or its escape when it is only whitespace."""
    return token.strip() or repr(token)


def lens_table(lens, every: int = 3) -> pd.DataFrame:
    """The top tokens at every `every`-th hidden state and at the readout (the embedding itself, last row)."""
    keep = sorted(set(lens.layers[::every]) | {lens.layers[-1]})
    rows = []
    for layer in keep:
        i = lens.layers.index(layer)
        name = f"{layer} (the embedding)" if layer == lens.layers[-1] else str(layer)
        rows.append({"hidden state": name, **{f"#{j + 1}": f"{shown_token(t)} ({p:.2f})"
                                               for j, (t, p) in enumerate(zip(lens.tokens[i], lens.probs[i]))}})
    return pd.DataFrame(rows)
