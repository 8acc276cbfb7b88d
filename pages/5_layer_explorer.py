"""Layer explorer

Does the intrinsic-dimension minimum pick the best layers? Sweep KV-Embedding's re-routing window (start ×
width × bias) on labelled pairs (Spearman) or a nano retrieval task (nDCG@10, queries with the paper's Query prompt),
next to the ID trajectory on the same layer axis.
"""

from dataclasses import asdict

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

import cache
import ui
from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.data import datasets
from analysis.eval.tasks import load_task, nano_task
from analysis.experiments.machinery.records import recorded_report
from analysis.sweep import windows
from analysis.sweep import runner
from analysis.inspect.intrinsic_dim import AUTO_DESCRIPTION, Selection
from analysis.methods import get_method
from cache.compute import bench_cell, stored_bench_cell, stored_cell_score, sts_score
from cache.sweep import cached_sweep

BIASES = [-2.0, 0.0, 0.5, 1.0, 2.0, 4.0]
NANO_QUERIES = 50  # the explorer's nano retrieval task: seeded judged queries, their positives and a few distractors


def score(method, data, label: str) -> float:
    """A reference's score on `data` by a full encode: Spearman on pairs, nDCG@10 (the benchmark's cell) on a task."""
    backbone = ui.get_backbone()
    if hasattr(data, "kind"):
        return ui.shown(label, lambda progress: bench_cell(ui.store(), backbone, method, data, n_boot=0,
                                                           progress=progress), quiet=True)[0].value
    return ui.shown(label, lambda progress: sts_score(ui.store(), backbone, data, method, progress=progress),
                    quiet=True)[0]


def lookup(method, data) -> float | None:
    """A stored score of `method` on `data` (a sweep's cell, or a reference computed by `score`), or None."""
    backbone = ui.get_backbone()
    if hasattr(data, "kind") and method.name != "kv_embedding":
        found = stored_bench_cell(ui.store(), backbone, method, data, n_boot=0)
        return None if found is None else found[0].value
    return stored_cell_score(ui.store(), backbone, data, method)


def retrieval_input():
    """A nano retrieval task on a registry set's selection part (choosing layers is selection: never the report
    part), with as many seeded distractors as the user can wait for."""
    sets = {d.label: d.id for d in datasets.REGISTRY if "retrieval" in d.tasks and d.present()}
    if not sets:
        scifact = datasets.get("scifact-select")
        raise UserError(f"No retrieval set is on this machine: {scifact.missing()}")
    selection = [k for k, v in sets.items() if v.endswith("-select")] or list(sets)
    name = st.selectbox("Retrieval set", list(sets), index=list(sets).index(selection[0]), key="explorer_retrieval")
    distractors = int(st.slider("Distractors (seeded; each costs a document per cell)", 50, 1000, 200, step=50,
                                key="explorer_distractors"))
    task = nano_task(load_task(sets[name]), NANO_QUERIES, distractors)
    st.caption(ui.md(f"{task.name}: nDCG@10 per judged query, averaged; queries with KV-Embedding's Query prompt."))
    return task


def figure(ids, sel, rows, refs, id_score, L, metric: str = "Spearman") -> go.Figure:
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06, row_heights=[0.3, 0.35, 0.35],
                        subplot_titles=("intrinsic dimension (the 'auto' trajectory)", f"{metric} by window start",
                                        f"{metric} heatmap"))
    fig.add_trace(go.Scatter(x=list(range(L + 1)), y=[np.nan if v is None else v for v in ids],
                             mode="lines+markers", name="ID", line=dict(color="black")), 1, 1)
    frame = pd.DataFrame(rows)
    if len(frame):
        frame["config"] = [f"w={w} b={b:g}{' rot' if r else ''}" for w, b, r in
                           zip(frame["width"], frame["bias"], frame["rerotate"])]
        for config, g in frame.groupby("config", sort=False):
            fig.add_trace(go.Scatter(x=g["start"], y=g["spearman"], mode="lines+markers", name=config), 2, 1)
        pivot = frame.pivot_table(index="config", columns="start", values="spearman")
        fig.add_trace(go.Heatmap(z=pivot.to_numpy(), x=list(pivot.columns), y=list(pivot.index),
                                 colorscale="Viridis", colorbar=dict(title="ρ" if metric == "Spearman" else metric,
                                                                     y=0.17, len=0.33)), 3, 1)
    for (name, value), dash in zip(refs.items(), ("dash", "dot")):
        if value is not None:
            fig.add_hline(y=value, line_dash=dash, annotation_text=f"{name} {value:.3f}", row=2, col=1)
    if sel.layers:
        for r in (1, 2, 3):
            fig.add_vrect(x0=sel.start - 0.5, x1=sel.end + 0.5, fillcolor="orange", opacity=0.15, line_width=0,
                          row=r, col=1)
        if id_score is not None:
            fig.add_trace(go.Scatter(x=[sel.start], y=[id_score], mode="markers", name="ID window",
                                     marker=dict(symbol="star", size=14, color="orange")), 2, 1)
    fig.update_xaxes(title_text="layer: hidden state k = input of decoder layer k (window start)", row=3, col=1)
    fig.update_layout(height=900, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.08))
    return fig


def show_recorded(backbone) -> None:
    """The published report's layer map of a built-in model, labelled as recorded: what a visitor sees before any
    cell of their own settings is computed (nothing for a model without a published report)."""
    report = recorded_report(backbone.identity)
    layers = (report or {}).get("layers") or {}
    m = layers.get("map")
    if not m:
        return
    L = backbone.facts.n_layers
    s = layers["selection"]
    sel = Selection(s["rule"], s["start"], s["end"], tuple(s["layers"]), s["reason"])
    rows = [{k: c[k] for k in ("start", "width", "bias", "rerotate", "spearman")} for c in m["cells"]]
    window = m.get("id_window") or {}
    st.caption(ui.md(f"Shown until a cell of your settings is computed: **the published layer map** of this model "
                     f"(recorded {report['created'][:10]} on {report['data']['name']}, Spearman; bias, widths and "
                     "data as published, not your settings)."))
    ui.show_figure(figure(layers["id_trajectory"], sel, rows, {"prompt only": m.get("prompt_only")},
                          window.get("spearman"), L), pd.DataFrame(rows), "layer_sweep_recorded")


with ui.user_errors():
    st.title("Layer explorer")
    st.caption("Each cell re-routes in decoder layers start … start+width−1 and is scored by Spearman's ρ of "
               "cosine similarity against the gold scores, or by nDCG@10 on a nano retrieval task (its queries and "
               "documents each get a prompt-only pass). The prompt-only forward runs once; each cell then runs only "
               "its decoder layers from the window start on. Cells are cached one by one: stop at any time, run "
               "again to resume (`python -m analysis sweep` shares the entries). " + ui.LAYER_CONVENTION)
    ui.deviations.show("method:kv_embedding", title="KV-Embedding: differences from the paper")
    backbone = ui.get_backbone()
    L = backbone.facts.n_layers
    col_p, col_s = st.columns(2)
    with col_p:
        target = st.radio("Score on", ["pairs", "retrieval"], horizontal=True, key="explorer_target",
                          format_func={"pairs": "STS pairs (Spearman)", "retrieval": "Nano retrieval (nDCG@10)"}.get)
        data = ui.pairs_input("explorer", default="Lee corpus (human ratings)") if target == "pairs" else \
            retrieval_input()
        metric = "Spearman" if target == "pairs" else "nDCG@10"
        prompt = st.radio("Prompt" if target == "pairs" else "Documents' prompt", ["document", "query"],
                          horizontal=True, key="explorer_prompt")
        pooling = st.selectbox("Pooling", ["hybrid", "last", "mean"], key="explorer_pooling")
    with col_s:
        lo, hi = st.slider("Window starts (decoder layers)", 0, L - 1, (1, L - 1), key="explorer_starts")
        step = st.number_input("Every k-th start", 1, L, 3, key="explorer_step")
        widths = st.multiselect("Widths (layers)", list(range(1, 11)), default=[windows.paper_width(L)],
                                key="explorer_widths", help=f"The paper's window has ⌊0.1·L⌋+1 = "
                                                             f"{windows.paper_width(L)} layers.")
        biases = st.multiselect("Biases", BIASES, default=[1.0], key="explorer_biases")
        rot = st.multiselect("Prefix key position", ["literal", "re-rotated to 0"], default=["literal"],
                             key="explorer_rot")
    base = {"prompt": prompt, "pooling": pooling}
    cells = windows.grid(L, range(lo, hi + 1, int(step)), widths, biases,
                          [r != "literal" for r in rot] or [False])
    methods = [windows.cell_method(c, L, **base) for c in cells]

    auto = get_method("kv_embedding", **base)
    found = cache.auto_window(ui.store(), backbone, auto, compute=False)
    if found is None and not st.session_state.get("explorer_running"):
        st.info("The ID trajectory behind layers=auto is not computed yet for this model and prompt (once, "
                f"over {AUTO_DESCRIPTION}); it is computed when you run the sweep.")
        if st.button("Run / resume sweep", key="explorer_first_run", type="primary"):
            st.session_state["explorer_running"] = True
            st.rerun()
        show_recorded(backbone)
        st.stop()
    if found is None:
        bar, progress = ui.progress_bar("ID trajectory for layers=auto:", first="ID trajectory for layers=auto…")
        found = cache.auto_window(ui.store(), backbone, auto, progress)
        bar.empty()
    sel, ids = found
    st.caption(f"ID window: **{sel.rule}**, decoder layers {sel.start}–{sel.end}. {sel.reason}. Trajectory: "
               f"{AUTO_DESCRIPTION}.")

    done = {i: v for i, m in enumerate(methods) if (v := lookup(m, data)) is not None}
    passes = runner.text_passes([c for i, c in enumerate(cells) if i not in done], L, data)
    st.write(f"{len(cells)} cell(s), {len(done)} already computed; the rest costs about {passes:,} prompt-only text "
             f"passes (at most {budgets.limit('sweep_text_forwards'):,} per run).")
    c1, c2 = st.columns(2)
    if c1.button("Run / resume sweep", key="explorer_run", type="primary"):
        st.session_state["explorer_running"] = True
    if c2.button("Stop", key="explorer_stop"):
        st.session_state["explorer_running"] = False

    refs_methods = {"prompt only": get_method("kv_embedding", layers="none", **base),
                    "PromptEOL": get_method("prompteol")}
    id_method = get_method("kv_embedding", layers=",".join(map(str, sel.layers)), **base)
    id_cell = windows.Cell(sel.start, len(sel.layers), 1.0) if sel.layers else None  # same key as id_method
    if st.session_state.get("explorer_running"):
        st.session_state["explorer_running"] = False  # a refused or failed run must not restart on every rerun
        score(refs_methods["PromptEOL"], data, f"PromptEOL: {metric}")
        bar, progress = ui.progress_bar("Sweep:", first="Sweep: the prompt-only pass…")
        work = cells + ([id_cell] if id_cell is not None and id_cell not in cells else [])
        run = cached_sweep(ui.store(), backbone, data, work, base=base, progress=progress)  # as the CLI does
        done.update({i: run.scores[c] for i, c in enumerate(cells)})
        bar.empty()

    refs = {name: lookup(m, data) for name, m in refs_methods.items()}
    id_score = lookup(id_method, data)
    rows = [{**asdict(c), "layers": ",".join(map(str, c.layers(L))), "spearman": done[i]}
            for i, c in enumerate(cells) if i in done]
    if not rows:
        show_recorded(backbone)
        st.info("No cell of these settings computed yet: press *Run / resume sweep*.")
        st.stop()
    ui.show_figure(figure(ids, sel, rows, refs, id_score, L, metric), pd.DataFrame(rows).rename(
        columns={"spearman": metric}), "layer_sweep")
    result = windows.summary(rows, L, sel.layers, id_score, refs)
    if result["best"] is not None:
        b, sym = result["best"], "ρ" if metric == "Spearman" else metric
        lines = [f"**Best cell**: decoder layers {b['layers'][0]}–{b['layers'][-1]}, bias {b['bias']:g}"
                 f"{', re-rotated' if b['rerotate'] else ''}: {sym} = {b['spearman']:.4f}"]
        if id_score is not None:
            lines.append(f"**ID window** {sel.start}–{sel.end}: {sym} = {id_score:.4f} (rank "
                         f"{result['id_window']['rank_among_cells']} of {len(rows) + 1})")
        lines += [f"**{k}**: {sym} = {v:.4f}" for k, v in refs.items() if v is not None]
        st.markdown("  \n".join(lines))

