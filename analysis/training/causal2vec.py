"""`python -m analysis train causal2vec`: train Causal2Vec as its paper does, at this machine's scale.

The bridge (MLP) and a LoRA on the decoder train jointly (`--lora-rank`, default 16 on q/k/v/o: the paper's rank 64
at 1.3-1.5B scaled to a 135M model whose step time barely depends on the rank), the loss on the **concat readout**
(C's and EOS's final states) over the **whole text**, so the decoder learns to read C while it reads the words.
The instruction prefix (`--instruction`, E5-style "Instruct: ...\nQuery: " as Causal2Vec uses) is on every text in
training and evaluation; the shipped manifest records it and the method reads it from there.

Data: STS-B train only (in-domain STS: the judgement is on held-out dev genres, see docs/RESULTS.md).
- infonce (default, the paper's): pairs scored >= `--positive-min` are positives, symmetric InfoNCE (temperature
  0.05) with in-batch negatives; every batch is drawn from ONE source (MSRvid, headlines, ...) so the in-batch
  negatives are on the same topic, and `--hard-negatives` sentences from that source's pairs scored <=
  `--negative-max` join every row as extra negatives (STS-B's natural hard negatives);
- cosent: CoSENT over the batch's graded pairs; both: the sum.
Selection: every evaluation scores the fixed selection part of STS-B dev (`analysis.eval.samples.dev_split`,
300 pairs, genre-stratified); the final numbers are on the disjoint report part (1,200 pairs), which selection
never saw. `--train-readout contextual` keeps the old, cheaper MLP-only recipe (texts cut after C) as an ablation.
The result is an artefact (weights.safetensors with `bridge.*` and `lora.*` tensors + manifest.json) in `--out`.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

HELP = ("Train the Causal2Vec bridge (MLP; LoRA on the decoder with --lora-rank) on STS-B train, selecting on STS-B "
        "dev; writes weights + manifest to --out.")

HIGH = 4.0  # STS-B gold >= 4 ("mostly equivalent"): the positives for InfoNCE
LOW = 1.0  # STS-B gold <= 1 ("not equivalent, maybe same topic"): the hard negatives
INSTRUCTION = "Instruct: Retrieve semantically similar text.\nQuery: "  # E5-Mistral's STS instruction, as Causal2Vec
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")


def add_arguments(parser) -> None:
    parser.add_argument("--steps", type=int, default=200, help="optimiser steps (default 200)")
    parser.add_argument("--batch-size", type=int, default=16, help="STS-B train pairs per micro-batch (default 16)")
    parser.add_argument("--grad-accum", type=int, default=1, help="micro-batches per optimiser step (default 1)")
    parser.add_argument("--lora-rank", type=int, default=16, help="LoRA rank on the decoder's q/k/v/o projections "
                        "(default 16); 0 = train the MLP only (the old recipe)")
    parser.add_argument("--lr", type=float, default=None, help="learning rate (default 1e-3 MLP only, 2e-4 with LoRA)")
    parser.add_argument("--loss", choices=["both", "cosent", "infonce"], default="infonce",
                        help="training loss (default infonce, the paper's: positives scored >= --positive-min, in-batch "
                             "and hard negatives; cosent: graded pairs; both: the sum)")
    parser.add_argument("--positive-min", type=float, default=HIGH, help="gold score of a positive pair (default 4)")
    parser.add_argument("--negative-max", type=float, default=LOW,
                        help="gold score at or below which a pair's sentences are hard negatives (default 1)")
    parser.add_argument("--hard-negatives", type=int, default=8,
                        help="hard-negative sentences per batch, from the batch's source (default 8; 0 = none)")
    parser.add_argument("--instruction", default=INSTRUCTION,
                        help="text before the contextual token, in training and evaluation (default: the E5-style "
                             "STS instruction)")
    parser.add_argument("--temperature", type=float, default=0.05, help="InfoNCE temperature (paper: 0.05)")
    parser.add_argument("--train-readout", choices=["contextual", "concat"], default="concat",
                        help="readout the losses and the validation use (default concat over the whole text, the "
                             "paper's; contextual cuts each text right after C: the old, cheaper MLP-only recipe)")
    parser.add_argument("--eval-every", type=int, default=25, help="validate every N steps (default 25)")
    parser.add_argument("--eval-pairs", type=int, default=300, help="pairs of the dev selection part scored during "
                        "training (default 300, all of it)")
    parser.add_argument("--final-eval", choices=["report", "none"], default="report",
                        help="score the best weights on the dev report part, which selection never saw (default), "
                             "or skip it")
    parser.add_argument("--patience", type=int, default=0, help="evaluations without improvement before stopping "
                        "(0 = never stop early)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data order (the MLP init is fixed)")
    parser.add_argument("--model", default="default",
                        help="'default', a Hugging Face id in the local cache, or a folder")
    parser.add_argument("--out", default=None, help="artefact folder (default: <cache>/trained/causal2vec/cli/best); "
                        "the shipped bridge is analysis/artefacts/causal2vec/smollm2-135m")
    parser.add_argument("--work", default=None,
                        help="log and checkpoint folder (default: under the cache, keyed by --out)")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint in --work")


def run(args) -> dict:
    from transformers.utils import logging as hf_logging

    from analysis.models.backbone import load_backbone
    from analysis.methods.causal2vec import trained_root

    out = Path(args.out) if args.out else trained_root() / "cli" / "best"
    if args.work:
        work = Path(args.work)
    elif args.out is None:
        work = out.parent / "run"
    else:  # keyed by the artefact folder, so --resume with the same --out finds its checkpoint
        work = trained_root().parent.parent / "training" / "causal2vec" / \
            hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:12]
    if args.steps < 1 or args.batch_size < 2 or args.lora_rank < 0 or args.eval_pairs < 10:
        from analysis.core.errors import UserError

        raise UserError("need --steps >= 1, --batch-size >= 2, --lora-rank >= 0 and --eval-pairs >= 10.")
    hf_logging.disable_progress_bar()  # stdout carries one JSON line; stderr the progress bar
    backbone = load_backbone(args.model)
    bar = _tqdm_progress(args.steps)
    summary = train_bridge(backbone, out=out, work=work, steps=args.steps, batch_size=args.batch_size,
                           grad_accum=args.grad_accum, lora_rank=args.lora_rank, lr=args.lr, loss=args.loss,
                           temperature=args.temperature, eval_every=args.eval_every, eval_pairs=args.eval_pairs,
                           final_eval=args.final_eval, patience=args.patience, seed=args.seed, resume=args.resume,
                           progress=bar, train_readout=args.train_readout, positive_min=args.positive_min,
                           negative_max=args.negative_max, hard_negatives=args.hard_negatives,
                           instruction=args.instruction)
    bar.close()
    return summary


def _tqdm_progress(total: int):
    from tqdm import tqdm

    bar = tqdm(total=total, file=sys.stderr, desc="causal2vec", dynamic_ncols=True)

    def progress(step, total, info):
        bar.n = step
        shown = {"loss": f"{info['loss']:.3f}"}
        if "score" in info:
            shown["dev"] = f"{info['score']:.3f}"
        bar.set_postfix(shown, refresh=False)
        bar.refresh()

    progress.close = bar.close
    return progress


def data_digest(*paths) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()[:16]


def train_bridge(backbone, *, out, work, steps=200, batch_size=16, grad_accum=1, lora_rank=16, lr=None,
                 loss="infonce", temperature=0.05, eval_every=25, eval_pairs=300, final_eval="report", patience=0,
                 seed=0, resume=False, progress=None, train_pairs=None, dev_pairs=None, encoder=None,
                 train_readout="concat", positive_min=HIGH, negative_max=LOW, hard_negatives=8,
                 instruction=INSTRUCTION) -> dict:
    """Train a bridge for `backbone`; write the artefact to `out`; return the summary (also the JSON line).

    `train_pairs` / `dev_pairs` (analysis.data.corpora.Pairs) default to STS-B train / dev from the shared folder;
    `encoder` defaults to the installed MiniLM (tests pass small stand-ins for both)."""
    import numpy as np
    import torch

    from analysis.data.corpora import shared_stsb
    from analysis.data.datasets import stsb_pairs
    from analysis.core.errors import UserError
    from analysis.core.forward import run as forward_run
    from analysis.methods.causal2vec import (METHOD, Bridge, C2VEncoded, Causal2Vec, contextual_inputs, embedding_rms,
                                             readout_at)
    from analysis.models.minilm import load_encoder
    from analysis.eval.samples import SELECTION_SIZE, dev_split
    from analysis.eval.sts import spearman
    from analysis.weights.artefacts import load_artefact, save_artefact
    from analysis.training.losses import cosent, info_nce
    from analysis.weights.lora import lora_config, lora_copy, lora_tensors
    from analysis.training.loop import TrainConfig, train

    digest_paths = []
    if train_pairs is None or dev_pairs is None:
        tp, dp = shared_stsb("train"), shared_stsb("dev")
        if tp is None or dp is None:
            raise UserError("Training needs STS-B train and dev in the shared data folder (../shared/data/"
                            "stsbenchmark/sts-train.csv and sts-dev.csv); they are not there.")
        train_pairs, dev_pairs = stsb_pairs("train"), stsb_pairs("dev")  # the data registry's STS-B
        digest_paths = [tp, dp]
    enc = encoder or load_encoder()
    method = Causal2Vec(bridge="untrained", instruction=instruction)
    readout = train_readout
    if readout not in ("contextual", "concat"):
        raise UserError(f"train_readout must be contextual or concat, not {readout!r}.")
    L = backbone.facts.n_layers

    lora = lora_config(lora_rank, targets=LORA_TARGETS) if lora_rank else None
    runner = lora_copy(backbone, lora) if lora else backbone
    bridge = Bridge.initial(enc.dim, backbone.facts.hidden_size, embedding_rms(backbone))  # = bridge=untrained
    bridge.train()
    params = {f"bridge.{k}": p for k, p in bridge.named_parameters()}
    if lora:
        params.update({f"lora.{n}": p for n, p in runner.model.named_parameters() if p.requires_grad})

    def embed(texts: list[str]):
        """(n, D) readouts with gradients to the bridge (and LoRA)."""
        items = method.prepare(runner, texts)
        if readout == "contextual":  # causal mask: C's states depend only on the tokens up to C (exact cut)
            items = [C2VEncoded(e.ids[: e.c_index + 1], e.segments[: e.c_index + 1], e.truncated, text=e.text,
                                c_index=e.c_index) for e in items]
        batch = method.collate(runner, items, "right")
        batch.encoded = enc.embed(texts)  # (n, e) frozen encoder
        embeds = contextual_inputs(runner, batch, bridge(batch.encoded))  # (n, T, d)
        with runner.lock:  # hooks on a shared model: one pass at a time (the app may be serving other pages)
            cap = forward_run(runner, batch, [L], inputs_embeds=embeds)
        return readout_at(cap.hidden[L], batch, readout)

    # ---- data: one source per batch (same-topic in-batch negatives), its low-scored sentences as hard negatives ---
    scores_all = np.asarray(train_pairs.scores)
    source = np.array(train_pairs.genres if train_pairs.genres is not None else ["all"] * len(train_pairs))
    use = scores_all >= positive_min if loss == "infonce" else np.ones(len(train_pairs), bool)
    pools = {g: np.flatnonzero(use & (source == g)) for g in sorted(set(source))}
    pools = {g: idx for g, idx in pools.items() if len(idx) >= batch_size}
    if not pools:
        raise UserError(f"no source has {batch_size} training pairs for one batch; lower --batch-size.")
    low = {g: sorted({t for j in np.flatnonzero((scores_all <= negative_max) & (source == g))
                      for t in (train_pairs.left[j], train_pairs.right[j])}) for g in pools}
    weights = np.array([len(idx) for idx in pools.values()], dtype=float)

    def batches():
        rng = np.random.default_rng(seed)
        names = list(pools)
        while True:
            g = names[rng.choice(len(names), p=weights / weights.sum())]
            idx = rng.choice(pools[g], batch_size, replace=False)
            hard = [low[g][k] for k in rng.permutation(len(low[g]))[:hard_negatives]] if hard_negatives else []
            yield ([train_pairs.left[j] for j in idx], [train_pairs.right[j] for j in idx],
                   torch.tensor(scores_all[idx], dtype=torch.float32), hard)

    selection, report = dev_split(dev_pairs, min(SELECTION_SIZE, max(1, len(dev_pairs) // 5)))
    sub = np.arange(min(eval_pairs, len(selection)))

    def loss_fn(batch):
        left, right, gold, hard = batch
        z = embed(left + right + hard)  # (2B + H, D): one forward pass for both sides and the hard negatives
        a, b, h = z[: len(left)], z[len(left): 2 * len(left)], z[2 * len(left):]
        terms = {}
        if loss in ("cosent", "both"):
            terms["cosent"] = cosent(a, b, gold)
        if loss in ("infonce", "both"):
            hi = gold >= positive_min
            if int(hi.sum()) >= 2:
                extra = h.unsqueeze(0).expand(int(hi.sum()), -1, -1) if len(hard) else None  # (P, H, D)
                terms["infonce"] = info_nce(a[hi], b[hi], temperature=temperature, symmetric=True,
                                            hard_negatives=extra)
        total = sum(terms.values()) if terms else (a.sum() * 0.0)
        return total, {k: float(v.detach()) for k, v in terms.items()}

    def dev_score(pairs, indices) -> float:
        was = bridge.training
        bridge.eval()
        left = [pairs.left[i] for i in indices]
        right = [pairs.right[i] for i in indices]
        texts = list(dict.fromkeys(left + right))
        pos = {t: i for i, t in enumerate(texts)}
        with torch.no_grad():
            z = torch.cat([embed(texts[i : i + 32]) for i in range(0, len(texts), 32)])  # (n, D)
        z = torch.nn.functional.normalize(z, dim=-1)
        cos = (z[[pos[t] for t in left]] * z[[pos[t] for t in right]]).sum(-1).numpy()
        bridge.train(was)
        return float(spearman(cos, np.asarray(pairs.scores)[indices]))

    hyper = {"steps": steps, "batch_size": batch_size, "grad_accum": grad_accum, "lr": lr, "loss": loss,
             "temperature": temperature, "lora_rank": lora_rank, "eval_every": eval_every, "eval_pairs": eval_pairs,
             "patience": patience, "train_readout": readout, "instruction": method.params.instruction,
             "bridge_hidden": backbone.facts.hidden_size, "positive_min": positive_min, "negative_max": negative_max,
             "hard_negatives": hard_negatives, "batch_sources": "one source per batch"}
    lr = lr if lr is not None else (2e-4 if lora else 1e-3)
    hyper["lr"] = lr
    cfg = TrainConfig(steps=steps, batch_size=batch_size, grad_accum=grad_accum, lr=lr, weight_decay=0.01,
                      warmup_steps=min(20, max(1, steps // 10)), eval_every=eval_every, patience=patience, seed=seed,
                      out_dir=str(work), resume=resume)
    base_manifest = {"method": METHOD, "model_identity": backbone.identity, "model": backbone.facts.name,
                     "encoder": enc.identity, "data": {"train": train_pairs.name, "validate": dev_pairs.name,
                                                       "digest": data_digest(*digest_paths) if digest_paths else None,
                                                       "train_pairs": len(train_pairs), "positives": int(sum(
                                                           len(i) for i in pools.values())),
                                                       "selection": selection.name, "report": report.name,
                                                       "dev_subset": len(sub)},
                     "seed": seed, "hyperparameters": hyper, "lora": lora}

    def tensors():
        out_t = {k: p.detach().clone() for k, p in params.items() if k.startswith("bridge.")}
        if lora:
            out_t.update(lora_tensors(runner.model))
        return out_t

    def save(folder):
        save_artefact(folder, tensors(), {**base_manifest, "partial": True})

    start = time.perf_counter()
    result = train(cfg, parameters=params, loss_fn=loss_fn, batches=batches(),
                   evaluate=lambda: {"score": dev_score(selection, sub)}, save=save, progress=progress,
                   log_extra=base_manifest)
    # ---- the best weights, scored on the whole dev split, written with the full manifest ---------------------------
    best_tensors, _ = load_artefact(Path(work) / "best", method=METHOD)
    with torch.no_grad():
        for k, p in params.items():  # the same names: bridge.* and lora.<parameter name>
            p.copy_(best_tensors[k])
    final = {"selection_spearman": result.best_score}
    if final_eval == "report":
        final["report_spearman"] = dev_score(report, np.arange(len(report)))
    pairs_seen = result.steps_done * batch_size * grad_accum
    train_log = json.loads((Path(work) / "log.json").read_text())
    manifest = {**base_manifest, "steps_done": result.steps_done, "best_step": result.best_step,
                "stopped": result.stopped, "wall_seconds": round(result.wall_seconds, 1),
                "pairs_per_second": round(pairs_seen / result.wall_seconds, 3) if result.wall_seconds else None,
                "total_seconds": round(time.perf_counter() - start, 1),
                "curves": {"loss": [[t["step"], round(t["loss"], 5)] for t in train_log["train"]],
                           "validation_spearman": [[e["step"], round(e["score"], 5)] for e in train_log["eval"]]},
                "final_scores": final}
    save_artefact(out, tensors(), manifest)
    return {"out": str(out), "work": str(work), "best_step": result.best_step, "steps_done": result.steps_done,
            "stopped": result.stopped, **{k: round(v, 4) for k, v in final.items()},
            "wall_seconds": manifest["wall_seconds"], "pairs_per_second": manifest["pairs_per_second"],
            "validation_spearman": manifest["curves"]["validation_spearman"]}


# ---- for the app: the shipped bridge's curves, and a small live run resumable under the cache ---------------------
LIVE = {"batch_size": 8, "eval_every": 5, "eval_pairs": 60, "train_readout": "contextual", "loss": "both",
        "hard_negatives": 0, "instruction": ""}  # the cheap MLP-only recipe: minutes, not an hour, on a 2-core CPU


def manifest_curves(manifest: dict):
    """(loss frame [step, loss], validation frame [step, spearman]) from an artefact manifest or a log.json."""
    import pandas as pd

    if "curves" in manifest:
        c = manifest["curves"]
        return (pd.DataFrame(c["loss"], columns=["step", "loss"]),
                pd.DataFrame(c["validation_spearman"], columns=["step", "spearman"]))
    return (pd.DataFrame([(t["step"], t["loss"]) for t in manifest.get("train", [])], columns=["step", "loss"]),
            pd.DataFrame([(e["step"], e["score"]) for e in manifest.get("eval", [])], columns=["step", "spearman"]))


def live_folder(name: str) -> Path:
    """<cache>/trained/causal2vec/<name>: `run/` (log, checkpoints) and, when finished, `best/` (a bridge the
    method pickers list)."""
    import re

    from analysis.core.errors import UserError
    from analysis.methods.causal2vec import trained_root

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,40}", name or ""):
        raise UserError("A run name is 1-41 letters, digits, '-' or '_', starting with a letter or digit.")
    return trained_root() / name


def live_run(backbone, name: str, steps: int, *, progress=None, resume: bool = True, lora_rank: int = 0) -> dict:
    """A small run for the app (batch 8, validation on 60 dev pairs every 5 steps); continues its checkpoint."""
    folder = live_folder(name)
    return train_bridge(backbone, out=folder / "best", work=folder / "run", steps=steps, lora_rank=lora_rank,
                        final_eval="none", resume=resume, progress=progress, **LIVE)
