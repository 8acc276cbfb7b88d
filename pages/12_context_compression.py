"""Context compression

One vector per sentence: a frozen sentence encoder pools each sentence, a trained adapter puts the pool into the
decoder as one input position, and the decoder (with a small LoRA) answers questions about the facts.
"""

import random
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import cache
import ui
from analysis.data import personas
from analysis.compression.system import (SCALING_SIZES, TABLE_MODES, default_artefact, score,
                                  split_mode, split_sentences)
from ui.traces import Compression, pool_attention

MODE_LABELS = {"sentence": "per-sentence pools", "sentence+ids": "per-sentence pools + identifier tokens",
               "paragraph": "one paragraph pool", "text": "full text", "none": "no context"}


def predict(system, items, mode, label):
    m, ids = split_mode(mode)
    bar = st.progress(0.0, text=label)
    try:
        preds, _ = cache.cached_compress_predict(ui.store(), system, items, m, ids=ids,
                                                 progress=lambda d, t: bar.progress(d / t, text=f"{label} {d}/{t}"))
    finally:
        bar.empty()
    return preds


with ui.user_errors():
    st.title("Context compression")
    st.caption("Each sentence of the context becomes one 384-d mean-pooled all-MiniLM-L6-v2 vector; a linear adapter "
               "(384 → decoder width) turns it into one input position in front of the question; the frozen decoder "
               "with a rank-16 LoRA on q/v of its last half of layers answers greedily. Trained here on synthetic "
               "personas (`python -m analysis train compression`); the held-out names were never seen in training.")
    backbone = ui.get_backbone()
    folder = st.text_input("Weights folder (empty: the shipped ones)", key="cc_weights",
                           help="A folder written by `python -m analysis train compression --out DIR`.").strip()
    folder = folder or str(default_artefact(backbone))
    if not Path(folder, "manifest.json").exists():
        st.info(f"No compression weights at {folder}; train them with `python -m analysis train compression` "
                "(under an hour on one core of this 2-core CPU).")
        st.stop()
    system = Compression(backbone, folder)  # loaded only to compute what is not stored yet
    m = system.manifest
    if m.get("steps_done"):
        val = m.get("results", {}).get("validation", {}).get("sentence", {}).get("exact")
        st.caption(f"Weights: {m['steps_done']} steps (best at {m.get('best_step')}), "
                   f"{m.get('wall_seconds', 0) / 60:.0f} min of training, warm start "
                   f"'{m.get('warm_start', {}).get('kind', 'none')}'"
                   + (f"; validation exact match with per-sentence pools {val:.0%}" if val is not None else "") + ".")

    if st.button("Generate a persona", key="cc_generate"):
        rng = random.Random()
        p = personas.random_persona(rng, "heldout")
        st.session_state["cc_text"] = " ".join(personas.paragraph(p, rng, 2))
        st.session_state["cc_question"] = random.choice(personas.QUESTIONS["city"]).format(first=p.first)
    example = personas.generate("heldout", 4)[3]
    text = st.text_area("Paragraph (split into sentences with pysbd)", " ".join(example.context), key="cc_text")
    question = st.text_input("Question", example.question, key="cc_question")
    sentences = split_sentences(text)
    if not sentences or not question.strip():
        st.warning("Write a paragraph and a question.")
        st.stop()
    item = {"context": sentences, "question": question, "answer": "?", "id": ""}

    cols = st.columns(4)
    modes = ("sentence", "paragraph", "text", "none")
    preds = {mode: predict(system, [item], mode, MODE_LABELS[mode])[0] for mode in modes}  # stored per item
    for col, (mode, pred) in zip(cols, preds.items()):
        ratio = pred["context_tokens"] / pred["context_positions"] if pred["context_positions"] else None
        n_pos = pred["context_positions"]
        badge = f"{n_pos} position{'' if n_pos == 1 else 's'}" + (f" · {ratio:.1f}x" if ratio else "")
        col.metric(MODE_LABELS[mode], pred["answer"] or "∅", badge, delta_color="off", delta_arrow="off")
    st.caption(f"{len(sentences)} sentences, {preds['text']['context_tokens']} tokens as text.")

    st.subheader("Which pool does the answer read?")
    att, pools = pool_attention(system, item, "sentence")  # (L, T), pool positions
    frame = pd.DataFrame(att[:, pools], columns=[f"{i + 1}: {s[:40]}" for i, s in enumerate(sentences)])
    fig = go.Figure(go.Heatmap(z=frame.values.T, x=[f"L{l}" for l in range(len(frame))], y=list(frame.columns),
                               colorscale="Blues", colorbar=dict(title="attention")))
    fig.update_layout(title="Attention of the first answer token's position to each pool, per decoder layer "
                            "(mean over heads)", height=160 + 28 * len(pools), margin=dict(l=10, r=10, t=40, b=10))
    ui.show_figure(fig, frame.assign(layer=range(len(frame))), "cc_pool_attention")

    st.subheader("Held-out personas")
    n = st.slider("Questions (cycling through the five keys)", 25, 200, 50, 25, key="cc_n")
    if st.toggle("Compute the held-out table and the scaling curve (cached)", key="cc_table"):
        items = personas.generate("heldout", n)
        keys = [it.key for it in items]
        rows = []
        for mode in TABLE_MODES:
            res = score(predict(system, items, mode, MODE_LABELS[mode]), keys)
            for k, v in {"all": res, **res["per_key"]}.items():
                rows.append({"mode": MODE_LABELS[mode], "key": k, "exact match": v["exact_match"],
                             "exact match 95% low": v["exact_match_ci"][0],
                             "exact match 95% high": v["exact_match_ci"][1], "n": v["n"],
                             "first token": v["first_token"], "compression": res["compression"]})
        table = pd.DataFrame(rows)
        st.dataframe(table.pivot(index="key", columns="mode", values="exact match").round(3))
        st.caption("Exact match (case-insensitive, surrounding punctuation ignored) per fact key; first-token accuracy "
                   "and 95% Wilson intervals in the CSV.")
        st.download_button("Download the table (CSV)", table.to_csv(index=False).encode(), "cc_heldout.csv",
                           key="cc_table_csv", on_click="ignore")

        sizes = st.multiselect("Pools per context", SCALING_SIZES, list(SCALING_SIZES[:3]), key="cc_sizes")
        curve = []
        for size in sorted(sizes):
            scaled = personas.generate_scaled("heldout", min(n, 50), total_sentences=size)
            for mode in ("sentence", "sentence+ids", "paragraph"):
                res = score(predict(system, scaled, mode, f"{size} pools, {MODE_LABELS[mode]}"))
                curve.append({"pools": size, "mode": MODE_LABELS[mode], "exact match": res["exact_match"],
                              "first token": res["first_token"]})
        if curve:
            cf = pd.DataFrame(curve)
            fig = go.Figure([go.Scatter(x=g["pools"], y=g["exact match"], mode="lines+markers", name=m)
                             for m, g in cf.groupby("mode")])
            fig.update_layout(title="Exact match as distractor sentences are added", xaxis_title="pools",
                              xaxis_type="log", yaxis_title="exact match", yaxis_range=[0, 1], height=340)
            ui.show_figure(fig, cf, "cc_scaling")
