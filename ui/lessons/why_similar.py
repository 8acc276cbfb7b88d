"""Lesson 7: why are these two similar? One paraphrase pair that the last token and PromptEOL judge apart, the words
and word pairs each similarity rests on, a test of that explanation, and what each embedding decodes to. Every number
is computed when the step is drawn (the same cache entries as the Explain view)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.inspect.attribution import added_positions, word_groups
from ui import explain as X
from ui.lessons import views
from ui.lessons.base import Control, Lesson, Step
from ui.text import label

# Two captions of one photo, written for this lesson after the pattern of an STS-B dev pair rated 5 of 5 that the
# last token ranks among its least similar pairs and PromptEOL among its most similar (issue 50's search).
PAIR = ("A black dog jumping off a wood porch.", "A black dog is jumping off a wooden porch")
TWO = ("last", "prompteol")
NAMES = {"last": "Last token", "prompteol": "PromptEOL", "mean": "Mean pooling"}
HEIGHT = views.HEIGHT


def _pair(texts) -> tuple[str, str]:
    return texts[0], texts[1]


def ranks(texts):
    """Each method's cosine for the pair, and where it falls among the cosines of reference pairs (their percentile):
    raw cosines of two methods are on different scales, their ranks are not."""
    a, b = _pair(texts)
    ref = views.scoring_pairs()
    rows = []
    for name in ("last", "mean", "prompteol"):
        m = views.method(name)
        ea, eb = views.encode(m, [a], quiet=True), views.encode(m, [b], quiet=True)
        left, right = views.encode(m, ref.left, quiet=True), views.encode(m, ref.right, quiet=True)
        cos, others = float(ea[0] @ eb[0]), (left * right).sum(1)
        rows.append({"method": NAMES[name], "cosine": cos, "percentile": 100 * float((others < cos).mean()),
                     "reference pairs": len(others)})
    frame = pd.DataFrame(rows)
    fig = go.Figure(go.Bar(x=frame["method"], y=frame["percentile"], text=[f"cos {c:.3f}" for c in frame["cosine"]],
                           textposition="outside", marker_color=["#7f7f7f", "#1f77b4", "#d62728"]))
    fig.update_layout(height=HEIGHT, yaxis=dict(title=f"rank among {len(others)} reference pairs (percentile)",
                                                range=[0, 110]), margin=dict(l=10, r=10, t=30, b=10))
    return fig, frame


def token_bars(name: str, texts):
    """Each token's share of the interaction under one method, A above B, the method's own tokens in grey."""
    a, b = _pair(texts)
    ex, _ = X.explained(views.method(name), a, b)
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.22,
                        subplot_titles=(f"A: {label(a)}", f"B: {label(b)}"))
    rows = []
    for r, (side_name, side) in enumerate((("A", ex.a), ("B", ex.b)), start=1):
        words = [(X.clean(t), float(side.attribution[idx].sum()), "word") for t, idx in word_groups(side)]
        added = [(X.clean(side.tokens[i]), float(side.attribution[i]), "added by the method")
                 for i in added_positions(side)]
        items = words + added
        fig.add_trace(go.Bar(x=[f"{j}:{label(t)}" for j, (t, _, _) in enumerate(items)], y=[v for _, v, _ in items],
                             marker_color=["#d62728" if k == "word" else "#9e9e9e" for _, _, k in items],
                             showlegend=False), r, 1)
        rows += [{"text": side_name, "token": t, "share": v, "kind": k} for t, v, k in items]
    fig.update_xaxes(tickangle=-50, tickfont=dict(size=10))
    fig.update_layout(height=HEIGHT + 40, margin=dict(l=10, r=10, t=40, b=10),
                      title=dict(text=f"{NAMES[name]}: cos {ex.score:.3f}, interaction {ex.interaction:+.3f}",
                                 font=dict(size=13), x=0.01))
    return fig, pd.DataFrame(rows)


def pairs(name: str):
    a, b = PAIR
    ex, _ = X.explained(views.method(name), a, b)
    return X.pair_heatmap(ex, NAMES[name])


def curves(name: str):
    a, b = PAIR
    return X.curves_figure(X.curves(views.method(name), a, b), NAMES[name])


def decoded(texts):
    """What each embedding decodes to through the LM head (the readout layer's top tokens), both methods, both
    texts, as a table figure."""
    rows = []
    for name in TWO:
        for side, text in zip("AB", _pair(texts)):
            lens = X.lens(views.method(name), text)
            top = ", ".join(f"{X.shown_token(t)} ({p:.2f})" for t, p in zip(lens.tokens[-1], lens.probs[-1])) \
                if lens.tokens else lens.reason
            rows.append({"method": NAMES[name], "text": side, "decodes to": top})
    frame = pd.DataFrame(rows)
    fig = go.Figure(go.Table(header=dict(values=list(frame.columns), align="left"),
                             cells=dict(values=[frame[c].map(label) for c in frame.columns], align="left"),
                             columnwidth=[1, 0.4, 5]))
    fig.update_layout(height=HEIGHT - 180, margin=dict(l=10, r=10, t=10, b=10))
    return fig, frame


PAIR_CONTROL = Control("texts", "The two texts (one per line; the first two are used)", PAIR)
METHOD_CONTROL = Control("choice", "Method", "prompteol", options=TWO, labels=tuple(NAMES[n] for n in TWO))

LESSON = Lesson("why-similar", "Why are these two similar?",
                "Two captions of the same photo. One way of reading a sentence vector calls them alike, another "
                "calls them unrelated. Attribution splits each similarity over the words that make it.", (
    Step("Two methods, one pair",
         "The two texts say the same thing. Each bar is a method's cosine for them, placed among the cosines of "
         "many other sentence pairs: a method's cosines live on their own scale (a last-token vector is close to "
         "every other one), so only where the pair ranks can be compared. Where the bars differ, the methods "
         "disagree about this pair.",
         PAIR_CONTROL, ranks,
         "Why not compare the cosines themselves?",
         "Each readout has its own spread of cosines: one method's 0.9 can be its lowest score, another's its "
         "highest. A rank among the same reference pairs puts them on one scale.", seconds=30),
    Step("What the last token's similarity rests on",
         "Integrated gradients split the similarity over the input tokens: each bar is a token's share, red for "
         "the text's words, grey for tokens the method adds. The shares add up to the similarity beyond a "
         "baseline (every token replaced by the average token vector), the interaction in the title. The last "
         "token of A is a full stop, B's is a noun: read which tokens carry the score.",
         PAIR_CONTROL, lambda texts: token_bars("last", texts),
         "Why does the first word get nothing?",
         "The first position keeps its own vector in the baseline: causal models park attention there, and moving "
         "it makes the score jump, so the integral stops adding up.", seconds=60),
    Step("What PromptEOL's similarity rests on",
         "The same split for PromptEOL, whose prompt asks for the sentence in one word. Its own prompt tokens get "
         "shares too (grey): part of the similarity is the prompt's doing. Compare which words carry the score here "
         "with the previous step.",
         PAIR_CONTROL, lambda texts: token_bars("prompteol", texts),
         "Do the shares add up exactly?",
         "Up to the completeness gap the Explain view shows: the integral is computed at a few dozen points along "
         "the path, placed where the score turns.", seconds=60),
    Step("Which words answer which",
         "Each cell is a word of A against a word of B: its share of the interaction, so the rows add up to A's "
         "shares and the columns to B's. The last row and column gather the method's own tokens.",
         METHOD_CONTROL, pairs,
         "Why is the matrix computed 'in the plane of the two changes'?",
         "The similarity is a dot product of the two embeddings' changes from the baseline, and that product lives "
         "in the plane they span; the exact matrix in every direction needs hundreds of backward passes.",
         seconds=60),
    Step("Does the explanation hold up?",
         "Delete the words in the order of their shares, the largest first, and score again (solid lines); or start "
         "from no words and put them back (dotted). A faithful explanation moves the score faster than random order "
         "(grey band) and than the order of the attention the readout pays (blue).",
         METHOD_CONTROL, curves,
         "What if attention order does better?",
         "Then the attribution, though it adds up, does not rank the words by what removing them does: the two "
         "answer different questions, and the Explain view's faithfulness record measures it over many pairs.",
         seconds=60),
    Step("What each embedding says",
         "A decoder's state at a position is built to predict the next token, so the model's own output layer can "
         "read an embedding that is one position's state. PromptEOL's prompt asks for one word, and its vector "
         "decodes to the words of the sentence; the last token after a full stop decodes to what starts the next "
         "sentence.",
         PAIR_CONTROL, decoded,
         "Why can a mean over positions not be read this way?",
         "No position had that vector, and the output layer was trained on single positions: the Explain view "
         "says so for mean pooling, the sentence encoder and Causal2Vec's concatenated vector.", seconds=20),
))
