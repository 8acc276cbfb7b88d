"""`python -m analysis train causal2vec`: train the Causal2Vec bridge (MLP, optionally LoRA on the decoder).

Data: STS-B train to train, STS-B dev to validate (a fixed, seeded subset of `--eval-pairs` pairs during
training; the whole dev split once at the end with the best weights). One micro-batch = `--batch-size` train
pairs, 2 x batch-size texts through the decoder in one forward pass:
- cosent: CoSENT over every pair of the batch with its gold score (what Spearman measures);
- infonce: InfoNCE (temperature 0.05, paper) over the batch's pairs with score >= 4 (in-batch negatives);
- both: the sum (default; both terms come from the same forward pass).
The readout trained (`--train-readout`) is `contextual` by default: C's final state depends, through the causal
mask, only on the tokens up to C, so each text is cut right after C and the pass is exact and several times
cheaper (on this CPU the whole-text pass made a step take minutes under load); `concat` trains the method's
default readout on the whole text. The result is an artefact (weights.safetensors with
`bridge.*` and `lora.*` tensors + manifest.json) in `--out`; the loop's log and checkpoints live in `--work`.
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


def add_arguments(parser) -> None:
    parser.add_argument("--steps", type=int, default=200, help="optimiser steps (default 200)")
    parser.add_argument("--batch-size", type=int, default=16, help="STS-B train pairs per micro-batch (default 16)")
    parser.add_argument("--grad-accum", type=int, default=1, help="micro-batches per optimiser step (default 1)")
    parser.add_argument("--lora-rank", type=int, default=0, help="LoRA rank on the decoder's q/v projections; "
                        "0 = train the MLP only (default)")
    parser.add_argument("--lr", type=float, default=None, help="learning rate (default 1e-3 MLP only, 2e-4 with LoRA)")
    parser.add_argument("--loss", choices=["both", "cosent", "infonce"], default="both",
                        help="training loss (default both: CoSENT on all pairs + InfoNCE on pairs scored >= 4)")
    parser.add_argument("--temperature", type=float, default=0.05, help="InfoNCE temperature (paper: 0.05)")
    parser.add_argument("--train-readout", choices=["contextual", "concat"], default="contextual",
                        help="readout the losses and the validation use (default contextual: by causality C's "
                             "states depend only on the tokens up to C, so each text is cut right after C, an exact "
                             "and several times cheaper pass on a CPU; concat runs the whole text)")
    parser.add_argument("--eval-every", type=int, default=25, help="validate every N steps (default 25)")
    parser.add_argument("--eval-pairs", type=int, default=200, help="STS-B dev pairs scored during training "
                        "(fixed seeded subset; default 200)")
    parser.add_argument("--final-eval", choices=["full", "subset"], default="full",
                        help="score the best weights on the full dev split (default) or only the subset")
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
                           progress=bar, train_readout=args.train_readout)
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


def train_bridge(backbone, *, out, work, steps=200, batch_size=16, grad_accum=1, lora_rank=0, lr=None, loss="both",
                 temperature=0.05, eval_every=25, eval_pairs=200, final_eval="full", patience=0, seed=0,
                 resume=False, progress=None, train_pairs=None, dev_pairs=None, encoder=None,
                 train_readout="contextual") -> dict:
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
    method = Causal2Vec(bridge="untrained")
    readout = train_readout
    if readout not in ("contextual", "concat"):
        raise UserError(f"train_readout must be contextual or concat, not {readout!r}.")
    L = backbone.facts.n_layers

    lora = lora_config(lora_rank) if lora_rank else None
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

    # ---- data: a seeded infinite stream of train micro-batches; a fixed dev subset ----------------------------
    scores_all = np.asarray(train_pairs.scores)
    pool_idx = np.flatnonzero(scores_all >= HIGH) if loss == "infonce" else np.arange(len(train_pairs))
    if len(pool_idx) < batch_size:
        raise UserError(f"only {len(pool_idx)} training pairs for a batch of {batch_size}.")

    def batches():
        rng = np.random.default_rng(seed)
        while True:
            order = rng.permutation(pool_idx)
            for i in range(0, len(order) - batch_size + 1, batch_size):
                idx = order[i : i + batch_size]
                yield ([train_pairs.left[j] for j in idx], [train_pairs.right[j] for j in idx],
                       torch.tensor(scores_all[idx], dtype=torch.float32))

    sub = np.sort(np.random.default_rng(1234).choice(len(dev_pairs), min(eval_pairs, len(dev_pairs)), replace=False))

    def loss_fn(batch):
        left, right, gold = batch
        z = embed(left + right)  # (2B, D): one forward pass for both sides
        a, b = z[: len(left)], z[len(left):]
        terms = {}
        if loss in ("cosent", "both"):
            terms["cosent"] = cosent(a, b, gold)
        if loss in ("infonce", "both"):
            hi = gold >= HIGH
            if int(hi.sum()) >= 2:
                terms["infonce"] = info_nce(a[hi], b[hi], temperature=temperature)
        total = sum(terms.values()) if terms else (a.sum() * 0.0)
        return total, {k: float(v.detach()) for k, v in terms.items()}

    def dev_score(indices) -> float:
        was = bridge.training
        bridge.eval()
        left = [dev_pairs.left[i] for i in indices]
        right = [dev_pairs.right[i] for i in indices]
        texts = list(dict.fromkeys(left + right))
        pos = {t: i for i, t in enumerate(texts)}
        with torch.no_grad():
            z = torch.cat([embed(texts[i : i + 32]) for i in range(0, len(texts), 32)])  # (n, D)
        z = torch.nn.functional.normalize(z, dim=-1)
        cos = (z[[pos[t] for t in left]] * z[[pos[t] for t in right]]).sum(-1).numpy()
        bridge.train(was)
        return float(spearman(cos, np.asarray(dev_pairs.scores)[indices]))

    hyper = {"steps": steps, "batch_size": batch_size, "grad_accum": grad_accum, "lr": lr, "loss": loss,
             "temperature": temperature, "lora_rank": lora_rank, "eval_every": eval_every, "eval_pairs": eval_pairs,
             "patience": patience, "train_readout": readout, "instruction": method.params.instruction,
             "bridge_hidden": backbone.facts.hidden_size}
    lr = lr if lr is not None else (2e-4 if lora else 1e-3)
    hyper["lr"] = lr
    cfg = TrainConfig(steps=steps, batch_size=batch_size, grad_accum=grad_accum, lr=lr, weight_decay=0.01,
                      warmup_steps=min(20, max(1, steps // 10)), eval_every=eval_every, patience=patience, seed=seed,
                      out_dir=str(work), resume=resume)
    base_manifest = {"method": METHOD, "model_identity": backbone.identity, "model": backbone.facts.name,
                     "encoder": enc.identity, "data": {"train": train_pairs.name, "validate": dev_pairs.name,
                                                       "digest": data_digest(*digest_paths) if digest_paths else None,
                                                       "train_pairs": len(train_pairs), "dev_subset": len(sub)},
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
                   evaluate=lambda: {"score": dev_score(sub)}, save=save, progress=progress, log_extra=base_manifest)
    # ---- the best weights, scored on the whole dev split, written with the full manifest ---------------------------
    best_tensors, _ = load_artefact(Path(work) / "best", method=METHOD)
    with torch.no_grad():
        for k, p in params.items():  # the same names: bridge.* and lora.<parameter name>
            p.copy_(best_tensors[k])
    final = {"dev_subset_spearman": result.best_score}
    if final_eval == "full":
        final["dev_spearman"] = dev_score(np.arange(len(dev_pairs)))
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
LIVE = {"batch_size": 8, "eval_every": 5, "eval_pairs": 60}  # minutes, not tens of minutes, on a 2-core CPU


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
                        final_eval="subset", resume=resume, progress=progress, **LIVE)
