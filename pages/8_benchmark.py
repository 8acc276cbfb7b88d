"""Benchmark

Methods × data sets: STS Spearman, classification-probe accuracy and retrieval nDCG@10, each with a 95%
bootstrap interval. Every cell is cached, so the table fills in as it computes and reloads instantly.
"""

import numpy as np
import pandas as pd
import plotly.express as px
import streamlit as st

import cache
import ui
from analysis.core import budgets
from analysis.data import datasets
from analysis.core.errors import UserError
from analysis.data.files import load_beir, read_sts, read_texts
from analysis.data import samples
from analysis.eval.sts import compare_cosines, score_pairs
from analysis.eval.tasks import KIND_OF, Task, select_task
from cache.compute import bench_cell

KIND_NAMES = {"sts": "STS", "probe": "probe"}
SAMPLE_FROM = 1000  # pair sets with more distinct texts are scored on a sample (the slider); Lee, demo: whole


def builtin_tasks() -> dict:
    """The registry's pair sets (STS) and labelled sets (probe) present here, by menu name; each value builds its
    Task when called."""
    return {f"{d.short} ({KIND_NAMES[KIND_OF[d.kind]]})": (lambda d=d: Task(d.short, KIND_OF[d.kind], d.load()))
            for d in datasets.available() if d.kind in KIND_OF}


def versus_best(backbone, methods, task, frame, n_boot: int) -> list[dict]:
    """Rows of `compare_cosines(..., versus=best)` for one STS task: the per-pair cosines of each method (its
    embeddings come from the compute cache, where the table's cells put them)."""
    def cosines(m):
        return score_pairs(task.data, lambda texts: cache.cached_encode(ui.store(), backbone, m, texts)[0],
                           n_boot=0).cosines

    scores = frame[frame["data"] == task.name].set_index("method")["score"]
    labels = {f"{m.title} ({m.name})": m for m in methods}
    best = scores.fillna(-np.inf).idxmax()
    table = compare_cosines({k: cosines(m) for k, m in labels.items()}, task.data.scores, n_boot=n_boot, seed=0,
                            versus=best)
    return [{"data": task.name, "best": d["a"], "method": d["b"], "difference": d["difference"],
             "95% CI": "" if d["ci"][0] != d["ci"][0] else f"[{d['ci'][0]:.3f}, {d['ci'][1]:.3f}]", "p": d["p"]}
            for d in table["differences"]]


def cell_text(value: float, lo: float, hi: float) -> str:
    return f"{value:.3f}" if lo != lo else f"{value:.3f} [{lo:.3f}, {hi:.3f}]"  # lo != lo: NaN, no interval


with ui.user_errors():
    st.title("Benchmark")
    st.caption("STS: Spearman correlation of cosine similarity with the gold scores. Probe: accuracy of a "
               "logistic regression on the frozen embeddings (stratified 5-fold cross-validation). Retrieval: "
               "nDCG@10 of cosine ranking. Intervals: 95% percentile bootstrap over pairs, texts or queries.")
    methods = ui.method_picker("bench", default=("last", "mean", "prompteol"))

    menu = builtin_tasks()
    chosen = st.multiselect("Data sets", list(menu), default=["Demo pairs (STS)", "Topics (probe)"], key="bench_sets")
    tasks = [menu[name]() for name in chosen]
    large = [t for t in tasks if t.kind == "sts" and t.n_texts() > SAMPLE_FROM]
    if large:  # a seeded sample stratified by genre, never the first N (STS-B's first 500 dev pairs are captions)
        most = max(len(t.data) for t in large)
        c1, c2 = st.columns([3, 1])
        n = int(c1.slider("Pairs per large STS set (a seeded sample, stratified by genre; fewer = faster)", 100,
                          most, min(500, most), step=100, key="bench_sample"))
        seed = int(c2.number_input("Sample seed", 0, 2**31 - 1, 0, key="bench_seed"))
        for t in large:
            sampled, report = select_task(t, sample=n, seed=seed)
            tasks[tasks.index(t)] = sampled
            st.caption(ui.md(f"{t.name}: {samples.caption(report)}."))
    with st.expander("Your own data"):
        # One file per box, checked like every other page's texts (size before parsing, then count and characters).
        up = st.file_uploader("Similarity pairs (STS-B format, or sentence1, sentence2, score)",
                              type=["csv", "tsv", "txt"], key="bench_pairs_upload")
        if up is not None:
            pairs = read_sts(ui.upload_bytes(up), name=up.name)
            budgets.check("pairs", len(pairs), f"the number of pairs in {up.name}")
            ui.check_sizes(pairs.unique_texts(), up.name)
            tasks.append(Task(up.name, "sts", pairs))
        up = st.file_uploader("Labelled texts for the probe (.csv/.tsv with text and label columns)",
                              type=["csv", "tsv"], key="bench_texts_upload")
        if up is not None:
            texts = read_texts(ui.upload_bytes(up), filename=up.name)
            if texts.labels is None:
                raise UserError(f"{up.name} has no 'label' column: the probe needs one.")
            ui.check_sizes(texts.texts, up.name)
            tasks.append(Task(up.name, "probe", texts))
        folder = st.text_input("BEIR folder on this machine (corpus.jsonl, queries.jsonl, qrels/test.tsv)",
                               key="bench_beir").strip()
        if folder:
            beir = load_beir(folder)
            tasks.append(Task(f"BEIR {beir.name}", "retrieval", beir))
    n_boot = int(st.slider("Bootstrap replicates", 0, budgets.limit("bootstrap"), 1000, step=100, key="bench_boot"))
    if not tasks:
        st.info("Choose at least one data set.")
        st.stop()
    for t in tasks:
        budgets.check("texts", t.n_texts(), f"the number of texts to embed for {t.name}")

    backbone = ui.get_backbone()
    table_slot, rows = st.empty(), []
    for m in methods:
        for task in tasks:
            s, meta = ui.shown(f"{m.title} on {task.name}",
                               lambda progress, m=m, task=task: bench_cell(ui.store(), backbone, m, task, n_boot=n_boot,
                                                                           seed=0, progress=progress), quiet=True)
            rows.append({"method": f"{m.title} ({m.name})", "data": task.name, "metric": s.metric, "score": s.value,
                         "ci_low": s.lo, "ci_high": s.hi, "n": s.n, "cached": meta["cache_hit"]})
            long = pd.DataFrame(rows)
            wide = long.assign(cell=[cell_text(r.score, r.ci_low, r.ci_high) for r in long.itertuples()]) \
                .pivot_table(index="method", columns=["data", "metric"], values="cell", aggfunc="first", sort=False)
            wide.columns = [f"{d} ({metric})" for d, metric in wide.columns]
            table_slot.dataframe(wide)

    frame = pd.DataFrame(rows)
    frame["err_plus"], frame["err_minus"] = frame["ci_high"] - frame["score"], frame["score"] - frame["ci_low"]
    shown = frame.assign(data=[ui.label(d) for d in frame["data"]])  # file names are the user's: shown as typed
    fig = px.bar(shown, x="data", y="score", color="method", barmode="group", error_y="err_plus",
                 error_y_minus="err_minus", hover_data={"metric": True, "n": True, "err_plus": False,
                                                        "err_minus": False},
                 title="Score per data set (Spearman, accuracy or nDCG@10) with 95% intervals")
    fig.update_layout(height=480, yaxis_title="score")
    ui.show_figure(fig, frame.drop(columns=["err_plus", "err_minus"]), "benchmark")
    computed = int((~frame["cached"]).sum())
    st.caption(f"{len(frame)} cell(s): {computed} computed now, {len(frame) - computed} from the cache.")

    sts_tasks = [t for t in tasks if t.kind == "sts"]
    if len(methods) > 1 and sts_tasks:
        st.subheader("Each method vs the best, on the same pairs")
        with st.spinner("Paired differences…"):
            paired = [row for t in sts_tasks for row in versus_best(backbone, methods, t, frame, n_boot)]
        st.dataframe(pd.DataFrame(paired), hide_index=True)
        st.caption("Best minus each other method, by STS Spearman, per data set. Interval and p: a paired "
                   f"percentile bootstrap over pairs ({n_boot} resamples, seed 0), the same resampled pairs for both "
                   "methods, so a difference is tested rather than read off two separate intervals (p: two-sided; "
                   "no resamples, no interval). The command line: `python -m analysis compare`.")
