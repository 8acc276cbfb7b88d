"""Training

Watch a Causal2Vec bridge learn: the training curves of the shipped system, of the paper's controls trained with its
recipe and of the earlier MLP-only bridge (one at a time, all in one table), and a small live run you start and stop
here (resumable); its bridge then appears in every method picker.
"""

import json
import shlex

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

import ui
from analysis.data import datasets
from analysis.data.corpora import shared_stsb
from analysis.methods.causal2vec import shipped_folder
from analysis.training.causal2vec import live_folder, live_run
from analysis.training.queue import inventory
from analysis.weights.artefacts import read_manifest
from analysis.weights.manifest import curves


def frames(manifest: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(loss per step, validation Spearman per evaluation) of a manifest or a run's log."""
    train, validation = curves(manifest)
    return (pd.DataFrame(train, columns=["step", "loss"]),
            pd.DataFrame([{"step": r["step"], "spearman": r["score"]} for r in validation], columns=["step", "spearman"]))


def curves_figure(loss: pd.DataFrame, dev: pd.DataFrame, title: str) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, subplot_titles=("training loss per step", "validation Spearman (STS-B dev)"))
    fig.add_scatter(x=loss["step"], y=loss["loss"], mode="lines", name="loss", row=1, col=1)
    if len(loss) > 10:  # a running mean: single batches are noisy
        fig.add_scatter(x=loss["step"], y=loss["loss"].rolling(10, min_periods=1).mean(), mode="lines",
                        name="loss (mean of 10)", row=1, col=1)
    fig.add_scatter(x=dev["step"], y=dev["spearman"], mode="lines+markers", name="dev Spearman", row=1, col=2)
    fig.update_xaxes(title_text="step")
    fig.update_layout(title=title, height=340, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", y=-0.3))
    return fig


with ui.user_errors():
    st.title("Training")
    st.caption("Causal2Vec's bridge is a small MLP that turns MiniLM's sentence vector into one input token for the "
               "decoder; the shipped system trains it jointly with a LoRA on the decoder (InfoNCE on STS-B train "
               "pairs scored ≥ 4, same-source in-batch and hard negatives), selected on the 300-pair selection part "
               "of STS-B dev. Step 0 is the untrained system.")
    ui.deviations.show("causal2vec", title="Causal2Vec: differences from the paper")
    backbone = ui.get_backbone()

    st.subheader("The shipped system, the paper's controls and its ablations")
    folder = shipped_folder(backbone)
    runs = {"shipped (bridge + LoRA, concat readout, whole text)": folder,
            "control: no contextual token (LoRA read at EOS)": folder / "ablations" / "no-contextual",
            "control: plain concatenation trained (LoRA, EOS next to MiniLM)": folder / "ablations" / "concat",
            "ablation: MLP only, text cut after C (the earlier shipped bridge)": folder / "ablations" / "mlp-only",
            "ablation: trained and read at EOS (Table 12)": folder / "ablations" / "eos-readout",
            "ablation: bidirectional attention (Table 15)": folder / "ablations" / "bidirectional",
            "ablation: contextual token before the instruction (Table 14)": folder / "ablations" / "contextual-before"}
    found = {label: read_manifest(f) for label, f in runs.items() if (f / "manifest.json").exists()}
    if not found:
        st.info(f"This checkout has no shipped bridge for this model ({folder.relative_to(folder.parents[2])}).")
    rows = []
    for label, man in found.items():
        h = man["hyperparameters"]
        rows.append({"run": label, "steps": man["steps_done"], "best step": man["best_step"],
                     "batch (pairs)": h["batch_size"], "LoRA rank": h["lora_rank"] or "MLP only", "lr": h["lr"],
                     "wall time (min)": round(man["wall_seconds"] / 60, 1), "pairs/s": man["examples_per_second"],
                     **{k.replace("_", " "): v for k, v in man["results"].items()}, "command": man.get("command")})
    if rows:
        shown = ui.choice("Curves of", list(found), "train_curves", address="run")
        man = found[shown]
        loss, dev = frames(man)
        ui.show_figure(curves_figure(loss, dev, f"{shown} · {man['hyperparameters']['loss']} loss"),
                       loss.merge(dev, on="step", how="outer"), "shipped_curves")
        ui.show_table(pd.DataFrame(rows), index=False)
        st.caption("The controls (this project's reading of the paper's Table 2 and Table 4) are trained with the "
                   "shipped system's recipe and budget. Report Spearman: the 1,200-pair STS-B dev report part, which "
                   "selection never saw; paired differences of all of them: docs/RESULTS.md, Causal2Vec. Validation "
                   "curves are on each run's own selection data (the MLP-only bridge used the first 200 STS-B dev "
                   "pairs, captions only; the others the genre-stratified selection part). Wall times are as each "
                   "run went, not a cost comparison: the shipped system trained on one thread beside other jobs "
                   "(its manifest's note).")

    st.subheader("Every trained system for this model")
    rows = inventory(backbone.facts)
    ui.show_table(pd.DataFrame(rows).astype({"steps": "Int64"}), index=False)
    missing = sum(r["weights"] != "in this copy" for r in rows)
    st.caption(f"What the claims board reads, in the order `train all` trains it, with the minutes, steps and date "
               f"each part took here (its manifest, or the ledger when its weights are over the size git ships). "
               f"{missing} of {len(rows)} parts have no weights in this copy; with --dry-run the command below times "
               f"a step of each on this machine and prints the plan, without it trains what is missing, resumably.")
    st.code(f"python -m analysis train all --model {shlex.quote(backbone.facts.name)} --budget-hours 6 --dry-run",
            language="bash")

    st.subheader("A live run")
    if shared_stsb("train") is None or shared_stsb("dev") is None:
        st.info(ui.md("A live run needs STS-B train and dev. " + datasets.get("stsb-train").missing()))
        st.stop()
    st.caption("Batch of 8 pairs, validation on 60 dev pairs every 5 steps, MLP only. A step takes a few seconds on "
               "a 2-core CPU. **Stop** ends the run at once; **Start** again continues from the last validation "
               "checkpoint. When it finishes, pick `bridge = …/<name>` in any Causal2Vec parameter box.")
    c1, c2 = st.columns(2)
    name = c1.text_input("Run name", "live", key="train_name")
    steps = c2.slider("Steps", 5, 100, 30, step=5, key="train_steps")
    run_dir = live_folder(name, backbone)
    b1, b2, b3 = st.columns(3)
    start, stop = b1.button("Start / continue", type="primary"), b2.button("Stop")
    if b3.button("Start over"):
        import shutil

        shutil.rmtree(run_dir, ignore_errors=True)
    if start:
        bar = st.progress(0.0, text="starting…")

        def progress(step, total, info):
            score = f" · dev Spearman {info['score']:.3f}" if "score" in info else ""
            bar.progress(step / total, text=f"step {step}/{total} · loss {info['loss']:.3f}{score}")

        summary = live_run(backbone, name, steps, progress=progress)
        st.success(f"Done: best selection Spearman {summary['best_score']:.3f} at step "
                   f"{summary['best_step']}; bridge in {summary['out']}.")
    elif stop:
        st.info("Stopped; Start continues from the last checkpoint.")
    log = run_dir / "run" / "log.json"
    if log.exists():
        loss, dev = frames(json.loads(log.read_text()))
        ui.show_figure(curves_figure(loss, dev, f"live run '{name}'"), loss.merge(dev, on="step", how="outer"),
                       "live_curves")
