"""Look inside soft-token generation (analysis/methods/soft_tokens.py) for the page and the command line.

    r = generate_soft_tokens(backbone, "The movie was a delight.", k=10)
    r["top_tokens"][0]      # the 10 most likely next tokens at step 1
    r["entropy"], r["drift"]  # (K,) nats; cos(embedding after k steps, embedding after K steps)
    curve = scaling_curve(backbone, lee_pairs(), ks=(0, 1, 3, 5, 10, 20))   # STS Spearman per K

One generation of max(K) tokens gives every smaller K too (generation is causal; `encode_steps`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import torch

from analysis.core.errors import UserError
from analysis.core.forward import resolve_layer
from analysis.data.datasets import stsb_dev_part, stsb_pairs
from analysis.data.samples import sample_pairs, subset
from analysis.methods.soft_tokens import BATCH_SIZE, DEFAULT_INSTRUCTION, SoftTokens, generate, readout_at, token_text
from analysis.weights.adapters import BIDIRECTIONAL_AVG, CAUSAL_EOS, shipped_folder, trained_objective
from analysis.weights.artefacts import read_manifest
from analysis.weights.manifest import curves

SCALING_KS = (0, 1, 3, 5, 10, 20)  # 0 = no generation (same prompt, last prompt token): the reference line


def generate_soft_tokens(backbone, text: str, instruction: str = DEFAULT_INSTRUCTION, k: int = 5,
                         temperature: float = 1.0, top_k: int = 0, topn: int = 10, *, mode: str = "soft",
                         pooling: str = "generated", layer: int = -1, adapter: str = "shipped") -> dict:
    """Generate K soft tokens after one text and report every step.

    Returns a dict with
        prompt_tokens: the tokens the model reads before generating;
        top_tokens / top_ids / top_probs: (K, topn) the most likely tokens of each step's distribution s_k;
        argmax_tokens: (K,) the single most likely token per step (what mode="hard" feeds);
        entropy: (K,) entropy of s_k in nats (log V = uniform, 0 = certain);
        probs: (K, V) every step's whole distribution;
        step_embeddings: (K, d) the embedding after 1..K steps (the method's pooling, un-normalised);
        drift: (K,) cosine of each step's embedding to the step-K embedding;
        cos_to_prompt: (K,) cosine to the no-generation readout (the last prompt token);
        embedding: (d,) the L2-normalised final embedding (what `encode` returns).
    """
    if not isinstance(text, str) or not text.strip():
        raise UserError("Enter a text to generate soft tokens from.")
    if k < 1:
        raise UserError("Generate at least one soft token (k >= 1).")
    if topn < 1:
        raise UserError("Show at least one token per step (top >= 1).")
    method = SoftTokens(k=k, temperature=temperature, top_k=top_k, instruction=instruction, mode=mode,
                        pooling=pooling, layer=layer, adapter=adapter)
    bb = method.adapted(backbone)
    items = method.prepare(bb, [text])
    batch = method.collate(bb, items, "right")
    L = resolve_layer(bb.facts.n_layers, layer)
    with torch.inference_mode(), bb.lock:
        cap = generate(bb, batch, [L], temperature=temperature, top_k=top_k, mode=mode, topn=topn, keep_probs=True)
    hidden = cap.hidden[L]  # (1, T+K, d)
    steps = torch.cat([readout_at(hidden, batch, j, pooling) for j in range(1, k + 1)]).float()  # (K, d)
    prompt_only = readout_at(hidden, batch, 0, "generated")[0].float()  # (d,) last prompt token
    unit = torch.nn.functional.normalize(steps, dim=-1)  # (K, d)
    tok = bb.tokenizer
    ids = cap.top_ids[0]  # (K, topn)
    return {
        "text": text,
        "instruction": instruction,
        "template": method.template,
        "adapter": method.params.adapter,  # canonical: none, shipped@digest or folder@fingerprint
        "prompt_tokens": [token_text(tok, int(i)) for i in items[0].ids],
        "top_ids": ids.numpy(),
        "top_tokens": [[token_text(tok, int(i)) for i in row] for row in ids],
        "top_probs": cap.top_probs[0].float().numpy(),
        "argmax_tokens": [token_text(tok, int(i)) for i in cap.argmax[0]],
        "entropy": cap.entropy[0].float().numpy(),
        "max_entropy": float(np.log(cap.probs.shape[-1])),
        "probs": cap.probs[0].float().numpy(),
        "step_embeddings": steps.numpy(),
        "drift": (unit @ unit[-1]).numpy(),
        "cos_to_prompt": (unit @ torch.nn.functional.normalize(prompt_only, dim=0)).numpy(),
        "embedding": unit[-1].numpy(),
    }


def steps_frame(result: dict) -> pd.DataFrame:
    """One row per (step, rank): the table behind the page's token view and CSV download."""
    rows = []
    for s, (tokens, probs) in enumerate(zip(result["top_tokens"], result["top_probs"]), start=1):
        for r, (t, p) in enumerate(zip(tokens, probs), start=1):
            rows.append({"step": s, "rank": r, "token": t, "probability": float(p),
                         "entropy": float(result["entropy"][s - 1]), "drift": float(result["drift"][s - 1])})
    return pd.DataFrame(rows)


def token_heatmap(result: dict, max_tokens: int = 30) -> pd.DataFrame:
    """Probability of every token that is among the top ones at some step, at every step: (tokens, K) frame,
    tokens ordered by their first appearance then by their highest probability."""
    probs = result["probs"]  # (K, V)
    seen: dict[int, float] = {}
    for row_ids, row_p in zip(result["top_ids"], result["top_probs"]):
        for i, p in zip(row_ids, row_p):
            seen[int(i)] = max(seen.get(int(i), 0.0), float(p))
    ids = sorted(seen, key=lambda i: -seen[i])[:max_tokens]
    first = {i: next(s for s, row in enumerate(result["top_ids"]) if i in row) for i in ids}
    ids.sort(key=lambda i: (first[i], -seen[i]))
    names = {int(i): t for row_ids, row_t in zip(result["top_ids"], result["top_tokens"]) for i, t in zip(row_ids, row_t)}
    labels, counts = [], {}
    for i in ids:  # two ids can decode to the same text (e.g. byte pieces): keep labels unique
        label = repr(names[i])
        counts[label] = counts.get(label, 0) + 1
        labels.append(label if counts[label] == 1 else f"{label} #{i}")
    frame = pd.DataFrame(probs[:, ids].T, index=labels, columns=[f"step {s}" for s in range(1, len(probs) + 1)])
    frame.index.name = "token"
    return frame


def scaling_curve(backbone, pairs, ks=SCALING_KS, *, instruction: str = DEFAULT_INSTRUCTION,
                  temperature: float = 1.0, top_k: int = 0, mode: str = "soft", pooling: str = "generated",
                  layer: int = -1, adapter: str = "shipped", batch_size: int = BATCH_SIZE, n_boot: int = 1000,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, np.ndarray]:
    """STS Spearman of the soft-token embedding for each K in `ks` (K=0: no generation, the same prompt's
    last token), from one generation of max(ks) tokens per text.

    Returns arrays: ks (m,), spearman (m,), ci (m, 2) percentile-bootstrap 95% interval over pairs (the same
    resampled pairs for every K; NaN with n_boot=0), sims (m, n_pairs) cosine per pair, seconds (1,).
    """
    # lazy: keeps scipy off the pages' and the command line's start
    from analysis.eval.sts import check_pairs, score_pairs

    check_pairs(pairs)  # before the generation, which is the expensive part
    ks = sorted({int(k) for k in ks})
    method = SoftTokens(k=max(ks), temperature=temperature, top_k=top_k, instruction=instruction, mode=mode,
                        pooling=pooling, layer=layer, adapter=adapter)
    texts = pairs.unique_texts()
    row = {t: i for i, t in enumerate(texts)}
    start = time.perf_counter()
    emb = method.encode_steps(backbone, texts, ks, batch_size=batch_size, progress=progress)  # (n_texts, m, d)
    seconds = time.perf_counter() - start
    scores = [score_pairs(pairs, lambda batch, j=j: emb[[row[t] for t in batch], j], n_boot=n_boot, seed=0)
              for j in range(len(ks))]  # seed 0 for every K: the same resampled pairs
    return {"ks": np.array(ks), "spearman": np.array([s.spearman for s in scores]),
            "ci": np.array([s.ci for s in scores]),  # (m, 2)
            "sims": np.stack([s.cosines for s in scores]).astype(np.float32),  # (m, n_pairs)
            "seconds": np.array([seconds])}


# ---- trained adapters: what the app compares ---------------------------------------------------------------------
ABLATIONS = {"icr-mean": "mean of the step losses plus the regulariser",
             "stepwise": "+ stepwise loss, no regulariser (the ladder's second rung)",
             "final": "generation only, final-step loss (the ladder's first rung)"}
OLD_SELECTION = 200  # the first STS-B dev pairs the adapters trained before the dev split selected checkpoints on


def older_recipe(folder) -> bool:
    """Whether the adapter in `folder` was trained by the first GIRCSE trainer: its manifest predates the
    `objective` setting (that trainer averaged the step losses and selected on the first 200 dev pairs; the
    manifest's note says so)."""
    return "objective" not in (read_manifest(folder).get("hyperparameters") or {})


def untrained_result(folder) -> bool:
    """Whether the adapter in `folder` is its run's step 0: training never beat the untrained start on validation, so
    the weights are the frozen model's (LoRA's B starts at zero) under another name. Runs since the step-0 weights
    stopped being selectable (`analysis.training.systems`) never are."""
    return read_manifest(folder).get("best_step") == 0


def adapter_variants(backbone) -> dict[str, str]:
    """{label: adapter parameter} of every adapter worth comparing on this model: the shipped GIRCSE adapter, its
    fair baseline Causal-EOS and the shipped ablations when present (", older recipe" when `older_recipe`), and the
    frozen model."""
    folder = shipped_folder(backbone.facts)
    out = {}
    if folder is not None:
        out[f"GIRCSE (shipped{', older recipe' if older_recipe(folder) else ''})"] = "shipped"
    if shipped_folder(backbone.facts, CAUSAL_EOS) is not None:
        out["Causal-EOS (fair baseline)"] = CAUSAL_EOS
    if folder is not None:  # Bidirectional-Avg generates nothing, so it has no place among the generators compared
        for sub in sorted(p for p in (folder / "ablations").glob("*") if (p / "adapter_config.json").is_file()
                          and trained_objective(str(p)) != BIDIRECTIONAL_AVG):
            notes = [n for n, on in ((", older recipe", older_recipe(sub)),
                                     (", best step 0: the frozen model", untrained_result(sub))) if on]
            out[f"ablation: {ABLATIONS.get(sub.name, sub.name)}{''.join(notes)}"] = str(sub)
    out["frozen (no adapter)"] = "none"
    return out


def unseen_pairs(sample: int, seed: int = 0):
    """(pairs, pool size): a genre-stratified sample of the pairs no GIRCSE selection saw, the STS-B dev report part
    (the selection part is where trainers select) without the first 200 dev pairs (where the adapters trained before
    the split existed selected); `sample` 0 = all of them."""
    dev, report = stsb_pairs("dev"), stsb_dev_part("report")
    seen = set(zip(dev.left[:OLD_SELECTION], dev.right[:OLD_SELECTION]))
    unseen = subset(report, [i for i, p in enumerate(zip(report.left, report.right)) if p not in seen],
                    f"STS-B dev report part without the first {OLD_SELECTION} dev pairs")
    return (sample_pairs(unseen, sample, seed) if sample else unseen), len(unseen)


def training_log(folder) -> dict:
    """The training run recorded in an adapter's manifest: {"train": DataFrame (step, loss, L1..LK, regulariser,
    lr), "eval": DataFrame (step, score, spearman_k...), "manifest": dict}; UserError when it has none."""
    if not (Path(folder) / "manifest.json").is_file():
        raise UserError(f"{folder} has no manifest.json: it was not trained by `python -m analysis train gircse`.")
    manifest = read_manifest(folder)
    train, validation = curves(manifest)
    return {"train": pd.DataFrame(train), "eval": pd.DataFrame(validation),
            "manifest": {k: v for k, v in manifest.items() if k != "curves"}}
