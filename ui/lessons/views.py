"""The figures lessons are made of. Each view takes what a step varies (texts, a layer, a bias, K ...) and returns
(plotly Figure, DataFrame), computed from the library through the cache (`ui.encode`, `ui.traces`), so a step
shows exactly what the page it comes from would show for the same inputs, and `warm` precomputes both."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

import cache
from analysis.compression.system import (SCALING_SIZES, default_artefact, person_masses, score, shipped_variants,
                                         split_mode, split_sentences)
from analysis.data import corpora, datasets, personas, samples
from analysis.inspect.attention import prefix_mass_summary
from analysis.inspect.generation import token_heatmap
from analysis.methods import get_method
from analysis.methods.soft_tokens import DEFAULT_INSTRUCTION
from ui.compute import encode, ready
from ui.model import described, get_backbone, load_named, store, title_of
from ui.text import label
from ui.traces import (Compression, jacobians, pool_attention, soft_generation, soft_scaling, traced,
                       word_shares)

HEIGHT = 480  # every lesson figure fits a 1280x720 screen under a title and a paragraph


def method(name: str, **params):
    """A method with its paper's defaults except `params`, ready to run (KV-Embedding's auto window resolved)."""
    return ready(get_method(name, **params))


def _short(text: str, n: int = 28) -> str:
    return label(text if len(text) <= n else text[: n - 1] + "…")


def similarity(specs: list[tuple[str, dict]], texts: list[str]):
    """Cosine similarity of every pair of texts, one heatmap per method, on one colour scale: a readout whose
    cosines are all high paints one colour."""
    sims = {}
    for name, params in specs:
        m = method(name, **params)
        emb = encode(m, texts, quiet=True)
        sims[m.title] = emb @ emb.T  # (n, n): embeddings are L2-normalised
    low = min(float(s[~np.eye(len(texts), dtype=bool)].min()) for s in sims.values())
    ticks = [f"{i + 1}. {_short(t)}" for i, t in enumerate(texts)]
    fig = make_subplots(rows=1, cols=len(sims), horizontal_spacing=0.04, subplot_titles=[
        f"{title}: mean cos {s[~np.eye(len(texts), dtype=bool)].mean():.2f}" for title, s in sims.items()])
    for i, s in enumerate(sims.values()):
        fig.add_trace(go.Heatmap(z=s, x=ticks, y=ticks, zmin=low, zmax=1, colorscale="Viridis",
                                 showscale=i == len(sims) - 1, colorbar=dict(title="cos")), 1, i + 1)
        fig.update_yaxes(autorange="reversed", showticklabels=i == 0, row=1, col=i + 1)
    fig.update_layout(height=HEIGHT, margin=dict(l=10, r=10, t=50, b=10))
    rows = [{"method": t, "text_a": a + 1, "text_b": b + 1, "cosine": float(s[a, b])}
            for t, s in sims.items() for a in range(len(texts)) for b in range(len(texts))]
    return fig, pd.DataFrame(rows)


def word_reading(specs: list[tuple[str, dict]], text: str):
    """Which words each method's final token reads (all decoder layers, all heads), as the Attention page."""
    L = get_backbone().facts.n_layers
    words, _ = word_shares([method(name, **params) for name, params in specs], text, range(L))
    fig = go.Figure([go.Bar(x=[f"{i}:{label(w)}" for i, w in zip(g["word_index"], g["word"])], y=g["share"],
                            name=name) for name, g in words.groupby("method", sort=False)])
    fig.update_layout(barmode="group", height=HEIGHT, yaxis_title="share of the final token's attention on the text",
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=1.1))
    return fig, words


def separation(specs: list[tuple[str, dict]]):
    """The demo pairs' cosines per method, paraphrases against look-alikes that mean something else: a good
    sentence vector pulls the two groups apart."""
    pairs = corpora.demo_pairs()
    rows = []
    for name, params in specs:
        m = method(name, **params)
        left, right = encode(m, pairs.left, quiet=True), encode(m, pairs.right, quiet=True)
        for i, cos in enumerate((left * right).sum(axis=1)):
            rows.append({"method": m.title + (f" (hidden state {params['layer']})" if params.get("layer", -1) != -1
                                              else ""),
                         "pair": i + 1, "paraphrase": bool(pairs.scores[i] > 0.5), "cosine": float(cos),
                         "left": pairs.left[i], "right": pairs.right[i]})
    frame = pd.DataFrame(rows)
    fig = go.Figure()
    for para, colour in ((True, "#2ca02c"), (False, "#d62728")):
        g = frame[frame["paraphrase"] == para]
        fig.add_trace(go.Box(x=g["method"], y=g["cosine"], name="paraphrases" if para else "not paraphrases",
                             marker_color=colour, boxpoints="all", text=[f"{label(a)} | {label(b)}"
                                                                         for a, b in zip(g["left"], g["right"])]))
    fig.update_layout(boxmode="group", height=HEIGHT, yaxis_title="cosine of the two sentences",
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=1.1))
    return fig, frame


def _model(choice: str):
    """"sidebar": the model chosen in the sidebar (SmolLM2 unless changed); else a built-in model by name."""
    return get_backbone() if choice == "sidebar" else load_named(choice)


def id_curve(choice: str):
    """The intrinsic dimension of every hidden state under KV-Embedding's compression prompt (final-token states
    over its built-in texts) and the window its rule picks: exactly what `layers=auto` uses, from the same cache
    entry. A built-in model other than the sidebar's is described, not loaded, to read that entry: it is loaded
    only to compute it."""
    kv = get_method("kv_embedding")
    backbone = None if choice == "sidebar" else described(choice)
    found = None if backbone is None else cache.auto_window(store(), backbone, kv, compute=False)
    if found is None:
        backbone = _model(choice)
        bar = st.progress(0.0, text="The intrinsic dimension of every hidden state (once per model)…")
        try:
            found = cache.auto_window(store(), backbone, kv,
                                      lambda done, total, _: bar.progress(min(done / max(total, 1), 1.0)))
        finally:
            bar.empty()
    sel, ids = found
    name = backbone.facts.title or title_of(backbone.facts.name)
    ids = np.array([np.nan if v is None else v for v in ids], dtype=float)  # (L + 1,)
    fig = go.Figure(go.Scatter(x=list(range(len(ids))), y=ids, mode="lines+markers", name=label(name)))
    fig.add_vrect(x0=sel.start - 0.5, x1=sel.end + 0.5, fillcolor="#1f77b4", opacity=0.15, line_width=0,
                  annotation_text=f"the rule's window: {sel.start}–{sel.end}", annotation_position="top left")
    fig.update_layout(height=HEIGHT, title=label(name), xaxis_title="hidden state", margin=dict(l=10, r=10, t=50, b=10),
                      yaxis_title="intrinsic dimension (TwoNN)")
    return fig, pd.DataFrame({"hidden_state": range(len(ids)), "id": ids, "model": name, "rule": sel.rule,
                              "in_window": [k in sel.layers for k in range(len(ids))]})


def prefix_mass(bias: float, text: str):
    """KV-Embedding at the ID window: the share of attention every decoder layer puts on the re-routed final
    token (mean over heads and positions), for one re-routing bias."""
    m = method("kv_embedding", bias=float(bias))
    arrays = traced(m, text)
    by_head, _ = prefix_mass_summary(arrays["mass"])  # (L, H)
    per_layer = by_head.mean(axis=1)
    window = sorted(m.decoder_layers(get_backbone()))
    fig = go.Figure(go.Bar(x=list(range(len(per_layer))), y=per_layer,
                           marker_color=["#d62728" if i in window else "#7f7f7f" for i in range(len(per_layer))]))
    fig.update_layout(height=HEIGHT, xaxis_title="decoder layer (red: the re-routing window)",
                      yaxis_title="attention on the re-routed final token", yaxis_range=[0, 1],
                      margin=dict(l=10, r=10, t=30, b=10))
    return fig, pd.DataFrame({"decoder_layer": range(len(per_layer)), "prefix_mass": per_layer,
                              "in_window": [i in window for i in range(len(per_layer))]})


def sensitivity(name: str, text: str, **params):
    """How much each input token can move the embedding, last-token readout against mean readout (Jacobian
    norms, 8 random probes, the final hidden state), as the Sensitivity page."""
    m = method(name, **params)
    L = get_backbone().facts.n_layers
    arrays, meta = jacobians(m, text, L, 8, False, m.title)
    x = [f"{i}:{label(t)}" for i, t in enumerate(meta["tokens"])]
    fig = go.Figure([go.Scatter(x=x, y=arrays[r], mode="lines+markers", name=f"{r} readout",
                                error_y=dict(type="data", array=arrays[r + "_se"], visible=True))
                     for r in ("last", "mean")])
    fig.update_layout(height=HEIGHT, yaxis_type="log", yaxis_title="‖∂embedding/∂token‖",
                      xaxis_tickangle=-60, margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=1.1))
    return fig, pd.DataFrame({"token": meta["tokens"], "last": arrays["last"], "mean": arrays["mean"]})


def soft_steps(adapter: str, text: str, k: int = 5):
    """GIRCSE's soft tokens, one column per step: the most likely tokens of each step's mix."""
    backbone = get_backbone()
    r = soft_generation(backbone, text, DEFAULT_INSTRUCTION, k=int(k), adapter=adapter)
    heat = token_heatmap(r, max_tokens=20)
    fig = go.Figure(go.Heatmap(z=heat.values, x=list(heat.columns), y=[label(t) for t in heat.index],
                               colorscale="Blues", colorbar=dict(title="p")))
    fig.update_layout(height=HEIGHT, yaxis=dict(autorange="reversed"), margin=dict(l=10, r=10, t=30, b=10))
    return fig, heat.reset_index()


def soft_entropy(text: str, k: int = 10):
    """Entropy of every step's mix, frozen model against the adapter trained here."""
    backbone = get_backbone()
    rows = []
    for name, adapter in (("frozen", "none"), ("trained here", "shipped")):
        r = soft_generation(backbone, text, DEFAULT_INSTRUCTION, k=int(k), adapter=adapter)
        rows += [{"model": name, "step": s + 1, "entropy": float(e)} for s, e in enumerate(r["entropy"])]
    frame = pd.DataFrame(rows)
    fig = go.Figure([go.Scatter(x=g["step"], y=g["entropy"], mode="lines+markers", name=n)
                     for n, g in frame.groupby("model", sort=False)])
    fig.update_layout(height=HEIGHT, xaxis_title="step k", yaxis_title="entropy of the mix (nats)",
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=1.1))
    return fig, frame


def scoring_pairs():
    """Pairs for a Spearman worth reading: 100 pairs of STS-B dev's report part (stratified by genre, seed 0) when
    STS-B is in the data folder, else the 20 demo pairs."""
    if corpora.shared_stsb("dev") is None:
        return corpora.demo_pairs()
    return samples.select(datasets.stsb_dev_part("report"), sample=100, seed=0)[0]


def soft_scaling_curve(k_max: int):
    """Spearman against the number of soft tokens K, frozen and trained (K = 0: the prompt's last token, no
    generation)."""
    backbone = get_backbone()
    pairs = scoring_pairs()
    ks = [k for k in (1, 3, 5, 10, 20) if k <= k_max]
    rows = []
    for name, adapter in (("frozen", "none"), ("trained here", "shipped")):
        params = dict(instruction=DEFAULT_INSTRUCTION, temperature=1.0, top_k=0, mode="soft", adapter=adapter)
        a = soft_scaling(backbone, pairs, ks, params, name)
        rows += [{"model": name, "K": int(k), "spearman": float(v)} for k, v in zip(a["ks"], a["spearman"])]
    frame = pd.DataFrame(rows)
    fig = go.Figure([go.Scatter(x=g["K"], y=g["spearman"], mode="lines+markers", name=n)
                     for n, g in frame.groupby("model", sort=False)])
    fig.update_layout(height=HEIGHT, xaxis_title="soft tokens K (0 = no generation)",
                      yaxis_title=f"Spearman, {label(pairs.name)}", margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", y=1.1))
    return fig, frame


def contextual_reading(text: str, bridge: str = "shipped"):
    """Causal2Vec: the share of the text tokens' attention that lands on the contextual token, per decoder layer
    (mean over heads)."""
    ctx = traced(method("causal2vec", bridge=bridge), text)["contextual"]  # (L, H)
    per_layer = ctx.mean(axis=1)
    fig = go.Figure(go.Bar(x=list(range(len(per_layer))), y=per_layer))
    fig.update_layout(height=HEIGHT, xaxis_title="decoder layer",
                      yaxis_title="attention on the contextual token", margin=dict(l=10, r=10, t=30, b=10))
    return fig, pd.DataFrame({"decoder_layer": range(len(per_layer)), "on_contextual": per_layer})


# ---- context compression ----------------------------------------------------------------------------------------
MODE_LABELS = {"sentence": "one vector per sentence", "sentence+ids": "one vector per sentence + identifiers",
               "paragraph": "one vector for the paragraph", "text": "the full text", "none": "no context"}


SINGLE_PERSON = "ablations/single-person"


def _system(single_person: bool = False):
    """(system, note): the shipped compression system of the sidebar's model, loaded only if a result is not stored
    yet; with `single_person`, the weights trained on one person per context (kept as ablations/single-person once
    weights trained on several people were shipped), which the lesson's one-person steps describe. Where those are
    not shipped the default weights stand in, and `note` (else "") says so for the figure's title."""
    backbone = get_backbone()
    folder, note = default_artefact(backbone), ""
    if single_person:
        found = shipped_variants(backbone).get(SINGLE_PERSON)
        folder = found or folder
        note = "" if found else (f"the shipped weights: no single-person weights ({SINGLE_PERSON}) are shipped for "
                                 f"{backbone.facts.name}")
    return Compression(backbone, str(folder)), note


def _predict(system, items, mode: str):
    m, ids = split_mode(mode)
    return cache.cached_compress_predict(store(), system, items, m, ids=ids)[0]


def compression_modes(n_questions: int):
    """Exact match on held-out persona questions for each way of giving the context."""
    system, note = _system(single_person=True)
    items = personas.generate("heldout", int(n_questions))
    rows = [{"mode": MODE_LABELS[mode], "exact match": score(_predict(system, items, mode))["exact_match"]}
            for mode in ("sentence", "paragraph", "text", "none")]
    frame = pd.DataFrame(rows)
    fig = go.Figure(go.Bar(x=frame["mode"], y=frame["exact match"]))
    fig.update_layout(height=HEIGHT, yaxis_range=[0, 1], yaxis_title=f"exact match, {n_questions} held-out questions",
                      title=note or None, margin=dict(l=10, r=10, t=30, b=10))
    return fig, frame


def pool_reading(question: str):
    """Which sentence vector the answer reads: attention of the answer's first position to each pool, per layer."""
    example = personas.generate("heldout", 4)[3]
    sentences = split_sentences(" ".join(example.context))
    item = {"context": sentences, "question": question, "answer": "?", "id": ""}
    system, note = _system(single_person=True)
    att, pools = pool_attention(system, item, "sentence")  # (L, T), pool positions
    frame = pd.DataFrame(att[:, pools], columns=[f"{i + 1}: {_short(s, 40)}" for i, s in enumerate(sentences)])
    fig = go.Figure(go.Heatmap(z=frame.values.T, x=[f"L{i}" for i in range(len(frame))], y=list(frame.columns),
                               colorscale="Blues", colorbar=dict(title="attention")))
    fig.update_layout(height=HEIGHT, title=note or None, margin=dict(l=10, r=10, t=30, b=10))
    return fig, frame.assign(layer=range(len(frame)))


def people_reading(people: int):
    """Which person's pools the answer reads in a held-out context of `people` people, each pool preceded by its
    person's name (the shipped weights, trained on five people with names): attention mass per person per layer."""
    qa = personas.generate_people("heldout", 1, people=int(people), names=True)[0]
    item = qa.to_json()
    att, pools = pool_attention(_system()[0], item, "sentence", ids=True)  # (L, T)
    who, mass = person_masses(item, att, pools)  # (N, L)
    labels = [("▶ " if person == qa.identifier else "") + person for person in who]
    fig = go.Figure(go.Heatmap(z=mass, x=[f"L{i}" for i in range(mass.shape[1])], y=labels, colorscale="Blues",
                               colorbar=dict(title="attention")))
    fig.update_layout(height=HEIGHT, title=f"{qa.question} (▶ the asked person)", margin=dict(l=10, r=10, t=40, b=10))
    return fig, pd.DataFrame(mass.T, columns=who).assign(layer=range(mass.shape[1]))


def dilution(max_pools: int, modes: tuple[str, ...]):
    """Exact match as distractor sentences are added to each context (the pool count), per way of giving it."""
    system, note = _system(single_person=True)
    rows = []
    for size in [s for s in SCALING_SIZES if s <= max_pools]:
        items = personas.generate_scaled("heldout", 25, total_sentences=size)
        for mode in modes:
            rows.append({"pools": size, "mode": MODE_LABELS[mode],
                         "exact match": score(_predict(system, items, mode))["exact_match"]})
    frame = pd.DataFrame(rows)
    fig = go.Figure([go.Scatter(x=g["pools"], y=g["exact match"], mode="lines+markers", name=n)
                     for n, g in frame.groupby("mode", sort=False)])
    fig.update_layout(height=HEIGHT, xaxis_type="log", xaxis_title="sentences (pools) per context", yaxis_range=[0, 1],
                      yaxis_title="exact match, 25 held-out questions", title=note or None,
                      margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", y=1.1))
    return fig, frame
