"""`python -m analysis train compression`: train the sentence-pool adapter and the decoder's LoRA on personas.

Data: `--personas` train personas (each asked about all five keys, so one encoded paragraph serves five
questions); the validation split (names never used in training or held-out) scores every evaluation; the
held-out split is never touched here. Each training row is one (persona, key) with a pools mode drawn from a
fixed mix (`MIX`: per-sentence pools most often; one paragraph pool, identifier tokens and full text the rest), so
one shipped artefact serves every mode the evaluation compares.

Validation score: teacher-forced exact match (ties broken by the validation loss), the fraction of rows whose
every answer token and the closing eos are the argmax; that is exactly greedy exact match in token space, at the
cost of one forward pass.
"""

from __future__ import annotations

HELP = ("Train the context-compression adapter (MiniLM pool -> decoder input) and the decoder's LoRA on synthetic "
        "personas; writes weights + manifest to --out.")

# Per-sentence pools are the system; one paragraph pool and identifier tokens are the compared options; a few
# full-text rows teach the answer format on plain text too, so the "full text" column is a fair upper bound.
MIX = {"sentence": 0.5, "paragraph": 0.2, "sentence+ids": 0.2, "text": 0.1}


def add_arguments(parser) -> None:
    parser.add_argument("--model", default="default", help="decoder: 'default', a Hugging Face id or a folder")
    parser.add_argument("--steps", type=int, default=850, help="optimiser steps (default 850)")
    parser.add_argument("--batch-size", type=int, default=16, help="rows per step (default 16)")
    parser.add_argument("--lr", type=float, default=2e-3, help="AdamW learning rate (default 2e-3)")
    parser.add_argument("--personas", type=int, default=1000, help="training personas (default 1000)")
    parser.add_argument("--val", type=int, default=60, help="validation rows scored every evaluation (default 60)")
    parser.add_argument("--eval-every", type=int, default=100, help="steps between evaluations (default 100)")
    parser.add_argument("--max-minutes", type=float, default=55.0,
                        help="stop cleanly after this much training wall time (default 55)")
    parser.add_argument("--curriculum", type=float, default=0.1,
                        help="share of the steps that come first with one-sentence contexts (the sentence that "
                             "states the asked fact, one pool), before the mix of modes (default 0.1; 0 = none)")
    parser.add_argument("--lora-from", type=float, default=0.5,
                        help="LoRA on the q/v projections of the decoder layers from this share of the depth on "
                             "(default 0.5: the last half, as the source; 0 = every layer)")
    parser.add_argument("--pool-scale", type=float, default=1.0,
                        help="the adapter's learning rate as a multiple of the LoRA's, through a reparametrisation "
                             "that leaves the initial adapter unchanged (default 1 = the source's setup)")
    parser.add_argument("--warm-start", choices=("value", "none"), default="value",
                        help="adapter initialisation: 'value' (default) fits it in closed form so each fact "
                             "sentence's pool starts at the mean input embedding of the fact's value tokens; "
                             "'none' is the source's N(0, 0.02^2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="", help="output folder (default: the shipped artefact folder)")
    parser.add_argument("--resume", action="store_true", help="continue from --out's checkpoint")


def fact_sentence(persona, context, key: str) -> str:
    """The sentence of `context` that states `key` (the curriculum's one-sentence context)."""
    value = persona.value(key)
    return next(s for s in context if value in s and persona.first in s)


def ridge(x, y, lam: float):
    """Ridge regression with an unpenalised intercept: (W (k, d), b (d,), R^2 on the fitted rows) minimising
    |x W + b - y|^2 + lam |W|^2, solved in closed form (float64)."""
    import numpy as np

    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    mx, my = x.mean(0), y.mean(0)
    xc, yc = x - mx, y - my
    w = np.linalg.solve(xc.T @ xc + lam * np.eye(x.shape[1]), xc.T @ yc)
    b = my - mx @ w
    res = ((xc @ w - yc) ** 2).sum()
    tot = (yc ** 2).sum()
    return w, b, float(1.0 - res / tot) if tot > 0 else 0.0


def sentence_targets(system, personas) -> tuple[list[str], "np.ndarray"]:
    """The warm start's regression data: every distinct sentence of the training paragraphs, and as its target
    the mean decoder input embedding of what a reader must recover from it: the fact's value tokens (" Lyon",
    " Maria Kowalczyk") for a fact sentence, the sentence's own tokens for a distractor."""
    import numpy as np
    import torch

    from analysis.data.personas import KEYS

    table = system.causal.get_input_embeddings().weight.detach()
    seen, sents, targets = set(), [], []
    for p, ctx in personas:
        values = {fact_sentence(p, ctx, k): p.value(k) for k in KEYS}
        for s in ctx:
            if s in seen:
                continue
            seen.add(s)
            text = " " + values.get(s, s)
            ids = torch.tensor(system.backbone.tokenizer(text, add_special_tokens=False)["input_ids"])
            sents.append(s)
            targets.append(table[ids].float().mean(0).numpy())
    return sents, np.stack(targets)


def warm_start(system, personas, lam: float = 0.1) -> dict:
    """Set the adapter to the ridge fit from each training sentence's pool to `sentence_targets` (the value
    warm start). Why: from the source's N(0, 0.02^2) start, four runs of up to 45 min here never learnt to read
    the pools (per-sentence pools at the no-context level), while a linear probe on the same pools finds every
    fact; the fit puts the adapter where reading a pool is easy, and training goes on from there."""
    import torch

    sents, y = sentence_targets(system, personas)
    x = system.vectors(sents) * system.config.pool_scale  # the adapter reads pool_scale * v
    w, b, r2 = ridge(x, y, lam)
    with torch.no_grad():
        system.adapter.weight.copy_(torch.from_numpy(w.T).to(system.adapter.weight.dtype))
        system.adapter.bias.copy_(torch.from_numpy(b).to(system.adapter.bias.dtype))
    return {"kind": "value", "ridge_lambda": lam, "sentences": len(sents), "r2": round(r2, 4)}


def make_batches(system, personas, batch_size: int, seed: int, single_steps: int = 0):
    """Infinite seeded iterator of PoolBatch: one mode per batch (drawn with the `MIX` weights), then (persona,
    key) per row. One mode per batch, not per row: a single full-text row would pad the whole batch to paragraph
    length, and the step would cost several times a batch of pools.

    Curriculum (the source's first stage): the first `single_steps` batches give each row a one-sentence
    context, the sentence that states the asked fact, as one pool; reading one pool is learnt before finding
    the right one among several."""
    import random

    from analysis.data.personas import KEYS, QA, QUESTIONS

    rng = random.Random(seed)
    modes, weights = list(MIX), list(MIX.values())
    step = 0
    while True:
        rows = []
        single = step < single_steps
        mode = "sentence" if single else rng.choices(modes, weights)[0]
        step += 1
        for _ in range(batch_size):
            p, ctx = personas[rng.randrange(len(personas))]
            key = rng.choice(KEYS)
            if single:
                ctx = [fact_sentence(p, ctx, key)]
            qa = QA(tuple(ctx), rng.choice(QUESTIONS[key]).format(first=p.first), p.value(key), key, p.full_name)
            rows.append(system.row(qa, mode.split("+")[0], ids=mode.endswith("+ids")))
        yield system.collate(rows)


def answer_loss(system, batch) -> tuple["torch.Tensor", dict]:
    """Cross-entropy on the answer tokens only; logits are computed only where a label is."""
    from analysis.training.losses import answer_cross_entropy

    h = system.hidden(batch).last_hidden_state  # (B, T, d)
    sel = batch.labels != -100  # (B, T)
    logits = system.causal.lm_head(h[sel]).unsqueeze(0)  # (1, N, V)
    labels = batch.labels[sel].unsqueeze(0)  # (1, N)
    loss = answer_cross_entropy(logits, labels)
    first = (batch.labels != -100).float().cumsum(1) == 1  # (B, T) the first answer position per row
    first &= sel
    acc = (logits[0].argmax(-1) == labels[0]).float()
    return loss, {"token_acc": float(acc.mean()), "first_acc": float(acc[first[sel]].mean())}


def teacher_forced(system, items, mode: str, ids: bool = False, batch_size: int = 32) -> dict:
    """(exact match, first-token accuracy, loss) under teacher forcing, one forward per batch."""
    import torch

    from analysis.training.losses import answer_cross_entropy

    exact, first, losses, n = 0, 0, 0.0, 0
    with torch.no_grad():
        for s in range(0, len(items), batch_size):
            rows = [system.row(it, mode, ids=ids) for it in items[s:s + batch_size]]
            batch = system.collate(rows)
            h = system.hidden(batch).last_hidden_state  # (B, T, d)
            logits = system.causal.lm_head(h)  # (B, T, V)
            pred = logits.argmax(-1)  # (B, T)
            lab = batch.labels
            ok = (pred == lab) | (lab == -100)  # (B, T)
            exact += int(ok.all(1).sum())
            firsts = (lab != -100).int().argmax(1)  # (B,) first answer position
            first += int((pred.gather(1, firsts[:, None]) == lab.gather(1, firsts[:, None])).sum())
            losses += float(answer_cross_entropy(logits, lab)) * len(rows)
            n += len(rows)
    return {"exact": exact / n, "first_token": first / n, "loss": losses / n}


def startup_check(system, item) -> None:
    """The pools must land at the pool positions, and the loss must depend on them (a wrong position or a
    detached adapter would train silently to nothing)."""
    import torch

    row = system.row(item, "sentence")
    for side in ("left", "right"):
        batch = system.collate([row, system.row(item, "none")], side)
        emb = system.embed(batch)
        at = batch.pool[0] >= 0
        want = system.project(batch.vectors)[: len(row.vectors)]  # (P, d) row 0's pools
        if not torch.equal(emb[0][at], want):
            raise RuntimeError(f"startup check: pools are not at their positions ({side} padding)")
    batch = system.collate([row])
    system.adapter.zero_grad()
    answer_loss(system, batch)[0].backward()
    g = system.adapter.weight.grad
    if g is None or float(g.abs().sum()) == 0.0:
        raise RuntimeError("startup check: the loss does not depend on the pools")
    system.adapter.zero_grad()


def run(args) -> dict:
    import hashlib
    import json
    import random
    import sys
    import time
    from dataclasses import asdict
    from pathlib import Path

    import torch

    from analysis.data import personas as P
    from analysis.models.backbone import load_backbone
    from analysis.compression.system import METHOD, encoder_name, CompressionConfig, CompressionSystem, default_artefact
    from analysis.core.errors import UserError
    from analysis.weights.artefacts import save_artefact
    from analysis.training.loop import StopTraining, TrainConfig, train

    if args.steps < 1 or args.batch_size < 1 or args.personas < 1:
        raise UserError("--steps, --batch-size and --personas must be at least 1.")
    wall0 = time.perf_counter()
    torch.manual_seed(args.seed)
    backbone = load_backbone(args.model)
    if not 0.0 <= args.lora_from < 1.0:
        raise UserError(f"--lora-from is a share of the depth in [0, 1), got {args.lora_from}.")
    if not 0.0 < args.pool_scale <= 1000.0:
        raise UserError(f"--pool-scale must be in (0, 1000], got {args.pool_scale}.")
    config = CompressionConfig(lora_first_layer=args.lora_from, pool_scale=args.pool_scale)
    system = CompressionSystem(backbone, config, seed=args.seed)
    out = Path(args.out) if args.out else default_artefact(backbone)
    run_dir = out.parent / (out.name + ".run")

    rng = random.Random(f"train-personas:{args.seed}")
    personas = []
    for _ in range(args.personas):
        p = P.random_persona(rng, "train")
        personas.append((p, P.paragraph(p, rng, rng.randint(0, 2))))
    val = P.generate("validation", args.val, seed=args.seed)
    t = time.perf_counter()
    sentences = [s for _, ctx in personas for s in ctx]
    system.vectors(sentences + [" ".join(ctx) for _, ctx in personas])  # every pool, encoded once
    for it in val:
        system.vectors(list(it.context) + [" ".join(it.context)])
    encode_seconds = time.perf_counter() - t
    print(f"encoded {len(system._vec_cache)} pools in {encode_seconds:.0f}s", file=sys.stderr)
    data_digest = hashlib.sha256(json.dumps([[p.__dict__, c] for p, c in personas]).encode()).hexdigest()[:16]

    warm = {"kind": "none"}
    if args.warm_start == "value":
        warm = warm_start(system, personas)
        print(f"warm start: ridge fit on {warm['sentences']} sentences, R^2 {warm['r2']:.3f}", file=sys.stderr)
    startup_check(system, val[0])
    params = dict(zip([f"p{i}" for i in range(10**6)], system.trainable()))
    cfg = TrainConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr, weight_decay=0.0,
                      warmup_steps=min(20, args.steps // 10 + 1), eval_every=args.eval_every, seed=args.seed,
                      out_dir=str(run_dir), resume=args.resume)

    def evaluate() -> dict:
        r = teacher_forced(system, val, "sentence")
        # exact match decides; the loss only breaks ties (early on every checkpoint scores 0 exact)
        return {"score": r["exact"] - 1e-3 * r["loss"], "exact": r["exact"], "first_token": r["first_token"],
                "val_loss": r["loss"]}

    def save(folder) -> None:
        save_artefact(folder, system.tensors(), {"method": METHOD})

    start = time.perf_counter()

    def progress(step, total, info) -> None:
        print(f"\rstep {step}/{total} loss {info['loss']:.3f} val {info.get('score', float('nan')):.3f}",
              end="", file=sys.stderr, flush=True)
        if (time.perf_counter() - start) / 60 > args.max_minutes:
            raise StopTraining

    if not 0.0 <= args.curriculum < 1.0:
        raise UserError(f"--curriculum is a share of the steps in [0, 1), got {args.curriculum}.")
    single_steps = round(args.curriculum * args.steps)
    batches = make_batches(system, personas, args.batch_size, args.seed, single_steps)
    result = train(cfg, parameters=params, loss_fn=lambda batch: answer_loss(system, batch), batches=batches, evaluate=evaluate, save=save,
                   progress=progress, log_extra={"data_digest": data_digest, "model": backbone.identity})
    print(file=sys.stderr)
    from analysis.weights.artefacts import load_artefact

    best, _ = load_artefact(run_dir / "best", method=METHOD)
    system.load_tensors(best)
    final = {m: teacher_forced(system, val, m.split("+")[0], ids=m.endswith("+ids")) for m in
             ("sentence", "paragraph", "sentence+ids", "text", "none")}
    wall = time.perf_counter() - wall0
    rows_seen = result.steps_done * args.batch_size
    manifest = {
        "method": METHOD, "model_identity": backbone.identity, "model": backbone.facts.name,
        "encoder": encoder_name(), "data": "analysis.data.personas train split", "data_digest": data_digest,
        "personas": args.personas, "steps": result.steps_done, "best_step": result.best_step, "seed": args.seed,
        "hyperparameters": {"lr": args.lr, "batch_size": args.batch_size, "mix": MIX, "eval_every": args.eval_every,
                            "curriculum_single_sentence_steps": single_steps,
                            "warmup_steps": cfg.warmup_steps, "warm_start": warm},
        "config": asdict(config), "validation_curve": result.curves["eval"],
        "train_curve": [{"step": r["step"], "loss": r["loss"]} for r in result.curves["train"]],
        "final_validation": final, "wall_seconds": wall, "train_seconds": result.wall_seconds,
        "encode_seconds": encode_seconds, "rows_per_second": rows_seen / max(result.wall_seconds, 1e-9),
        "stopped": result.stopped,
    }
    save_artefact(out, best, manifest)
    return {"out": str(out), "steps": result.steps_done, "best_step": result.best_step,
            "best_val_exact": result.best_score, "final_validation": final, "wall_seconds": round(wall, 1),
            "rows_per_second": round(manifest["rows_per_second"], 2), "stopped": result.stopped}
