"""Train GIRCSE's soft-token generation: LoRA on the decoder, Iterative Contrastive Refinement on STS-B train.

    python -m analysis train gircse                       # the shipped adapter (ICR, K = 5)
    python -m analysis train gircse --loss stepwise --out /tmp/stepwise   # ablation: no regulariser
    python -m analysis train gircse --loss final --out /tmp/final         # ablation: last step only

Each text is wrapped as `Instruct: {task}\\nQuery: {text}` and generates K soft tokens with the same cached,
batched generation the `soft_tokens` method uses at inference (analysis/methods/soft_tokens.py): the prompt
pass fills the KV cache and every step adds one position; gradients flow from the losses through every step's
mix d_k = s_k·E, through the cache, into the LoRA weights. Positives are STS-B train pairs with a high gold
score, negatives the other texts of the batch; STS-B dev (a fixed subset) selects the checkpoint.

The adapter is saved with peft (`adapter_config.json`, `adapter_model.safetensors`) next to a `manifest.json`,
so `soft_tokens --param adapter=FOLDER` (and `adapter=shipped` for the default model) loads it.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from analysis.core import paths
from analysis.core.errors import UserError
from analysis.training.icr import (OBJECTIVES, TEMPERATURE, cumulative_means, objective, refinement_penalty,
                                   stepwise_losses)

NAME = "gircse"
HELP = ("Train the soft_tokens LoRA adapter with GIRCSE's Iterative Contrastive Refinement on STS-B train (dev "
        "selects); --loss stepwise|final trains the paper's ablations.")
ARTEFACTS = paths.ARTEFACTS / NAME


@dataclass(frozen=True)
class GircseConfig:
    k: int = 5  # soft tokens generated in training (the paper's K)
    loss: str = "icr"  # icr | stepwise (no regulariser) | final (L_K only)
    lam: float = 1.0  # λ, weight of the refinement regulariser (paper)
    temperature: float = TEMPERATURE  # InfoNCE temperature on cosine similarities (paper: 0.02)
    gen_temperature: float = 1.0  # τ_gen of s_k = softmax(logits/τ_gen): the same mix the method uses at inference
    # LoRA: the paper uses rank 64 on a 7B model. At 135M on a CPU, rank 8 on the attention and MLP projections
    # of the top layers keeps the adapter at a few MB and, more importantly, stops the backward pass there:
    # the prompt positions below the lowest adapted layer need no gradient (only the K generated positions do).
    lora_rank: int = 8
    lora_alpha: int = 16  # α/r = 2: the usual LoRA scale
    lora_layers: int = 12  # adapt the top N decoder layers
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    min_score: float = 4.0  # STS-B train pairs with gold >= 4 of 5 are positives (1,406 pairs)
    eval_pairs: int = 300  # first N STS-B dev pairs score each evaluation (the full dev set costs minutes)
    instruction: str = "Represent this text."  # = the soft_tokens method's default, so the shipped adapter fits it


def add_arguments(parser) -> None:
    d = GircseConfig()
    parser.add_argument("--k", type=int, default=d.k, help=f"soft tokens generated in training (default {d.k})")
    parser.add_argument("--loss", choices=OBJECTIVES, default=d.loss,
                        help="icr = stepwise InfoNCE + refinement regulariser (GIRCSE); stepwise = without the "
                             "regulariser; final = the loss on the K-token embedding only (default icr)")
    parser.add_argument("--lam", type=float, default=d.lam, help=f"regulariser weight λ (default {d.lam})")
    parser.add_argument("--temperature", type=float, default=d.temperature,
                        help=f"InfoNCE temperature (default {d.temperature}, the paper's)")
    parser.add_argument("--lora-rank", type=int, default=d.lora_rank, help=f"LoRA rank (default {d.lora_rank})")
    parser.add_argument("--lora-alpha", type=int, default=d.lora_alpha, help=f"LoRA α (default {d.lora_alpha})")
    parser.add_argument("--lora-layers", type=int, default=d.lora_layers,
                        help=f"adapt the top N decoder layers (default {d.lora_layers}; 0 = all)")
    parser.add_argument("--min-score", type=float, default=d.min_score,
                        help=f"STS-B train pairs with gold >= this are positives (default {d.min_score})")
    parser.add_argument("--eval-pairs", type=int, default=d.eval_pairs,
                        help=f"STS-B dev pairs scored at each evaluation (default {d.eval_pairs})")
    parser.add_argument("--steps", type=int, default=0, help="optimizer steps (default 0 = one epoch of positives)")
    parser.add_argument("--batch-size", type=int, default=16, help="pairs per step (default 16, the paper's)")
    parser.add_argument("--grad-accum", type=int, default=1, help="micro-batches per step (default 1)")
    parser.add_argument("--lr", type=float, default=2e-4, help="AdamW learning rate (default 2e-4)")
    parser.add_argument("--warmup", type=int, default=5, help="warmup steps (default 5)")
    parser.add_argument("--eval-every", type=int, default=10, help="evaluate every N steps (default 10)")
    parser.add_argument("--patience", type=int, default=0, help="evaluations without improvement before "
                                                                "stopping (default 0 = never stop early)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default 0 = torch's choice; 1 is "
                                                               "much faster on a CPU shared with other jobs)")
    parser.add_argument("--model", default="default", help="'default', a Hugging Face id or a local folder")
    parser.add_argument("--out", default="", help="folder of the trained adapter (default: analysis/artefacts/gircse/"
                                                  "<model>/ for --loss icr, else cache/store/training/gircse/<loss>)")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint of this --loss")
    parser.add_argument("--note", default="", help="free text stored in the manifest (e.g. how a run was stopped)")


# ---- the differentiable forward --------------------------------------------------------------------------------
def lora_backbone(backbone, config: GircseConfig, seed: int = 0):
    """(peft model, Backbone over it): LoRA layers inserted into a *copy* of the model, so the shared backbone
    that other methods use in this process is never touched."""
    from peft import LoraConfig, get_peft_model

    from analysis.models.backbone import Backbone

    L = backbone.facts.n_layers
    first = 0 if config.lora_layers <= 0 else max(L - config.lora_layers, 0)
    lora = LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha, lora_dropout=0.0, bias="none",
                      target_modules=list(config.lora_targets), layers_to_transform=list(range(first, L)))
    torch.manual_seed(seed)  # LoRA's A matrices are random (B is zero: the adapter starts as the identity)
    with backbone.lock:
        model = copy.deepcopy(backbone.model)
    model.requires_grad_(False)
    peft_model = get_peft_model(model, lora)
    peft_model.eval()  # no dropout anywhere: deterministic steps
    inner = peft_model.base_model.model  # the copied causal LM, its Linear layers now LoRA layers
    return peft_model, Backbone(inner, backbone.tokenizer, backbone.facts, f"{backbone.identity}+training")


def soft_states(backbone, method, texts: list[str]) -> torch.Tensor:
    """Final-layer states of the K generated positions, with gradients: (B, K, d). One prompt pass and K
    one-position steps through the KV cache (analysis.methods.soft_tokens.generate)."""
    from analysis.methods.soft_tokens import GENERATED, generate

    K = method.params.k
    L = backbone.facts.n_layers
    batch = method.collate(backbone, method.prepare(backbone, texts), "right")
    cap = generate(backbone, batch, [L], temperature=method.params.temperature, top_k=method.params.top_k,
                   topn=1)
    hidden = cap.hidden[L]  # (B, T+K, d) batch layout
    gen = batch.segments == GENERATED  # (B, T+K), exactly K per row, in step order along the row
    return hidden[gen].view(len(texts), K, -1)  # (B, K, d)


def pair_losses(backbone, method, left: list[str], right: list[str], config: GircseConfig) -> torch.Tensor:
    """Per-step InfoNCE losses L_1..L_K of a batch of positive pairs (in-batch negatives): (K,).
    Symmetric (left->right and right->left): an STS pair has no query side, and it doubles the signal."""
    states = soft_states(backbone, method, list(left) + list(right))  # (2B, K, d): one generation for both sides
    z = cumulative_means(states)  # (2B, K, d)
    return stepwise_losses(z[:len(left)], z[len(left):], temperature=config.temperature, symmetric=True)


# ---- data ------------------------------------------------------------------------------------------------------
def positive_pairs(min_score: float):
    from analysis.data.corpora import shared_stsb
    from analysis.data.files import read_sts

    path = shared_stsb("train")
    if path is None:
        raise UserError("Training GIRCSE needs STS-B train in ../shared/data/stsbenchmark/ (or the folder named by "
                        "EMBEDSCOPE_SHARED_DATA); it was not found.")
    pairs = read_sts(path, name="STS-B train")
    keep = np.flatnonzero(pairs.scores >= min_score)
    if len(keep) < 2:
        raise UserError(f"Only {len(keep)} STS-B train pairs have a gold score >= {min_score}: lower --min-score.")
    return [pairs.left[i] for i in keep], [pairs.right[i] for i in keep], path


def batches(left, right, batch_size: int, seed: int):
    """Endless shuffled batches of positive pairs (a new permutation per epoch, seeded)."""
    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(len(left))
        for i in range(0, len(order) - batch_size + 1, batch_size):
            idx = order[i:i + batch_size]
            yield [left[j] for j in idx], [right[j] for j in idx]


def file_digest(path) -> str:
    from analysis.core.paths import file_sha256

    return file_sha256(path)[:16]


# ---- the command -----------------------------------------------------------------------------------------------
def lora_tensors(peft_model) -> dict:
    from peft import get_peft_model_state_dict

    return {k: v.detach().clone() for k, v in get_peft_model_state_dict(peft_model).items()}


def save_adapter(folder, peft_model, manifest: dict) -> Path:
    """An artefact folder (weights.safetensors + manifest.json, analysis.weights.artefacts) plus peft's
    adapter_config.json, which is all analysis.weights.adapters.load_adapter needs to rebuild the LoRA layers."""
    from analysis.weights.artefacts import save_artefact

    folder = Path(folder)
    save_artefact(folder, lora_tensors(peft_model), manifest)
    cfg = peft_model.peft_config["default"].to_dict()
    cfg["base_model_name_or_path"] = manifest.get("model_name", "")  # not the local path of the converted model
    cfg = {k: (sorted(v) if isinstance(v, set) else v) for k, v in cfg.items()}
    (folder / "adapter_config.json").write_text(json.dumps(cfg, indent=1, sort_keys=True, default=str))
    return folder


def run(args) -> dict:
    import shutil
    import sys

    from scipy.stats import spearmanr

    from analysis.models.backbone import load_backbone
    from analysis.data.corpora import shared_stsb
    from analysis.data.files import read_sts
    from analysis.methods.soft_tokens import SoftTokens
    from analysis.training.loop import BEST, TrainConfig, train

    if args.threads:
        torch.set_num_threads(args.threads)
    config = GircseConfig(k=args.k, loss=args.loss, lam=args.lam, temperature=args.temperature,
                          lora_rank=args.lora_rank, lora_alpha=args.lora_alpha, lora_layers=args.lora_layers,
                          min_score=args.min_score, eval_pairs=args.eval_pairs)
    if config.k < 1:
        raise UserError("--k must be at least 1: GIRCSE trains the generated tokens.")
    left, right, train_path = positive_pairs(config.min_score)
    dev_path = shared_stsb("dev")
    if dev_path is None:
        raise UserError("Training GIRCSE selects checkpoints on STS-B dev, which was not found next to STS-B train.")
    dev = read_sts(dev_path, name="STS-B dev").head(config.eval_pairs)
    dev_texts = dev.unique_texts()
    row = {t: i for i, t in enumerate(dev_texts)}
    dev_l, dev_r = np.array([row[t] for t in dev.left]), np.array([row[t] for t in dev.right])

    backbone = load_backbone(args.model)
    peft_model, tuned = lora_backbone(backbone, config, seed=args.seed)
    method = SoftTokens(k=config.k, temperature=config.gen_temperature, instruction=config.instruction,
                        adapter="none")
    steps = args.steps or len(left) // args.batch_size  # default: one epoch, as the paper
    from analysis.weights.adapters import model_short_name
    from analysis.core.paths import cache_root

    shipped = ARTEFACTS / model_short_name(backbone.facts)
    out = Path(args.out) if args.out else (shipped if config.loss == "icr" else
                                           cache_root() / "training" / NAME / config.loss)
    work = cache_root() / "training" / NAME / f"run-{config.loss}"  # checkpoints and log (not shipped)
    trainable = {n: p for n, p in peft_model.named_parameters() if p.requires_grad}
    data = {"train": train_path.name, "train_sha256": file_digest(train_path), "dev": dev_path.name,
            "dev_sha256": file_digest(dev_path), "positive_pairs": len(left), "min_score": config.min_score,
            "eval_pairs": len(dev)}
    hyper = {**asdict(config), "steps": steps, "batch_size": args.batch_size, "grad_accum": args.grad_accum,
             "lr": args.lr, "warmup": args.warmup, "eval_every": args.eval_every, "threads": torch.get_num_threads()}
    base_manifest = {"method": NAME, "model_identity": backbone.identity, "model_name": backbone.facts.name,
                     "data": data, "seed": args.seed, "hyperparameters": hyper}

    def loss_fn(batch):
        losses = pair_losses(tuned, method, batch[0], batch[1], config)  # (K,)
        loss = objective(losses, config.loss, config.lam)
        plain = losses.detach()
        info = {f"L{k + 1}": float(v) for k, v in enumerate(plain)}
        info["regulariser"] = float(refinement_penalty(plain))
        return loss, info

    def evaluate() -> dict:
        ks = sorted({0, 1, config.k})
        emb = method.encode_steps(tuned, dev_texts, ks)  # (n, m, d) unit; inference mode inside
        rho = {f"spearman_k{k}": float(spearmanr(np.einsum("pd,pd->p", emb[dev_l, j], emb[dev_r, j]),
                                                 dev.scores).statistic) for j, k in enumerate(ks)}
        return {"score": rho[f"spearman_k{config.k}"], **rho}

    def progress(step, total, info):
        print(f"step {step}/{total} loss {info['loss']:.4f} best {info['best_score']:.4f}", file=sys.stderr,
              flush=True)

    tc = TrainConfig(steps=steps, batch_size=args.batch_size, grad_accum=args.grad_accum, lr=args.lr,
                     warmup_steps=args.warmup, eval_every=args.eval_every, patience=args.patience, seed=args.seed,
                     out_dir=str(work), resume=args.resume)
    result = train(tc, parameters=trainable, loss_fn=loss_fn,
                   batches=batches(left, right, args.batch_size, args.seed), evaluate=evaluate,
                   save=lambda folder: save_adapter(folder, peft_model, base_manifest), progress=progress,
                   log_extra={"data": data, "model_identity": backbone.identity})
    # The shipped folder: the best checkpoint's weights with the whole run in its manifest (curves: per-step
    # L_1..L_K and the regulariser, every evaluation), so the app can show training without the log.
    manifest = {**base_manifest, **({"note": args.note} if args.note else {}), "steps_done": result.steps_done, "best_step": result.best_step,
                "best_score": result.best_score, "stopped": result.stopped,
                # over the whole run, evaluations included (a resumed run's own rate would leave out earlier steps)
                "steps_per_second": round(result.steps_done / max(result.wall_seconds, 1e-9), 4),
                "pairs_per_second": round(result.steps_done * args.batch_size * args.grad_accum
                                          / max(result.wall_seconds, 1e-9), 3),
                "wall_seconds": round(result.wall_seconds, 1), "curves": result.curves}
    from safetensors.torch import load_file

    best = load_file(str(work / BEST / "weights.safetensors"))
    from peft import set_peft_model_state_dict

    set_peft_model_state_dict(peft_model, best)
    if out.exists() and out != work:
        shutil.rmtree(out / ".tmp", ignore_errors=True)
    save_adapter(out, peft_model, manifest)
    return {"out": str(out), "steps": result.steps_done, "best_step": result.best_step,
            "best_score": round(result.best_score, 4), "steps_per_second": manifest["steps_per_second"],
            "pairs_per_second": manifest["pairs_per_second"], "wall_seconds": manifest["wall_seconds"],
            "eval": result.curves["eval"]}
