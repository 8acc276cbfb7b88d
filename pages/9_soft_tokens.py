"""Soft tokens

Watch a model "think" in soft tokens (GIRCSE), trained with contrastive refinement here or frozen, and test
whether more generated tokens make a better embedding.
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.colors import qualitative
from plotly.subplots import make_subplots

import ui
from analysis.data import datasets
from analysis.methods.soft_tokens import DEFAULT_INSTRUCTION
from analysis.experiments.gircse import recorded, reference_rows
from analysis.inspect.generation import SCALING_KS, adapter_variants, steps_frame, token_heatmap, training_log
from ui.traces import soft_generation, soft_scaling

EMOTION = "Which emotion does this text express?"
DEFAULT_TEXT = "After months of waiting, the letter finally came: she had been accepted."


def shown(token: str) -> str:
    return repr(token)[1:-1] or "∅"  # newlines and spaces stay visible


def token_table(r: dict) -> pd.DataFrame:
    """Steps as rows, ranks as columns: "token  p"."""
    rows = {f"step {s + 1}": [f"{shown(t)}  {p:.3f}" for t, p in zip(r["top_tokens"][s], r["top_probs"][s])]
            for s in range(len(r["top_tokens"]))}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=[f"#{i + 1}" for i in range(len(r["top_tokens"][0]))])
    frame.insert(0, "entropy", np.round(r["entropy"], 2))
    return frame


def heatmap_figure(r: dict, title: str) -> tuple[go.Figure, pd.DataFrame]:
    heat = token_heatmap(r, max_tokens=25)
    fig = go.Figure(go.Heatmap(z=heat.values, x=list(heat.columns), y=[ui.label(t) for t in heat.index],
                               colorscale="Blues",
                               zmin=0, zmax=max(float(heat.values.max()), 1e-6), colorbar=dict(title="p"),
                               hovertemplate="%{y} at %{x}: p = %{z:.3f}<extra></extra>"))
    fig.update_layout(title=title, height=120 + 18 * len(heat), margin=dict(l=10, r=10, t=40, b=10),
                      yaxis=dict(autorange="reversed"))
    return fig, heat.reset_index()


def curves_figure(results: dict, title: str, ref=None) -> tuple[go.Figure, pd.DataFrame]:
    """Entropy of s_k and drift (cosine to the step-K embedding) per step, one line per result, side by side in one
    figure: a page draws its first figure sooner the fewer it mounts (issue 38). `ref`: (entropy, label) drawn as a
    dotted line on the entropy panel."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=("entropy of s_k (nats)", "drift: cosine to the step-K embedding"))
    rows = []
    for i, (label, r) in enumerate(results.items()):
        steps = np.arange(1, len(r["entropy"]) + 1)
        color = qualitative.Plotly[i % len(qualitative.Plotly)]  # one colour per result, in both panels
        for col, key in ((1, "entropy"), (2, "drift")):
            fig.add_scatter(x=steps, y=r[key], mode="lines+markers", name=label, legendgroup=label,
                            showlegend=col == 1, line={"color": color}, row=1, col=col)
        rows += [{"instruction": label, "step": int(s), "entropy": float(e), "drift": float(d)}
                 for s, e, d in zip(steps, r["entropy"], r["drift"])]
    if ref is not None:
        fig.add_hline(y=ref[0], line_dash="dot", annotation_text=ref[1], row=1, col=1)
    fig.update_xaxes(title_text="step k")
    fig.update_layout(title=title, height=340, margin={"l": 10, "r": 10, "t": 60, "b": 10},
                      legend={"orientation": "h", "y": -0.3})
    return fig, pd.DataFrame(rows)


def recorded_figure(record) -> tuple[go.Figure, pd.DataFrame]:
    """The recorded K curves (the record's `k_curve` series) with their intervals; Causal-EOS and PromptEOL as flat
    reference lines across K (the fair baseline with its 95% band); the other configurations (ablations, Causal-EOS
    generating) as points."""
    fig, rows = go.Figure(), []
    curve = record.series_named("k_curve")
    ks = list(curve.xs)
    cost = {}
    if any(s.name == "cost" for s in record.series):
        c = record.series_named("cost")
        cost = dict(zip(c.xs, c.lines["× plain forward"]))
    for label, values in curve.lines.items():
        y = np.array(values, dtype=float)
        ci = np.array([c if c is not None else (np.nan, np.nan) for c in curve.intervals.get(label, [None] * len(ks))],
                      dtype=float)
        fig.add_scatter(x=ks, y=y, mode="lines+markers", name=ui.label(label),
                        error_y=dict(type="data", symmetric=False, array=ci[:, 1] - y, arrayminus=y - ci[:, 0]))
        rows += [{"configuration": label, "K": k, "spearman": v, "ci_low": c[0], "ci_high": c[1],
                  "× plain forward": cost.get(k)} for k, v, c in zip(ks, y, ci)]
    references, points = reference_rows(record)
    for label, ref in references.items():
        baseline = label.startswith("Causal-EOS")
        if baseline and ref["ci"]:
            fig.add_hrect(y0=ref["ci"][0], y1=ref["ci"][1], fillcolor="gray", opacity=0.12, line_width=0)
        fig.add_scatter(x=[min(ks), max(ks)], y=[ref["spearman"]] * 2, mode="lines", name=ui.label(label),
                        line=dict(dash="dash" if baseline else "dot", color="black" if baseline else "gray"))
        rows.append({"configuration": label, "K": None, "spearman": ref["spearman"],
                     "ci_low": (ref["ci"] or [None])[0], "ci_high": (ref["ci"] or [None, None])[1],
                     "× plain forward": None})
    for label, pt in points.items():
        ci = pt["ci"] or [pt["spearman"], pt["spearman"]]
        fig.add_scatter(x=[pt["k"]], y=[pt["spearman"]], mode="markers", name=ui.label(label), marker_symbol="x",
                        error_y=dict(type="data", symmetric=False, array=[ci[1] - pt["spearman"]],
                                     arrayminus=[pt["spearman"] - ci[0]]))
        rows.append({"configuration": label, "K": pt["k"], "spearman": pt["spearman"], "ci_low": ci[0],
                     "ci_high": ci[1], "× plain forward": None})
    fig.update_layout(title="Held-out STS-B: Spearman vs K, against the fair baseline", height=440,
                      xaxis_title="generated tokens K (0 = no generation)", yaxis_title="Spearman ρ",
                      margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25))
    return fig, pd.DataFrame(rows)


STEP_FIGURES = {"tokens": "Leading tokens per step", "curves": "Entropy and drift per step"}


def step_by_step(r: dict, text: str) -> None:
    """Instruction A's generation, step by step: one figure (the leading tokens, or entropy and drift per step), then
    the table of every step's leading tokens."""
    with st.expander("The prompt as the model reads it"):
        st.code(r["template"].replace("{text}", text))
        st.caption(ui.md(" | ".join(shown(t) for t in r["prompt_tokens"])))
    # One figure at a time: the browser mounts every chart of a page before it shows the first (#38).
    shown_figure = ui.choice("Figure", STEP_FIGURES, "soft_step_figure", format_func=STEP_FIGURES.get)
    if shown_figure == "tokens":
        fig, heat = heatmap_figure(r, "Probability of the leading tokens at each step")
        ui.show_figure(fig, heat, "soft_heatmap_A")
    else:
        fig, frame = curves_figure({"A": r}, "Entropy of s_k and drift per step",
                                   ref=(r["max_entropy"], "uniform over the vocabulary"))
        ui.show_figure(fig, frame, "soft_curves_A")
        st.caption("Entropy near log V means the mix is close to the average of all embeddings; near 0 it is one "
                   "token. Drift shows how far the running mean of the generated states still is from the final "
                   "embedding.")
    ui.show_table(token_table(r))
    st.download_button("Download steps (CSV)", steps_frame(r).to_csv(index=False).encode("utf-8"),
                       file_name="soft_steps_A.csv", mime="text/csv", key="csv_soft_steps_A", on_click="ignore")


def trained_vs_frozen(r: dict, frozen: dict) -> None:
    """The same text and instruction through the chosen adapter and through the frozen model."""
    pair = {"trained": r, "frozen": frozen}
    cols = st.columns(2)
    for col, (label, res) in zip(cols, pair.items()):
        with col:
            fig, heat = heatmap_figure(res, f"{label}: leading tokens per step")
            ui.show_figure(fig, heat, f"soft_heatmap_{label}")
    fig, frame = curves_figure(pair, "Entropy and drift per step: trained vs frozen")
    ui.show_figure(fig, frame, "soft_curves_tf")
    st.caption(f"Cosine between the trained and the frozen embedding of this text: "
               f"**{float(r['embedding'] @ frozen['embedding']):.3f}** (different models: only the token "
               "views compare directly).")


def two_instructions(results: dict, instr_a: str, instr_b: str) -> None:
    """One text under instructions A and B: their leading tokens, what only one of them brings, the curves."""
    cols = st.columns(2)
    for col, label, instruction in zip(cols, ("A", "B"), (instr_a, instr_b)):
        with col:
            fig, heat = heatmap_figure(results[label], f"{label}: {ui.label(instruction[:60]) or '(no instruction)'}")
            ui.show_figure(fig, heat, f"soft_heatmap_pair_{label}")
    tops = {label: {t for row in res["top_tokens"] for t in row} for label, res in results.items()}
    only = pd.DataFrame({"instruction": ["A only", "B only", "both"],
                         "tokens": [", ".join(sorted(map(shown, tops["A"] - tops["B"]))) or "–",
                                    ", ".join(sorted(map(shown, tops["B"] - tops["A"]))) or "–",
                                    ", ".join(sorted(map(shown, tops["A"] & tops["B"]))) or "–"]})
    ui.show_table(only, index=False)
    fig, frame = curves_figure(results, "Entropy and drift per step")
    ui.show_figure(fig, frame, "soft_curves_pair")
    cos_ab = float(results["A"]["embedding"] @ results["B"]["embedding"])
    st.caption(f"Cosine between the two final embeddings of the same text: **{cos_ab:.3f}**.")


def training_section(folder) -> None:
    """How the chosen adapter was trained, from its manifest and logs."""
    log = training_log(folder)
    man, train_df = log["manifest"], log["train"]
    steps_cols = sorted((c for c in train_df.columns if c[:1] == "L" and c[1:].isdigit()), key=lambda c: int(c[1:]))
    if steps_cols:
        fig = go.Figure()
        for c in steps_cols:
            fig.add_scatter(x=train_df["step"], y=train_df[c], mode="lines", name=f"L_{c[1:]}")
        fig.add_scatter(x=train_df["step"], y=train_df["regulariser"], mode="lines", name="regulariser",
                        line=dict(dash="dot", color="black"), yaxis="y2")
        fig.update_layout(title="Per-step contrastive losses L_1..L_K during training", xaxis_title="step",
                          yaxis_title="InfoNCE", yaxis2=dict(title="regulariser", overlaying="y", side="right"),
                          height=360, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25))
        ui.show_figure(fig, train_df[["step", *steps_cols, "regulariser", "loss"]], "soft_training_losses")
    hp = man.get("hyperparameters", {})
    st.caption(f"Objective **{hp.get('objective', hp.get('loss'))}** (λ = {hp.get('lam')}), K = {hp.get('k')}, "
               f"LoRA rank {hp.get('lora_rank')} on the top {hp.get('lora_layers')} layers, "
               f"{man.get('steps_done')} steps of {hp.get('batch_size')} pairs in "
               f"{man.get('wall_seconds', 0) / 60:.1f} min ({man.get('examples_per_second') or 0:.2f} pairs/s); "
               + (f"{man['note']}; " if man.get("note") else "") + "best validation score "
               f"{man.get('best_score', float('nan')):.3f} at step {man.get('best_step')}. "
               "The regulariser is > 0 only in a batch where a later step's loss is above an earlier one's; "
               "the L_k curves falling in order (L_1 highest) is the refinement GIRCSE trains for.")
    st.dataframe(log["eval"].round(4), hide_index=True)


def scaling_section(backbone, variants: dict, choice: str, adapter, instructions: dict, soft: dict) -> None:
    """The recorded K curve, then the K curve on pairs of the user's choice (computed on request)."""
    instr_a, instr_b = instructions["A"], instructions["B"]
    temperature, top_k, mode = soft["temperature"], soft["top_k"], soft["mode"]
    found = recorded(backbone)
    if found is None:
        st.info("No K curve is recorded for this model (`python -m analysis measure gircse` measures the default "
                "model's on held-out STS-B pairs); compute one on pairs of your choice below.")
    else:
        record, changed = found
        fig, frame = recorded_figure(record)
        ui.show_figure(fig, frame, "soft_recorded_curve")
        n = record.sample.n if record.sample is not None else "?"
        st.caption(ui.md(f"{record.data}: {n} pairs stratified by genre, measured {record.date} by "
                         f"`{record.command}` (docs/RESULTS.md). Error bars and the grey band are 95% bootstrap "
                         "intervals; the dashed line is the fair baseline Causal-EOS (same training, no generation), "
                         "the dotted one PromptEOL (no training)."))
        if changed:
            st.warning(ui.md(f"The shipped {' and '.join(changed)} adapter changed after this was measured: the curve "
                             "is out of date until `python -m analysis measure gircse` runs again."))
        if record.has_table("paired"):
            paired = record.table("paired")
            st.dataframe(pd.DataFrame(paired.rows, columns=paired.columns), hide_index=True)
    st.caption("On pairs of your choice: STS Spearman of the embedding for several K (95% bootstrap intervals over "
               "pairs), for every model variant: K = 0 is the same prompt's last token without generation. One "
               "generation of max K tokens per text gives every smaller K too (generation is causal), so each curve "
               "costs one run; Causal-EOS is read at K = 0 only, its trained readout, a reference line. Results are "
               "cached.")
    pairs = ui.pairs_input("soft_pairs", default="STS-B dev" if "STS-B dev" in datasets.pair_menu()
                           else "Lee corpus (human ratings)")
    ks = st.multiselect("K", [k for k in SCALING_KS if k], default=[k for k in SCALING_KS if k], key="soft_ks")
    instruction = st.radio("Instruction", ["A", "B"], horizontal=True, key="soft_scaling_instr",
                           format_func=lambda x: f"{x}: {ui.md((instr_a, instr_b)[x == 'B'][:50])}")
    options = dict(variants)
    if choice == "folder":
        options["chosen folder"] = adapter
    chosen_variants = st.multiselect("Models", list(options), key="soft_variants",
                                     default=[v for v in options if not v.startswith("ablation")])
    if not ks or not chosen_variants:
        st.info("Choose at least one K and one model.")
        st.stop()
    if not st.toggle("Compute the scaling curves", value=False, key="soft_scaling_run",
                     help=f"{len(pairs.unique_texts()):,} texts × {max(ks)} generated tokens per model; minutes on "
                          "a CPU."):
        st.stop()
    chosen = instr_a if instruction == "A" else instr_b
    fig, rows = go.Figure(), []
    for label in chosen_variants:
        params = dict(instruction=chosen, temperature=float(temperature), top_k=int(top_k), mode=mode,
                      adapter=options[label])
        baseline = options[label] == "causal-eos"
        arrays = soft_scaling(backbone, pairs, [0] if baseline else ks, params, label)
        x, y, ci = arrays["ks"], arrays["spearman"], arrays["ci"]
        if baseline:  # its trained readout, K = 0: a flat reference across the K axis
            fig.add_hrect(y0=ci[0, 0], y1=ci[0, 1], fillcolor="gray", opacity=0.12, line_width=0)
            fig.add_scatter(x=[0, max(ks)], y=[y[0]] * 2, mode="lines", name=label,
                            line=dict(dash="dash", color="black"))
            rows.append({"model": label, "K": 0, "spearman": float(y[0]), "ci_low": float(ci[0, 0]),
                         "ci_high": float(ci[0, 1]), "minus K=0": 0.0})
            continue
        fig.add_scatter(x=x, y=y, mode="lines+markers", name=label,
                        error_y=dict(type="data", symmetric=False, array=ci[:, 1] - y, arrayminus=y - ci[:, 0]))
        rows += [{"model": label, "K": int(kk), "spearman": float(v), "ci_low": float(c[0]), "ci_high": float(c[1]),
                  "minus K=0": float(v - y[0])} for kk, v, c in zip(x, y, ci)]
    fig.update_layout(title=f"{ui.label(pairs.name)}: Spearman vs K", xaxis_title="generated tokens K (0 = no generation)",
                      yaxis_title="Spearman ρ", height=420, margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h", y=-0.25))
    table = pd.DataFrame(rows)
    ui.show_figure(fig, table, "soft_scaling")
    st.dataframe(table.round(4), hide_index=True)
    best = table.loc[table["spearman"].idxmax()]
    st.markdown(f"Best: **{best['model']}, K = {int(best['K'])}**, ρ = {best['spearman']:.3f}. Test-time scaling "
                "means a curve that keeps rising past the K it was trained with (5); a flat or falling curve is an "
                "honest result, not a bug.")


with ui.user_errors():
    st.title("Soft tokens")
    st.caption("GIRCSE (Tsai et al., 2025) lets the model write K *soft* tokens after the text: at each step the "
               "next-token distribution s_k = softmax(logits/τ) is not sampled but turned into an input vector, "
               "the probability-weighted mix of all token embeddings d_k = s_k·E, fed back with the KV cache. The "
               "embedding is the mean of the final-layer states of the K generated positions.")
    ui.deviations.show("soft_tokens", title="GIRCSE: differences from the paper")
    ui.deviations.show("system:gircse", title="GIRCSE's training: differences from the paper's recipe")
    backbone = ui.get_backbone()

    variants = adapter_variants(backbone)
    choices = {"shipped": "Trained here (GIRCSE, shipped adapter)", "causal-eos": "Fair baseline (Causal-EOS)",
               "none": "Frozen (no adapter)", "folder": "A folder…"}
    for name in ("shipped", "causal-eos"):
        if name not in variants.values():
            choices.pop(name)
    choice = st.radio("Model", list(choices), format_func=choices.get, horizontal=True, key="soft_adapter_choice")
    adapter = choice
    if choice == "folder":
        from analysis.weights.adapters import adapter_spec, load_adapter

        adapter = st.text_input("LoRA adapter folder", key="soft_adapter",
                                help="A folder saved by peft (adapter_config.json + adapter_model.safetensors) or "
                                     "by `python -m analysis train gircse` (weights.safetensors + manifest.json). "
                                     "It is merged into a copy of the model.")
        if not adapter.strip():
            st.info("Enter an adapter folder.")
            st.stop()
        with st.spinner("Merging the adapter into a copy of the model…"):
            adapter = adapter_spec(adapter)
            load_adapter(backbone, adapter)
        st.success(ui.md(f"Adapter loaded: {adapter}"))
    elif choice == "shipped":
        st.success("The LoRA adapter this repository trained for this model with GIRCSE's Iterative Contrastive "
                   "Refinement (`python -m analysis train gircse`, K = 5, STS-B train), merged into a copy of it.")
    elif choice == "causal-eos":
        st.info("The fair baseline Causal-EOS: the same LoRA, data, steps and contrastive loss as the shipped adapter, "
                "trained on the prompt's last state without generation (its embedding is K = 0). The steps below show "
                "what it generates anyway, which it was never trained to do.")
    else:
        st.info("No adapter: the model is frozen. The gains GIRCSE reports (and its test-time scaling) come from "
                "contrastive LoRA training with a stepwise loss"
                + (", which the shipped adapter has (choose it above)." if "shipped" in choices else
                   "; this repository ships such an adapter for the default model only."))

    text = st.text_area("Text", value=DEFAULT_TEXT, height=80, key="soft_text")
    ui.check_sizes([text], "the text")
    col_a, col_b = st.columns(2)
    with col_a:
        instr_a = st.text_input("Instruction A", value=DEFAULT_INSTRUCTION, key="soft_instr_a")
    with col_b:
        instr_b = st.text_input("Instruction B (side by side)", value=EMOTION, key="soft_instr_b")
    c1, c2, c3, c4, c5 = st.columns(5)
    k = c1.slider("Soft tokens K", 1, 20, 10, key="soft_k")
    temperature = c2.number_input("Temperature τ", min_value=1e-4, max_value=10.0, value=1.0, step=0.1,
                                  format="%g", key="soft_temperature")
    top_k = c3.number_input("Top-k (0 = all)", min_value=0, max_value=100_000, value=0, step=1, key="soft_top_k")
    mode = c4.radio("Mode", ["soft", "hard"], horizontal=True, key="soft_mode",
                    help="soft: mix of token embeddings (GIRCSE); hard: the argmax token (greedy decoding)")
    topn = c5.slider("Tokens shown per step", 3, 15, 8, key="soft_topn")
    settings = dict(k=k, temperature=float(temperature), top_k=int(top_k), topn=topn, mode=mode, adapter=adapter)

    def generated(instruction: str, **changes) -> dict:
        with st.spinner("Generating…"):
            return soft_generation(backbone, text, instruction, **{**settings, **changes})

    log_folder = None
    if choice != "none":
        from analysis.weights.adapters import adapter_folder, shipped_folder

        log_folder = shipped_folder(backbone.facts, choice) if choice != "folder" else adapter_folder(adapter)
        if not (log_folder / "manifest.json").is_file():
            log_folder = None
    # One section at a time: only the open tab runs and draws (a page of 13 figures took 3.9 s to show its first).
    sections = ["Step by step", *(["Trained vs frozen"] if adapter != "none" else []), "Two instructions",
                *(["How the adapter was trained"] if log_folder is not None else []), "Test-time scaling"]
    tabs = dict(zip(sections, st.tabs(sections, key="soft_section", on_change="rerun")))
    section = next((name for name, tab in tabs.items() if tab.open), sections[0])
    with tabs[section]:
        if section == "Step by step":
            step_by_step(generated(instr_a), text)
        elif section == "Trained vs frozen":
            trained_vs_frozen(generated(instr_a), generated(instr_a, adapter="none"))
        elif section == "Two instructions":
            two_instructions({"A": generated(instr_a), "B": generated(instr_b)}, instr_a, instr_b)
        elif section == "How the adapter was trained":
            training_section(log_folder)
        else:
            scaling_section(backbone, variants, choice, adapter, {"A": instr_a, "B": instr_b}, settings)
