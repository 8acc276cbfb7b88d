"""Context compression

One vector per sentence: a frozen sentence encoder pools each sentence, a trained adapter puts the pool into the
decoder as one input position, and the decoder (with a small LoRA) answers questions about the facts.
"""

import random
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import cache
import ui
from analysis.compression.system import (
    SCALING_SIZES,
    default_artefact,
    person_attention,
    person_masses,
    shipped_variants,
    split_mode,
    split_sentences,
    token_f1,
)
from analysis.data import personas
from analysis.experiments.compression import dilution_scores, heldout_scores
from analysis.experiments.machinery.records import read as read_record
from ui.prose import single_person_gap
from ui.traces import Compression, pool_attention

MODE_LABELS = {"sentence": "per-sentence pools", "sentence+ids": "per-sentence pools + identifier tokens",
               "paragraph": "one paragraph pool", "text": "full text", "none": "no context"}


def predict(system, items, mode, label):
    m, ids = split_mode(mode)
    bar = st.progress(0.0, text=label)
    try:
        preds, _ = cache.cached_compress_predict(ui.store(), system, items, m, ids=ids,
                                                 progress=lambda d, t, _: bar.progress(d / t, text=f"{label} {d}/{t}"))
    finally:
        bar.empty()
    return preds


def one_person(system) -> None:
    """A paragraph about one person (the built-in example, a generated persona or the user's text): the four ways
    of giving it, the answer's attention to each pool, and the held-out table with the distractor curve."""
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
        answer = lambda items, mode, label: predict(system, items, mode, label)  # noqa: E731
        rows = []
        for mode, res in heldout_scores(answer, n).items():
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
        curve = [{"pools": size, "mode": MODE_LABELS[mode], "exact match": res["exact_match"],
                  "first token": res["first_token"]}
                 for (size, mode), res in dilution_scores(answer, sorted(sizes), min(n, 50),
                                                          ("sentence", "sentence+ids", "paragraph")).items()]
        if curve:
            cf = pd.DataFrame(curve)
            fig = go.Figure([go.Scatter(x=g["pools"], y=g["exact match"], mode="lines+markers", name=m)
                             for m, g in cf.groupby("mode")])
            fig.update_layout(title="Exact match as distractor sentences are added", xaxis_title="pools",
                              xaxis_type="log", yaxis_title="exact match", yaxis_range=[0, 1], height=340)
            ui.show_figure(fig, cf, "cc_scaling")


def several_people(system) -> None:
    """One held-out item of N people: the answer, and how the answer's attention to the pools splits by person."""
    st.subheader("Several people: whose pools does the answer read?")
    st.caption("A context of N people's fact sentences (five each, grouped by person); the question names one of "
               "them. With name tokens, each pool is preceded by its person's name as literal tokens (the source's "
               "Experiment B2), and name questions are not asked: their answer would be copied.")
    c1, c2, c3 = st.columns(3)
    people = c1.slider("People in the context", 2, 10, 5, key="cc_people")
    names = c2.toggle("Name tokens before each pool", True, key="cc_names")
    index = c3.number_input("Held-out item", 0, 199, 0, key="cc_people_item",
                            help="Items of the held-out split: people no training or selection saw.")
    qa = personas.generate_people("heldout", index + 1, people=people, names=names)[index]
    item = qa.to_json()
    pred = predict(system, [item], "sentence+ids" if names else "sentence", "Answering")[0]
    a, b = st.columns(2)
    a.markdown(f"**Question:** {qa.question}  \n**Gold:** {qa.answer}")
    b.metric("Answer from per-sentence pools", pred["answer"] or "∅",
             "right" if pred["exact"] else "wrong", delta_color="normal" if pred["exact"] else "inverse")
    att, pools = pool_attention(system, item, "sentence", ids=names)  # (L, T)
    who, mass = person_masses(item, att, pools)  # (N, L)
    split = person_attention(item, att, pools)
    labels = [("▶ " if person == qa.identifier else "") + person for person in who]
    fig = go.Figure(go.Heatmap(z=mass, x=[f"L{l}" for l in range(mass.shape[1])], y=labels, colorscale="Blues",
                               colorbar=dict(title="attention")))
    fig.update_layout(title="Attention of the first answer position to each person's pools, per decoder layer "
                            "(▶ the asked person)", height=160 + 30 * len(who), margin=dict(l=10, r=10, t=40, b=10))
    frame = pd.DataFrame(mass.T, columns=who).assign(layer=range(mass.shape[1]), asked_share=split["share"])
    ui.show_figure(fig, frame, "cc_people_attention")
    st.caption(f"Asked person's share of the attention on pools, mean over layers: {np.nanmean(split['share']):.2f} "
               f"(chance {1 / people:.2f}); {pred['context_positions']} positions for {len(qa.context)} sentences.")


def shown_record(record) -> None:
    """A record's command, tables and notes; static tables, which wrap, so that a reconstruction is read whole (the
    grid cut each paragraph at its column's width)."""
    st.caption(f"`{record.command}` · {record.date} · {record.data}")
    for table in record.tables:
        st.markdown(f"**{table.title}**")
        ui.show_table(pd.DataFrame(table.rows, columns=table.columns), index=False)
        if table.notes:
            st.caption(table.notes)


def reconstruction(system) -> None:
    """Experiment C: the paragraph asked back from its pools, live for the chosen weights when they were trained
    for it, and as measured (docs/results/compression_reconstruction.json)."""
    st.subheader("The paragraph back from its pools (the source's Experiment C)")
    trained = (system.manifest.get("hyperparameters") or {}).get("reconstruct")
    if trained:
        index = st.number_input("Held-out item", 0, 199, 0, key="cc_reconstruct_item",
                                help="Items of the held-out split: people no training or selection saw.")
        vocabulary = (system.manifest.get("hyperparameters") or {}).get("vocabulary", "small")
        qa = personas.generate("heldout", index + 1, vocabulary=vocabulary)[index]
        if st.toggle("Reconstruct it from its pools", key="cc_reconstruct"):
            with st.spinner("Generating the paragraph back"):
                text = system.system().reconstruct([qa])[0]
            gold = " ".join(qa.context)
            a, b = st.columns(2)
            a.markdown("**Paragraph**  \n" + ui.md(gold))
            b.markdown("**From its pools**  \n" + ui.md(text))
            st.caption(f"Token F1 {token_f1(text, gold):.2f}; {len(qa.context)} pools.")
    else:
        st.info("These weights were trained for questions only; a run with `python -m analysis train compression "
                "--reconstruct 0.5` is asked for paragraphs back, and can be chosen as a folder above.")
    record = read_record("compression_reconstruction")
    if record is None:
        st.caption("Not measured yet: `python -m analysis measure compression_reconstruction --weights <run>`.")
        return
    shown_record(record)
    for line in record.findings:
        st.markdown(f"- {ui.md(line)}")


def recorded_people() -> None:
    """The measured Experiments B/B2 and the N-people scaling study, from docs/results/compression_people.json."""
    record = read_record("compression_people")
    if record is None:
        st.info("No cross-person results are recorded yet: `python -m analysis measure compression_people` measures "
                "them.")
        return
    st.subheader("Measured: picking the right person among many")
    shown_record(record)
    st.caption(single_person_gap())  # from the record, as the rest of the tab
    if any(s.name == "scaling" for s in record.series):
        curve = record.series_named("scaling")
        n = list(curve.xs)
        traces = []
        for label, values in curve.lines.items():
            chance = label == "chance"
            ci = curve.intervals.get(label)
            em = np.array(values, dtype=float)
            error = None if not ci else dict(type="data", array=np.array([c[1] for c in ci]) - em,
                                             arrayminus=em - np.array([c[0] for c in ci]))
            traces.append(go.Scatter(x=n, y=list(values), mode="lines" if chance else "lines+markers",
                                     name="chance of the right person" if chance else label, error_y=error,
                                     line=dict(dash="dot") if chance else None))
        fig = go.Figure(traces)
        fig.update_layout(title=curve.title, xaxis_title=curve.x, xaxis_type="log", yaxis_title=curve.y,
                          yaxis_range=[0, 1], height=340)
        ui.show_figure(fig, pd.DataFrame({"people": n, **curve.lines}), "cc_people_scaling")
    for line in record.findings:
        st.markdown(f"- {line}")


with ui.user_errors():
    st.title("Context compression")
    st.caption("Each sentence of the context becomes one 384-d mean-pooled all-MiniLM-L6-v2 vector; a linear adapter "
               "(384 → decoder width) turns it into one input position in front of the question; the frozen decoder "
               "with a rank-16 LoRA on q/v of its last half of layers answers greedily. Trained here on synthetic "
               "personas (`python -m analysis train compression`); the held-out names were never seen in training.")
    ui.deviations.show("system:compression", title="Differences from the source")
    backbone = ui.get_backbone()
    variants = {str(path): label for label, path in shipped_variants(backbone).items()}
    choice = st.radio("Weights", [*variants, "folder"], horizontal=True, key="cc_weights_choice",
                      format_func=lambda v: variants.get(v, "a folder…"),
                      help="shipped: the default; ablations/…: earlier shipped weights kept beside it.")
    folder = choice
    if choice == "folder" or not variants:
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
        hp = m.get("hyperparameters", {})
        people, names = hp.get("people", 1), bool(hp.get("names"))
        val = m.get("results", {}).get("validation", {}).get("sentence+ids" if names else "sentence", {}).get("exact")
        warm = m.get("warm_start", {})
        start = f"from the run '{warm.get('run')}'" if warm.get("kind") == "from" else f"'{warm.get('kind', 'none')}'"
        st.caption(f"Weights: {m['steps_done']} steps (best at {m.get('best_step')}), "
                   f"{m.get('wall_seconds', 0) / 60:.0f} min of training, warm start {start}, {people} "
                   f"{'person' if people == 1 else 'people'} per training context"
                   + (", name tokens before each pool" if names else "")
                   + (f"; validation exact match with per-sentence pools {val:.0%}" if val is not None else "") + ".")

    # One section at a time: only the open tab runs and draws.
    sections = ["One person", "Several people", "Measured across people", "Reconstruction"]
    tabs = dict(zip(sections, st.tabs(sections, key="cc_section", on_change="rerun")))
    section = next((name for name, tab in tabs.items() if tab.open), sections[0])
    with tabs[section]:
        if section == "One person":
            one_person(system)
        elif section == "Several people":
            several_people(system)
        elif section == "Reconstruction":
            reconstruction(system)
        else:
            recorded_people()
