"""Benchmark

Methods × tasks of one family: STS Spearman and probe accuracy on short sentences, retrieval nDCG@10, MTEB's
classification accuracy and clustering V-measure, and long-document retrieval nDCG@1 against document length (as
LongEmbed draws it), each with a 95% bootstrap interval and every method against the best with a paired interval.
Every cell is cached, so the table fills in as it computes and reloads instantly.
"""

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

import ui
from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.data import datasets, longdoc, samples
from analysis.data.files import load_beir, read_sts, read_texts
from analysis.eval.score import best_of, compare_scores
from analysis.eval.tasks import KIND_OF, METRIC, Task, load_task, select_task
from analysis.weights import stand_in
from cache.compute import bench_cell, bench_cell_stored

KIND_NAMES = {"sts": "STS", "probe": "probe"}
SAMPLE_FROM = 1000  # pair sets with more distinct texts are scored on a sample (the slider); Lee, demo: whole
FAMILIES = {"sts": "Sentences: STS and probes", "retrieval": "Retrieval", "classification": "Classification (MTEB)",
            "clustering": "Clustering (MTEB)", "longdoc": "Long documents"}
CAPTIONS = {
    "sts": "STS: Spearman correlation of cosine similarity with the gold scores. Probe: accuracy of a logistic "
           "regression on the frozen embeddings (stratified 5-fold cross-validation).",
    "retrieval": "nDCG@10 of the corpus ranked by cosine similarity for each judged query, as MTEB scores it; queries "
                 "are embedded as the method embeds queries (KV-Embedding's Query prompt, the instruction GIRCSE and "
                 "Causal2Vec put on queries), documents as documents. The nano version keeps a seeded 50 queries, all "
                 "their positives and 1,000 seeded distractors: a quick look, not a record.",
    "classification": "MTEB's protocol: 10 experiments, each a logistic regression on 8 train texts per label "
                      "(undersampled as MTEB does), accuracy on the evaluation texts (macro-F1 in the CSV).",
    "clustering": "MTEB's fast clustering protocol (mini-batch k-means on 10 draws of the embedded texts, V-measure "
                  "against the labels); on Banking77 it is MTEB's protocol on a set MTEB does not cluster.",
    "longdoc": "LongEmbed's synthetic tasks generated here: each document of the given length hides one fact (a "
               "pass key, an invented fact, or a SciFact abstract among others), one query asks for it; nDCG@1 of "
               "ranking every document of that length per query. Longer than the model reads: not offered.",
}


def sentence_tasks() -> list[Task]:
    """The registry's pair sets (STS) and labelled sets (probe), a large pair set sampled, and the user's files."""
    menu = {f"{d.short} ({KIND_NAMES[KIND_OF[d.kind]]})": (lambda d=d: Task(d.short, KIND_OF[d.kind], d.load()))
            for d in datasets.available() if d.kind in KIND_OF}
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
    return tasks


def family_sets(family: str) -> list:
    """The registry's sets scored in `family`, present ones first; an absent one is named with how to get it."""
    sets = [d for d in datasets.REGISTRY if family in d.tasks]
    for d in sets:
        if not d.present() and d.fetch_name:
            st.caption(ui.md(d.missing()))
    return [d for d in sets if d.present()]


def retrieval_tasks() -> list[Task]:
    sets = family_sets("retrieval")
    names = {d.label: d.id for d in sets}
    chosen = st.multiselect("Retrieval sets", list(names), default=list(names)[:1], key="bench_retrieval_sets")
    nano = st.checkbox("Nano version (50 seeded queries, their positives, 1,000 seeded distractors)", value=True,
                       key="bench_nano")
    tasks = [load_task(f"nano:{names[n]}" if nano else names[n]) for n in chosen]
    folder = st.text_input("BEIR folder on this machine (corpus.jsonl, queries.jsonl, qrels/test.tsv)",
                           key="bench_beir").strip()
    if folder:
        beir = load_beir(folder)
        tasks.append(Task(f"BEIR {beir.name}", "retrieval", beir))
    return tasks


def labelled_tasks(family: str) -> list[Task]:
    sets = family_sets(family)
    names = {d.label: d.id for d in sets}
    chosen = st.multiselect("Data sets", list(names), default=list(names)[:1], key=f"bench_{family}_sets")
    tasks = [load_task(f"{family}:{names[n]}") for n in chosen]
    unit = "evaluation texts" if family == "classification" else "texts"
    c1, c2 = st.columns([3, 1])
    n = int(c1.slider(f"{unit.capitalize()} per set (a seeded sample stratified by label; fewer = faster)", 100, 3000,
                      500 if family == "classification" else 1000, step=100, key=f"bench_{family}_sample"))
    seed = int(c2.number_input("Sample seed", 0, 2**31 - 1, 0, key=f"bench_{family}_seed"))
    out = []
    for t in tasks:
        sampled, report = select_task(t, sample=n, seed=seed)
        st.caption(ui.md(f"{t.name}: {samples.caption(report)}."))
        out.append(sampled)
    return out


@st.cache_resource(max_entries=8, show_spinner="Writing the long documents…")
def _generated(identity: str, kind: str, lengths: tuple, n: int, _backbone) -> Task:
    """A long-document set, generated once per model (`identity`), kind, lengths and size (tokenizing takes
    seconds); the same for every session."""
    data = longdoc.generate(kind, _backbone.tokenizer, max_length=_backbone.facts.max_length, lengths=list(lengths),
                            n=n)
    return Task(data.name, "longdoc", data)


def longdoc_tasks(backbone) -> list[Task]:
    kinds = {"passkey": "Passkey", "needle": "Needle (an invented fact)"}
    if datasets.get("scifact-report").present():
        kinds["scifact"] = "SciFact abstracts (real text)"
    c1, c2 = st.columns(2)
    kind = c1.radio("Task", list(kinds), format_func=kinds.get, horizontal=True, key="bench_longdoc_kind")
    n = int(c2.slider("Documents per length (each with its query)", 2, longdoc.N_PER_LENGTH, 10,
                      key="bench_longdoc_n"))
    allowed = longdoc.lengths_for(kind, backbone.facts.max_length)
    lengths = st.multiselect("Document lengths (tokens)", allowed, default=[x for x in allowed if x <= 1024] or allowed,
                             key="bench_longdoc_lengths")
    if not lengths:
        return []
    task = _generated(backbone.identity, kind, tuple(sorted(lengths)), n, backbone)
    ui.check_sizes([t for b in task.data.sets.values() for t in [*b.corpus.values(), *b.queries.values()]], task.name)
    return [task]


def cell_text(value: float, lo: float, hi: float) -> str:
    return f"{value:.3f}" if lo != lo else f"{value:.3f} [{lo:.3f}, {hi:.3f}]"  # lo != lo: NaN, no interval


def length_figure(scores: dict) -> tuple[go.Figure, pd.DataFrame]:
    """LongEmbed's figure: nDCG@1 against document length, one line per method, 95% intervals over queries."""
    fig, rows = go.Figure(), []
    for label, s in scores.items():
        per = sorted(((int(k), v) for k, v in s.detail["lengths"].items()))
        xs, ys = [k for k, _ in per], [v["nDCG@1"] for _, v in per]
        lo, hi = [v["ci"][0] for _, v in per], [v["ci"][1] for _, v in per]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=ui.label(label),
                                 error_y=dict(type="data", array=np.subtract(hi, ys), arrayminus=np.subtract(ys, lo))))
        rows += [{"method": label, "length": k, "nDCG@1": v["nDCG@1"], "ci_low": v["ci"][0], "ci_high": v["ci"][1],
                  "n": v["n"], "mean tokens": v["tokens"]} for k, v in per]
    lengths = sorted({r["length"] for r in rows})
    fig.update_xaxes(type="log", tickvals=lengths, ticktext=[f"{x:,}" for x in lengths],
                     title="document length (tokens)")
    fig.update_yaxes(title="nDCG@1", range=[-0.02, 1.02])
    fig.update_layout(height=480, title="Long-document retrieval: nDCG@1 against document length (95% intervals over "
                                        "queries)")
    return fig, pd.DataFrame(rows)


def versus_best(task: Task, scores: dict, n_boot: int) -> tuple[list[dict], str]:
    """(rows, how the bootstrap resampled): the best method on `task` minus each other one, paired over the task's
    units (`compare_scores`)."""
    best = best_of(scores)
    table = compare_scores(scores, n_boot=n_boot, seed=0, versus=best)
    return [{"data": task.name, "best": d["a"], "method": d["b"], "difference": d["difference"],
             "95% CI": "" if d["ci"][0] != d["ci"][0] else f"[{d['ci'][0]:.3f}, {d['ci'][1]:.3f}]", "p": d["p"]}
            for d in table["differences"]], table["bootstrap"]


LONG_WORK_TOKENS = 100_000  # tokens not yet in the cache past which the page asks first (about 3 min on SmolLM2)


def tokens_to_embed(backbone, task) -> int:
    """About how many tokens scoring `task` embeds: the texts it embeds (`Task.n_texts`) times their mean length, each
    text cut at the model's limit as the methods cut it (a classification task draws its train texts from more).
    Counted once per model and set in a session: the page reruns on every click while a cell is missing."""
    counted = st.session_state.setdefault("bench_tokens", {})
    memo = (backbone.identity, task.name, task.n_texts())
    if memo not in counted:
        counted[memo] = _count_tokens(backbone, task)
    return counted[memo]


def _count_tokens(backbone, task) -> int:
    texts = task.texts()
    lengths = backbone.tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    mean = sum(min(len(ids), backbone.facts.max_length) for ids in lengths) / max(len(lengths), 1)
    return round(mean * task.n_texts())


def confirm_long_work(backbone, methods, tasks, n_boot: int) -> None:
    """Stop with the size of the work and a button when the chosen cells would embed many tokens that are not in
    the cache: opening the Retrieval family on a real model is minutes of work per method, which nobody should start
    by clicking a tab. Cells already stored are never held back."""
    missing = [(m, t) for m in methods for t in tasks
               if not bench_cell_stored(ui.store(), backbone, m, t, n_boot=n_boot, seed=0)]
    if not missing:
        return
    per_task = {t.name: tokens_to_embed(backbone, t) for t in {t.name: t for _, t in missing}.values()}
    tokens = sum(per_task[t.name] for _, t in missing)
    cells = {f"{m.name} {m.params!r} on {t.name}" for m, t in missing}
    if tokens < LONG_WORK_TOKENS or cells <= st.session_state.get("bench_go", set()):
        return
    st.info(f"{len(missing)} cell(s) are not in the cache: about {tokens:,} tokens to embed in all (SmolLM2-135M "
            f"embeds about 550 tokens/s on two CPU cores: about {tokens / 550 / 60:.0f} min there). Choose fewer "
            "methods or sets, or the nano version, to make it shorter.")
    if st.button(f"Compute {len(missing)} cell(s)", key="bench_compute", type="primary"):
        st.session_state["bench_go"] = cells
        st.rerun()
    st.stop()


with ui.user_errors():
    st.title("Benchmark")
    family = ui.choice("Task family", FAMILIES, "bench_family", format_func=FAMILIES.get,
                       address="family")  # ?family=longdoc opens a family (Claims links)
    st.caption(CAPTIONS[family] + " Intervals: 95% percentile bootstrap over the family's units (pairs, texts, "
               "queries, experiments, or (length, query) items).")
    methods = ui.method_picker("bench", default=("last", "mean", "prompteol"))
    backbone = ui.get_backbone()
    tasks = {"sts": sentence_tasks, "retrieval": retrieval_tasks,
             "classification": lambda: labelled_tasks("classification"),
             "clustering": lambda: labelled_tasks("clustering"), "longdoc": lambda: longdoc_tasks(backbone)}[family]()
    n_boot = int(st.slider("Bootstrap replicates", 0, budgets.limit("bootstrap"), 1000, step=100, key="bench_boot"))
    if not tasks:
        st.info("Choose at least one data set.")
        st.stop()
    for t in tasks:
        budgets.check("texts", t.n_texts(), f"the number of texts to embed for {t.name}")
    confirm_long_work(backbone, methods, tasks, n_boot)

    table_slot, rows, scores = st.empty(), [], {}
    for m in methods:
        label = f"{m.title} ({stand_in.label(m, backbone)})"  # "soft_tokens (frozen: ...)" where no adapter is
        for task in tasks:
            s, meta = ui.shown(f"{m.title} on {task.name}",
                               lambda progress, m=m, task=task: bench_cell(ui.store(), backbone, m, task, n_boot=n_boot,
                                                                           seed=0, progress=progress), quiet=True)
            scores.setdefault(task.name, {})[label] = s
            rows.append({"method": label, "data": task.name, "metric": s.metric, "score": s.value, "ci_low": s.lo,
                         "ci_high": s.hi, "n": s.n, "cached": meta["cache_hit"],
                         **{k: v for k, v in s.metrics.items() if k != s.metric}})
            long = pd.DataFrame(rows)
            wide = long.assign(cell=[cell_text(r.score, r.ci_low, r.ci_high) for r in long.itertuples()]) \
                .pivot_table(index="method", columns=["data", "metric"], values="cell", aggfunc="first", sort=False)
            wide.columns = [f"{d} ({metric})" for d, metric in wide.columns]
            with table_slot.container():
                ui.show_table(wide)

    frame = pd.DataFrame(rows)
    if family == "longdoc":
        for task in tasks:
            fig, data = length_figure(scores[task.name])
            ui.show_figure(fig, data, "longdoc_by_length")
    else:
        frame["err_plus"], frame["err_minus"] = frame["ci_high"] - frame["score"], frame["score"] - frame["ci_low"]
        shown = frame.assign(data=[ui.label(d) for d in frame["data"]])  # file names are the user's: shown as typed
        metrics = " or ".join(dict.fromkeys(METRIC[t.kind] for t in tasks))
        fig = px.bar(shown, x="data", y="score", color="method", barmode="group", error_y="err_plus",
                     error_y_minus="err_minus", hover_data={"metric": True, "n": True, "err_plus": False,
                                                            "err_minus": False},
                     title=f"Score per data set ({metrics}) with 95% intervals")
        fig.update_layout(height=480, yaxis_title="score")
        ui.show_figure(fig, frame.drop(columns=["err_plus", "err_minus"]), "benchmark")
    computed = int((~frame["cached"]).sum())
    st.caption(f"{len(frame)} cell(s): {computed} computed now, {len(frame) - computed} from the cache.")

    if len(methods) > 1:
        st.subheader("Each method vs the best, on the same units")
        paired, hows = [], {}
        for task in tasks:
            found, how = versus_best(task, scores[task.name], n_boot)
            paired += found
            hows[how] = None
        paired = pd.DataFrame(paired).round({"difference": 3})
        ui.show_table(paired.assign(p=[f"{p:.2g}" if p == p else "" for p in paired["p"]]), index=False)
        st.caption(f"Best minus each other method, by the task's main metric, per data set. Interval and p: a "
                   f"{'; a '.join(hows)} (no resamples, no interval), so a difference is tested rather than read off "
                   "two separate intervals. The command line: `python -m analysis compare`.")
