"""`python -m analysis train compression`: train the sentence-pool adapter and the decoder's LoRA on personas.

Data: `--personas` train personas (each asked about all five keys, so one encoded paragraph serves five
questions); the validation split (names never used in training or held-out) scores every evaluation; the
held-out split is never touched here. Each training row is one (persona, key) with a pools mode drawn from a
fixed mix (`MIX`: per-sentence pools most often; one paragraph pool, identifier tokens and full text the rest), so
one shipped artefact serves every mode the evaluation compares.

The source's harder settings are options of the same run (defaults: the shipped recipe, unchanged): `--people N`
puts N training people's fact sentences in every context and asks about one of them (Experiment B), `--names`
shows each pool's person as name tokens and asks no name questions (B2), `--layout` groups or interleaves the
people's sentences, `--pools-mode paragraph` trains for one paragraph pool with the same steps (`mix`), and
`--warm-from RUN` starts from a finished run's adapter and LoRA (the scaling study's cascade: N = 5, then 10, ...).
Validation items have the same people count, names and layout as the training rows, so selection measures the
task trained. `--vocabulary source` draws the personas from the source's vocabulary sizes (250 first names, 210
surnames, 180 professions, 200 employers, 200 cities, 120 countries; `analysis.data.personas.VOCABULARIES`), for
training and validation alike.

Experiment C (`--reconstruct 0.5`, the source's share): that share of the batches asks for the paragraph back from
its per-sentence pools (`analysis.compression.system.RECONSTRUCT_QUESTION`), each content word's tokens weighing
`--content-weight` (3, the source's) in the loss; the checkpoint is still selected on the questions, and the final
numbers add the reconstructions' token F1 and exact match on the validation paragraphs.

Validation score: teacher-forced exact match (ties broken by the validation loss), the fraction of rows whose
every answer token and the closing eos are the argmax; that is exactly greedy exact match in token space, at the
cost of one forward pass.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from analysis.core.deviations import Deviation
from analysis.core.errors import UserError
from analysis.core.params import param
from analysis.data import personas as P
from analysis.data.personas import KEYS, LAYOUTS, QA, QUESTIONS, asked_keys, max_people, people_item
from analysis.training.options import RunOptions
from analysis.training.systems import Job
from analysis.weights.artefacts import artefact_digest, load_artefact

NAME = "compression"
HELP = ("Train the context-compression adapter (MiniLM pool -> decoder input) and the decoder's LoRA on synthetic "
        "personas; the validation split selects.")

# Per-sentence pools are the system; one paragraph pool and identifier tokens are the compared options; a few
# full-text rows teach the answer format on plain text too, so the "full text" column is a fair upper bound.
MIX = {"sentence": 0.5, "paragraph": 0.2, "sentence+ids": 0.2, "text": 0.1}
POOLS_MODES = ("sentence", "paragraph")

DEVIATIONS = (
    Deviation("models", source="source", paper="encodes with EmbeddingGemma and decodes with Gemma 4 E2B, about two "
              "hours on one GPU (this project's record of the write-up, not re-checked)",
              here="encodes with all-MiniLM-L6-v2 (384-d) and decodes with SmolLM2-135M",
              why="what trains on this 2-core CPU", restore=""),
    Deviation("optimiser and schedule", source="source", paper="trains at learning rate 1e-4, one row per step, with "
              "no schedule and no gradient clipping (this project's record of the write-up, not re-checked)",
              here="trains AdamW at 2e-3 on 16 rows per step, warm-up then cosine decay, gradients clipped at norm 1",
              why="at 1e-4 and one row a step, the hour this machine gives a run would see a few thousand rows and "
                  "not learn to read the pools; 16 rows a step use the CPU's throughput",
              restore="--lr 1e-4 (batches of at least 2; warm-up, cosine decay and clipping are the training loop's)"),
    Deviation("adapter initialisation", source="source", paper="initialises the adapter at N(0, 0.02^2) with zero "
              "bias (this project's record of the write-up, not re-checked)",
              here="fits the adapter in closed form first (the value warm start: each fact sentence's pool starts at "
                   "the mean input embedding of its value's tokens)",
              why="from the source's start four runs here never learnt to read a pool", restore="--warm-start none"),
    Deviation("persona vocabularies", source="source", paper="draws personas from 250 first names, 210 surnames, 180 "
              "professions, 200 employers, 200 cities and 120 countries (this project's record of the write-up, not "
              "re-checked)", here="draws from 36, 36, 24, 20, 20 and 20",
              why="the first vocabularies written for this repository; a small value list is easier to memorise than "
                  "to read, which the unseen-values probe tests", restore="--vocabulary source"),
    Deviation("reconstruction", source="source", paper="asks half its training items for the paragraph back from its "
              "pools (Experiment C), content words weighted 3 in the loss (this project's record of the write-up, "
              "not re-checked)", here="trains the questions alone (every shipped run)",
              why="the shipped runs answer questions; reconstruction is its own run",
              restore="--reconstruct 0.5 --content-weight 3"),
    Deviation("Experiment B length", source="source", paper="trains its several-people experiments for at least 2,000 "
              "steps (this project's record of the write-up, not re-checked)",
              here="trained the shipped five-person run (B2) for 120 steps from the single-person weights",
              why="the time budget of one session (about 9 s a step here); whether B's 16% is a budget artefact needs "
                  "the longer run", restore="--steps 2000"),
)


def mix(pools_mode: str = "sentence", names: bool = False, people: int = 1) -> dict[str, float]:
    """The modes of the training rows and their weights. The shipped recipe (one person, no names, sentence
    pools) is `MIX`. Otherwise the rows show names either always (`names`: "+ids" on every pool mode) or never
    (MIX's identifier share goes to plain sentence pools), so Experiments B and B2 differ in the names alone; a
    paragraph-pool model gets MIX's pool share as paragraph rows and the same share of text rows."""
    if pools_mode == "sentence" and people == 1 and not names:
        return dict(MIX)
    pools = 1.0 - MIX["text"]
    base = ({"sentence": MIX["sentence"] + MIX["sentence+ids"], "paragraph": MIX["paragraph"]}
            if pools_mode == "sentence" else {"paragraph": pools})
    return {**{m + ("+ids" if names else ""): w for m, w in base.items()}, "text": MIX["text"]}


@dataclass(frozen=True)
class Config(RunOptions):
    steps: int = param(850, "optimiser steps", min=1, limit=100_000)
    lr: float = param(2e-3, "AdamW learning rate", above=0.0, max=1.0)
    eval_every: int = param(100, "validate every N steps", min=1)
    max_minutes: float = param(55.0, "stop cleanly (best weights kept) after this much training wall time",
                                above=0.0, limit=24 * 60)
    personas: int = param(1000, "training personas", min=1, limit=100_000)
    val: int = param(60, "validation rows scored at every evaluation", min=1, limit=10_000)
    curriculum: float = param(0.1, "share of the steps that come first with one-sentence contexts (the sentence "
                               "that states the asked fact, one pool), before the mix of modes (0 = none)",
                               min=0.0, max=0.99)
    lora_from: float = param(0.5, "LoRA on the q/v projections of the decoder layers from this share of the depth "
                              "on (0.5: the last half, as the source; 0 = every layer)", min=0.0, max=0.99)
    pool_scale: float = param(1.0, "the adapter's learning rate as a multiple of the LoRA's, through a "
                               "reparametrisation that leaves the initial adapter unchanged", above=0.0, max=1000.0)
    warm_start: str = param("value", "adapter initialisation: value fits it in closed form so each fact sentence's "
                             "pool starts at the mean input embedding of the fact's value tokens; none is the "
                             "source's N(0, 0.02^2)", choices=("value", "none"))
    people: int = param(1, "people per training context: 1 = one persona with 0-2 distractor sentences (the shipped "
                         "recipe); N > 1 = N people's fact sentences, the question names one of them by first name",
                         min=1, max=min(max_people("train"), max_people("validation")))
    names: bool = param(False, "show each pool's person as literal name tokens before it (the source's Experiment "
                                "B2) in every pool row, and ask no name questions (their answer would be copied)")
    layout: str = param("grouped", "with --people N > 1: each person's sentences together (grouped, the source) or "
                         "interleaved with the others'", choices=LAYOUTS)
    pools_mode: str = param("sentence", "the pools trained for: per-sentence pools (the mix of modes) or one "
                             "paragraph pool (paragraph rows plus the same share of text rows)", choices=POOLS_MODES)
    warm_from: str = param("", "a finished compression run's folder: start the adapter and LoRA from its weights "
                            "instead of --warm-start (the scaling study's cascade); refused when it was trained "
                            "for another model, encoder or system, or with another --lora-from/--pool-scale",
                            path=True)
    checkpointing: bool = param(False, "recompute each decoder layer in the backward pass instead of keeping its "
                                        "activations (about a third more compute, a fraction of the memory): rows "
                                        "of 25+ people with names need it on a machine with ~20 GB")
    vocabulary: str = param("small", "persona vocabularies: small = 36 first names, 36 surnames, 24 professions, 20 "
                             "employers, cities and countries (every shipped run); source = the source's 250, 210, "
                             "180, 200, 200 and 120", choices=("small", "source"))
    reconstruct: float = param(0.0, "share of the batches that ask for the paragraph back from its per-sentence "
                                "pools (the source's Experiment C: 0.5); 0 = none", min=0.0, max=0.9)
    content_weight: float = param(3.0, "loss weight of a content word's tokens in a reconstruction (the source's 3); "
                                   "function words and punctuation weigh 1", min=1.0, max=100.0)


def fact_sentence(persona, context, key: str) -> str:
    """The sentence of `context` that states `key` (the curriculum's one-sentence context)."""
    value = persona.value(key)
    return next(s for s in context if value in s and persona.first in s)


def ridge(x, y, lam: float):
    """Ridge regression with an unpenalised intercept: (W (k, d), b (d,), R^2 on the fitted rows) minimising
    |x W + b - y|^2 + lam |W|^2, solved in closed form (float64)."""
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
    import torch  # lazy: keeps torch off the pages' and the command line's start

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
    import torch  # lazy: keeps torch off the pages' and the command line's start

    sents, y = sentence_targets(system, personas)
    x = system.vectors(sents) * system.config.pool_scale  # the adapter reads pool_scale * v
    w, b, r2 = ridge(x, y, lam)
    with torch.no_grad():
        system.adapter.weight.copy_(torch.from_numpy(w.T).to(system.adapter.weight.dtype))
        system.adapter.bias.copy_(torch.from_numpy(b).to(system.adapter.bias.dtype))
    return {"kind": "value", "ridge_lambda": lam, "sentences": len(sents), "r2": round(r2, 4)}


def make_batches(system, personas, batch_size: int, seed: int, single_steps: int = 0, *, people: int = 1,
                 layout: str = "grouped", names: bool = False, modes: dict | None = None, reconstruct: float = 0.0,
                 content_weight: float = 3.0):
    """Infinite seeded iterator of PoolBatch: one mode per batch (drawn with the `modes` weights, default `MIX`),
    then (persona, key) per row. One mode per batch, not per row: a single full-text row would pad the whole batch
    to paragraph length, and the step would cost several times a batch of pools.

    With `people` > 1 a row's context holds that many personas with distinct first names (their sentences
    grouped or interleaved, `layout`), the question names one of them, and every sentence carries its person's
    name (shown before its pool in "+ids" modes); `names` leaves out name questions.

    Curriculum (the source's first stage): the first `single_steps` batches give each row a one-sentence
    context, the sentence that states the asked fact, as one pool (after its person's name with `names`);
    reading one pool is learnt before finding the right one among several.

    Reconstruction (`reconstruct` > 0, one person per context): after the curriculum, that share of the batches asks
    for each row's paragraph back from its per-sentence pools, content words weighing `content_weight`; drawn from
    the same seeded stream only when asked for, so a run without it gives the batches it always gave."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.compression.system import reconstruction_item
    rng = random.Random(seed)
    modes = modes or MIX
    modes, weights = list(modes), list(modes.values())
    keys = asked_keys(names)
    by_first: dict[str, list[int]] = {}
    for i, (p, _) in enumerate(personas):
        by_first.setdefault(p.first, []).append(i)
    firsts = sorted(by_first)
    step = 0
    while True:
        rows = []
        single = step < single_steps
        if reconstruct and not single and rng.random() < reconstruct:
            step += 1
            picks = [personas[rng.randrange(len(personas))] for _ in range(batch_size)]  # [(persona, sentences)]
            yield system.collate([system.row(reconstruction_item(QA(tuple(ctx), "", "", "")), "sentence",
                                             content_weight=content_weight) for _, ctx in picks])
            continue
        mode = ("sentence+ids" if names else "sentence") if single else rng.choices(modes, weights)[0]
        step += 1
        for _ in range(batch_size):
            if people == 1:
                p, ctx = personas[rng.randrange(len(personas))]
                key = rng.choice(keys)
                if single:
                    ctx = [fact_sentence(p, ctx, key)]
                qa = QA(tuple(ctx), rng.choice(QUESTIONS[key]).format(first=p.first), p.value(key), key,
                        p.full_name)
            else:
                group = [personas[rng.choice(by_first[f])] for f in rng.sample(firsts, people)]
                target, key = rng.randrange(people), rng.choice(keys)
                qa = people_item(group, target, key, rng, layout, rng)
                if single:
                    p, ctx = group[target]
                    qa = QA((fact_sentence(p, ctx, key),), qa.question, qa.answer, key, p.full_name, (p.full_name,))
            rows.append(system.row(qa, mode.split("+")[0], ids=mode.endswith("+ids")))
        yield system.collate(rows)


def answer_loss(system, batch) -> tuple["torch.Tensor", dict]:
    """Cross-entropy on the answer tokens only (each weighted when the batch's rows say so: a reconstruction's
    content words); logits are computed only where a label is."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.training.losses import answer_cross_entropy, weighted_answer_cross_entropy

    h = system.hidden(batch).last_hidden_state  # (B, T, d)
    sel = batch.labels != -100  # (B, T)
    logits = system.causal.lm_head(h[sel]).unsqueeze(0)  # (1, N, V)
    labels = batch.labels[sel].unsqueeze(0)  # (1, N)
    loss = answer_cross_entropy(logits, labels) if batch.weights is None else \
        weighted_answer_cross_entropy(logits, labels, batch.weights[sel].unsqueeze(0))
    first = (batch.labels != -100).float().cumsum(1) == 1  # (B, T) the first answer position per row
    first &= sel
    acc = (logits[0].argmax(-1) == labels[0]).float()
    return loss, {"token_acc": float(acc.mean()), "first_acc": float(acc[first[sel]].mean())}


def teacher_forced(system, items, mode: str, ids: bool = False, batch_size: int = 32) -> dict:
    """(exact match, first-token accuracy, loss) under teacher forcing, one forward per batch. Logits only where
    an answer token is predicted: over every position they would take B x T x vocabulary floats (gigabytes for
    rows of many people)."""
    import torch  # lazy: keeps torch off the pages' and the command line's start

    # lazy: keeps torch off the pages' and the command line's start
    from analysis.training.losses import answer_cross_entropy

    exact, first, losses, n = 0, 0, 0.0, 0
    with torch.no_grad():
        for s in range(0, len(items), batch_size):
            rows = [system.row(it, mode, ids=ids) for it in items[s:s + batch_size]]
            batch = system.collate(rows)
            h = system.hidden(batch).last_hidden_state  # (B, T, d)
            lab = batch.labels
            sel = lab != -100  # (B, T)
            logits = system.causal.lm_head(h[sel])  # (N, V) the answer positions only
            ok = torch.ones_like(sel)  # (B, T) True where nothing is predicted
            ok[sel] = logits.argmax(-1) == lab[sel]
            exact += int(ok.all(1).sum())
            firsts = sel.int().argmax(1)  # (B,) first answer position
            first += int(ok.gather(1, firsts[:, None]).sum())
            losses += float(answer_cross_entropy(logits[None], lab[sel][None])) * len(rows)
            n += len(rows)
    return {"exact": exact / n, "first_token": first / n, "loss": losses / n}


def startup_check(system, item) -> None:
    """The pools must land at the pool positions, and the loss must depend on them (a wrong position or a
    detached adapter would train silently to nothing)."""
    import torch  # lazy: keeps torch off the pages' and the command line's start

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


def training_personas(config: Config) -> list:
    """[(persona, sentences)] the rows are drawn from. One person per context: the shipped recipe's paragraphs
    (0-2 distractors). Several: fact sentences only, names from the longer first-name list, so a context can hold
    `config.people` distinct first names; refused in one sentence when the pool has too few of them."""
    rng = random.Random(f"train-personas:{config.seed}" + ("" if config.vocabulary == "small" else
                                                             f":{config.vocabulary}"))
    if config.people == 1:
        out = []
        for _ in range(config.personas):
            p = P.random_persona(rng, "train", config.vocabulary)
            out.append((p, P.paragraph(p, rng, rng.randint(0, 2))))
        return out
    out = [(p, P.persona_sentences(p, rng)) for p in (P.random_people(rng, "train", 1, config.vocabulary)[0]
                                                      for _ in range(config.personas))]
    firsts = len({p.first for p, _ in out})
    if firsts < config.people:
        raise UserError(f"--people {config.people} needs as many distinct first names among the training personas, "
                        f"and {config.personas} personas have {firsts}; raise --personas.")
    return out


def validation_items(config: Config) -> list:
    """The validation rows: the task trained (people count, names, layout), on names no training row uses."""
    if config.people == 1:
        return P.generate("validation", config.val, seed=config.seed, keys=P.asked_keys(config.names),
                          vocabulary=config.vocabulary)
    return P.generate_people("validation", config.val, people=config.people, layout=config.layout,
                             names=config.names, seed=config.seed, vocabulary=config.vocabulary)


def warm_from(system, folder) -> dict:
    """Load a finished run's adapter and LoRA into `system` (the cascade warm start); refuse, in one sentence, weights
    of another system, model or encoder (`load_artefact`) or of another LoRA depth or pool scale."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.compression.system import METHOD, encoder_name, manifest_config
    folder = Path(folder).expanduser()
    tensors, manifest = load_artefact(folder, method=METHOD, model_identity=system.backbone.identity,
                                      encoder=encoder_name(),
                                      shapes={k: tuple(v.shape) for k, v in system.tensors().items()})
    theirs = manifest_config(manifest, system.backbone, folder)
    if (theirs.lora_first_layer, theirs.pool_scale) != (system.config.lora_first_layer, system.config.pool_scale):
        raise UserError(f"--warm-from {folder} was trained with --lora-from {theirs.lora_first_layer:g} --pool-scale "
                        f"{theirs.pool_scale:g}; give this run the same.")
    system.load_tensors(tensors)
    return {"kind": "from", "run": folder.name, "digest": artefact_digest(folder), "command": manifest.get("command"),
            "best_step": manifest.get("best_step")}


def encode_pools(system, personas, val, people: int) -> float:
    """Every pool the run reads, encoded once before training (seconds taken); several people's paragraph pools are
    new combinations, encoded as rows need them."""
    t = time.perf_counter()
    sentences = [s for _, ctx in personas for s in ctx]
    system.vectors(sentences + ([" ".join(ctx) for _, ctx in personas] if people == 1 else []))
    for it in val:
        system.vectors(list(it.context) + [" ".join(it.context)])
    seconds = time.perf_counter() - t
    print(f"encoded {len(system._vec_cache)} pools in {seconds:.0f}s", file=sys.stderr)
    return seconds


def start_weights(system, config: Config, personas) -> dict:
    """The warm start the manifest records: another run's weights (`--warm-from`), the adapter's ridge fit from each
    sentence's pool to its facts' value embeddings (`--warm-start value`), or none."""
    if config.warm_from:
        warm = warm_from(system, config.warm_from)
        print(f"warm start: the weights of {warm['run']} (best step {warm['best_step']})", file=sys.stderr)
        return warm
    if config.warm_start == "value":
        warm = warm_start(system, personas)
        print(f"warm start: ridge fit on {warm['sentences']} sentences, R^2 {warm['r2']:.3f}", file=sys.stderr)
        return warm
    return {"kind": "none"}


def setup(config: Config, backbone, *, encoder=None):
    """The Job for `analysis.training.systems.run`: personas encoded once, the warm start, the startup check.
    `encoder` defaults to MiniLM (tests pass a cheap stand-in)."""
    import torch  # lazy: keeps torch off the pages' and the command line's start

    # lazy: keeps torch off the pages' and the command line's start
    from analysis.compression.system import CompressionConfig, CompressionSystem, encoder_name
    if config.reconstruct and config.people > 1:
        raise UserError("--reconstruct asks for one person's paragraph back (the source's Experiment C): use it with "
                        "--people 1.")
    torch.manual_seed(config.seed)
    system = CompressionSystem(backbone, CompressionConfig(lora_first_layer=config.lora_from,
                                                           pool_scale=config.pool_scale), seed=config.seed,
                               encoder=encoder)
    personas = training_personas(config)
    val = validation_items(config)
    modes = mix(config.pools_mode, config.names, config.people)
    for mode in modes:  # rows of every trained mode must fit the model (many people's full text may not)
        system.check_contexts(val, mode.split("+")[0], ids=mode.endswith("+ids"))
    encode_seconds = encode_pools(system, personas, val, config.people)
    warm = start_weights(system, config, personas)
    startup_check(system, val[0])
    single_steps = round(config.curriculum * config.steps)

    # twice the training micro-batch (no gradients kept): 32 rows for the shipped recipe, fewer for long rows
    eval_batch = 2 * config.batch_size
    # the shipped recipe's final table has every mode; with several people, the pools trained with and without
    # names and the no-context floor (a full text of many people is the longest row of all)
    final_modes = (("sentence", "paragraph", "sentence+ids", "text", "none") if config.people == 1 else
                   (config.pools_mode, f"{config.pools_mode}+ids", "none"))

    if config.checkpointing:
        system.causal.activation_checkpointing_enable()

    def loss_fn(batch):
        system.causal.train(config.checkpointing)  # transformers recomputes layers only in training mode
        return answer_loss(system, batch)

    def evaluate() -> dict:
        system.causal.eval()
        r = teacher_forced(system, val, config.pools_mode, ids=config.names, batch_size=eval_batch)
        # exact match decides; the loss only breaks ties (early on every checkpoint scores 0 exact)
        return {"score": r["exact"] - 1e-3 * r["loss"], "exact": r["exact"], "first_token": r["first_token"],
                "val_loss": r["loss"]}

    def finish() -> dict:
        # lazy: keeps torch off the pages' and the command line's start
        from analysis.compression.system import reconstruction_scores

        system.causal.eval()
        out = {"validation": {m: teacher_forced(system, val, m.split("+")[0], ids=m.endswith("+ids"),
                                                batch_size=eval_batch) for m in final_modes}}
        if config.reconstruct:  # Experiment C: the validation paragraphs generated back from their pools
            scores = reconstruction_scores(val, system.reconstruct(val))
            out["reconstruction"] = {k: v for k, v in scores.items() if k != "token_f1_per_item"}
        return out

    digest = hashlib.sha256(json.dumps([[p.__dict__, c] for p, c in personas]).encode()).hexdigest()[:16]
    data = {"train": "analysis.data.personas train split", "personas": config.personas, "digest": digest,
            "validation_rows": len(val), "mix": modes, "curriculum_single_sentence_steps": single_steps}
    params = {f"p{i}": p for i, p in enumerate(system.trainable())}
    return Job(parameters=params, loss_fn=loss_fn,
               batches=make_batches(system, personas, config.batch_size, config.seed, single_steps,
                                    people=config.people, layout=config.layout, names=config.names, modes=modes,
                                    reconstruct=config.reconstruct, content_weight=config.content_weight),
               evaluate=evaluate, tensors=system.tensors, restore=system.load_tensors, data=data,
               examples_per_step=config.batch_size * config.grad_accum, finish=finish,
               extra={"encoder": encoder_name(), "config": asdict(system.config), "warm_start": warm,
                      "encode_seconds": round(encode_seconds, 1)},
               warmup_steps=min(20, config.steps // 10 + 1), weight_decay=0.0)


def ship_place(hyperparameters: dict) -> str:
    """Where a run ships below analysis/artefacts/compression/<model>/: five people with names (Experiment B2, the
    system the pages load) there; the single person (Experiment A) in ablations/single-person; other people counts
    in ablations/people<N>[-names]; Experiment C in ablations/reconstruct; the source's vocabularies in
    ablations/source-vocabulary (the layout the SmolLM2 artefacts were shipped in by hand before this rule)."""
    people, names = int(hyperparameters.get("people", 1)), bool(hyperparameters.get("names", False))
    if float(hyperparameters.get("reconstruct", 0.0)) > 0:
        return "ablations/reconstruct"
    if hyperparameters.get("vocabulary", "small") == "source":
        return "ablations/source-vocabulary"
    if people == 1:
        return "ablations/single-person"
    if people == 5 and names:
        return ""
    return f"ablations/people{people}" + ("-names" if names else "")


def load(folder, backbone):
    """The compression system from an artefact folder."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.compression.system import CompressionSystem

    return CompressionSystem.from_artefact(backbone, folder)
