"""KV-Embedding's appendix analyses as claims (issue 49): against PromptEOL on SciFact (Table 8) and Banking77 (Table
9), alignment and uniformity (Table 4), robustness to the prompt (Table 22), how many pairs are re-routed (Table 20);
and the paper's claims this machine cannot test (the whole MTEB, LoCoV1, a 30B model), listed with what they need.

Sources checked (November 2026): the paper's full text (../shared/papers/kv-embedding.txt); quotes and numbers in
`papers.kv`.
"""

from __future__ import annotations

import numpy as np

from analysis.eval.stats import percentile_ci
from analysis.experiments.claims import Claim, Evidence, Outcome, Unit, refuse, tasks
from analysis.experiments.claims.context import STS_HOW, configured
from analysis.experiments.machinery import verdicts

HERE = "measured here"
DEVIATIONS = ("method:kv_embedding",)
TIE = 0.01
PROMPT_BAND = 0.02  # Table 22's STS range is 0.018
POSITIVE = 4.0  # STS-B gold score from which a pair counts as a positive pair for alignment
ALIGN_BOOT = 200  # bootstrap resamples of alignment and uniformity (each a pass over every pair of sentences)
# Table 22's five templates, named there by a few words each, rebuilt on the default prompt's layout (§3.2.1)
PROMPTS = {"0 Compress the context in one word": "",
           "1 Summarize in one word": 'Context: "{text}"\nSummarize the context in one word:',
           "2 Extract key concept": 'Context: "{text}"\nExtract the key concept of the context:',
           "3 Represent in one word": 'Context: "{text}"\nRepresent the context in one word:',
           "4 Compress to one word": 'Context: "{text}"\nCompress the context to one word:'}


def _kv(**params):
    return configured("kv_embedding", **params)


def sweep_unit(ctx, name, n_cells: int) -> Unit:
    """A sweep at the prefix-reuse floor: one prompt-only pass, then each cell from its start (half the depth on
    average: `sweep.runner.cost`)."""
    return Unit(("sweep", name), (1 + 0.5 * n_cells) * ctx.seconds(ctx.tokens(ctx.texts()), 1.3))


# ---- SciFact and Banking77 against PromptEOL (Tables 8, 9) --------------------------------------------------------
def _family_work(family: str):
    def work(ctx):
        return [ctx.window_unit(), tasks.unit(ctx, family, _kv()), tasks.unit(ctx, family, configured("prompteol"))]
    return work


def _family(family: str):
    def judge(ctx) -> Outcome:
        kv, peol = ctx.kv(), ctx.method("prompteol")
        return Outcome(tasks.compared(ctx, family, kv, peol), HERE,
                       tasks.values(ctx, family, {"KV-Embedding": kv, "PromptEOL": peol}))
    return judge


# ---- alignment and uniformity (Table 4) ---------------------------------------------------------------------------
BASELINES = {"PromptEOL": "prompteol", "Echo": "echo", "Token Prepending": "token_prepending"}


def _unit_vectors(ctx, method) -> tuple[list[str], np.ndarray]:
    from analysis.eval.sts import pair_index  # lazy: keeps scipy off the pages' and the command line's start

    texts = pair_index(ctx.pairs)[0]
    emb = np.asarray(ctx.compute.encode(ctx.backbone, ctx.ready(method), texts).vectors, dtype=np.float64)
    return texts, emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)  # (n_texts, d)


def alignment_uniformity(unit: np.ndarray, left, right, idx_pairs, idx_texts) -> tuple[np.ndarray, np.ndarray]:
    """Wang & Isola's metrics (alpha = 2, t = 2, as Appendix K) on each resample: alignment = mean squared distance
    of the positive pairs `idx_pairs` (B, P) indexes; uniformity = log mean exp(-2 squared distance) over the pairs of
    distinct sentences `idx_texts` (B, S) picks. Both (B,), lower is better."""
    sq = np.sum((unit[left] - unit[right]) ** 2, axis=1)  # (n_pos,)
    align = sq[idx_pairs].mean(axis=1)  # (B,)
    gram = np.clip(2.0 - 2.0 * unit @ unit.T, 0.0, None)  # (n_texts, n_texts) squared distances of unit vectors
    kernel = np.exp(-2.0 * gram)
    uniform = []
    for pick in idx_texts:  # (S,) one resample of sentences
        sub = kernel[np.ix_(pick, pick)]
        off = sub.sum() - np.trace(sub)
        uniform.append(np.log(off / (len(pick) * (len(pick) - 1))))
    return align, np.asarray(uniform)


def _align_work(ctx):
    return [ctx.window_unit(), ctx.sts_unit(_kv()), *(ctx.sts_unit(configured(n)) for n in BASELINES.values())]


def _align(ctx) -> Outcome:
    from analysis.eval.sts import pair_index  # lazy: keeps scipy off the pages' and the command line's start

    texts, left, right = pair_index(ctx.pairs)
    positive = np.flatnonzero(np.asarray(ctx.pairs.scores) >= POSITIVE)
    rng = np.random.default_rng(ctx.settings.seed)
    n_boot = min(ALIGN_BOOT, max(ctx.settings.n_boot, 1))
    idx_pairs = rng.integers(0, len(positive), size=(n_boot, len(positive)))
    idx_texts = rng.integers(0, len(texts), size=(n_boot, min(len(texts), 400)))
    methods = {"KV-Embedding": ctx.kv(), **{label: ctx.method(n) for label, n in BASELINES.items()}}
    metrics, values = {}, {}
    for label, method in methods.items():
        unit = _unit_vectors(ctx, method)[1]
        a_rep, u_rep = alignment_uniformity(unit, left[positive], right[positive], idx_pairs, idx_texts)
        full_a, full_u = alignment_uniformity(unit, left[positive], right[positive],
                                              np.arange(len(positive))[None], np.arange(len(texts))[None])
        metrics[label] = (float(full_a[0]), a_rep, float(full_u[0]), u_rep)
        values[f"{label} alignment / uniformity"] = f"{full_a[0]:.4f} / {full_u[0]:.4f}"
    kv = metrics.pop("KV-Embedding")
    parts, labels = [], []
    for label, other in metrics.items():
        for name, (i, j) in (("alignment", (0, 1)), ("uniformity", (2, 3))):
            d = verdicts_paired(kv[i] - other[i], kv[j] - other[j], len(positive) if name == "alignment"
                                else len(texts), "positive pairs" if name == "alignment" else "sentences")
            parts.append(d)
            labels.append(f"{name} KV minus {label}")
    return Outcome(verdicts.all_of(parts, labels), HERE, values)


def verdicts_paired(difference: float, reps: np.ndarray, n: int, unit: str) -> verdicts.Verdict:
    """`verdicts.paired`, claimed < 0 (lower is better), from a difference and its paired replicates."""
    return verdicts.paired(difference, percentile_ci(reps), n, direction=-1, unit=unit, digits=4)


# ---- robustness to the prompt (Table 22) --------------------------------------------------------------------------
def _prompt(template: str):
    return _kv(template=template) if template else _kv()


def _prompts_work(ctx):
    return [ctx.window_unit(), *(ctx.sts_unit(_prompt(t)) for t in PROMPTS.values())]


def _prompts(ctx) -> Outcome:
    methods = {label: ctx.ready(_prompt(t)) for label, t in PROMPTS.items()}
    default = methods.pop("0 Compress the context in one word")
    parts = []
    for method in methods.values():
        d = ctx.sts_difference(method, default)
        parts.append(verdicts.equivalent(d.difference, d.ci, len(ctx.pairs), margin=PROMPT_BAND, unit="pairs"))
    values = {"0 Compress the context in one word": round(ctx.spearman(default), 4),
              **{label: round(ctx.spearman(m), 4) for label, m in methods.items()}}
    return Outcome(verdicts.all_of(parts, [f"{label[:1]} minus 0" for label in methods]), HERE, values)


# ---- how many pairs are re-routed (Table 20) ----------------------------------------------------------------------
def _pairs_work(ctx):
    return [ctx.window_unit(), *(ctx.sts_unit(_kv(n=n)) for n in (1, 2, 4))]


def _pairs(ctx) -> Outcome:
    one, two, four = ctx.kv(n=1), ctx.kv(n=2), ctx.kv(n=4)
    verdict = verdicts.all_of([ctx.sts_non_inferior(one, two, TIE), ctx.sts_non_inferior(one, four, TIE)],
                              ["n=1 minus n=2 (not worse)", "n=1 minus n=4 (not worse)"])
    return Outcome(verdict, HERE, {f"n={n}": round(ctx.spearman(m), 4) for n, m in ((1, one), (2, two), (4, four))})


STS = f"{STS_HOW}, Spearman of cosine similarity"
RETRIEVAL = Evidence("Benchmark: retrieval", "benchmark", {"family": "retrieval"})
CLAIMS = [
    Claim("kv-scifact-prompteol", "kv", "KV-Embedding beats PromptEOL on SciFact retrieval.",
          "The board's SciFact set (the task_families record's: 100 seeded report-part claims, their abstracts and 150 "
          "seeded others), nDCG@10 per query; KV-Embedding embeds claims with its Query prompt and abstracts with its "
          "Context prompt.", "paired over queries: KV-Embedding minus PromptEOL > 0", _family("retrieval"),
          _family_work("retrieval"), DEVIATIONS + ("method:prompteol",), (RETRIEVAL,)),
    Claim("kv-banking77-prompteol", "kv", "KV-Embedding beats PromptEOL on Banking77 classification.",
          "Banking77's report part with MTEB's logistic-regression protocol (the task_families record's sample), "
          "accuracy per evaluation text.", "paired over evaluation texts: KV-Embedding minus PromptEOL > 0",
          _family("classification"), _family_work("classification"), DEVIATIONS + ("method:prompteol",),
          (Evidence("Benchmark: classification", "benchmark", {"family": "classification"}),)),
    Claim("kv-align-uniform", "kv", "KV-Embedding has lower (better) alignment and uniformity than PromptEOL, Echo and "
          "Token Prepending.",
          f"{STS_HOW}: alignment over the pairs with gold {POSITIVE:g} or more, uniformity over the sentences (Wang "
          f"& Isola, alpha 2, t 2), {ALIGN_BOOT} paired bootstrap resamples.",
          "all of: paired KV minus each baseline < 0 on alignment and on uniformity", _align, _align_work,
          DEVIATIONS + ("method:prompteol", "method:echo", "method:token_prepending"),
          (Evidence("Geometry: how spread the embeddings are", "geometry"),)),
    Claim("kv-prompt-robust", "kv", f"KV-Embedding's STS stays within about {PROMPT_BAND} Spearman across five "
          "prompt templates.",
          f"{STS}: KV-Embedding with Table 22's five templates (rebuilt on the default prompt's layout), each against "
          "the default, paired.", f"all of: each template minus the default inside +-{PROMPT_BAND}", _prompts,
          _prompts_work, DEVIATIONS, (Evidence("Layer explorer: the windows and biases on your pairs",
                                               "layer_explorer"),)),
    Claim("kv-n-pairs", "kv", "Re-routing one key-value pair is not worse on STS than re-routing two or four.",
          f"{STS}: KV-Embedding re-routing the last 1, 2 and 4 tokens' keys and values (n), the same window and bias.",
          f"all of: n=1 minus n=2 and n=1 minus n=4 not below -{TIE}", _pairs, _pairs_work, DEVIATIONS,
          (Evidence("Layer explorer: the windows and biases on your pairs", "layer_explorer"),)),
    Claim("kv-mteb-average", "kv", "KV-Embedding beats the training-free baselines by up to 10% on the MTEB average.",
          "Not run: the paper's average is over 42 MTEB datasets with 4B-8B backbones; the board tests its STS, "
          "SciFact and Banking77 parts (kv-baselines, kv-scifact-prompteol, kv-banking77-prompteol).",
          "cannot run here", refuse("the whole MTEB (42 datasets in 7 categories) and 4B-8B backbones"),
          refuse("the whole MTEB (42 datasets in 7 categories) and 4B-8B backbones"), DEVIATIONS, (RETRIEVAL,)),
    Claim("kv-locov1", "kv", "KV-Embedding keeps its lead on LoCoV1 up to 4,096 tokens.",
          "Not run: LoCoV1 is not installed; kv-long tests the same comparison on concatenated STS-B.",
          "cannot run here", refuse("the LoCoV1 data (12 long-document retrieval tasks, truncated at 1k-4k tokens)"),
          refuse("the LoCoV1 data (12 long-document retrieval tasks, truncated at 1k-4k tokens)"), DEVIATIONS,
          (RETRIEVAL,)),
    Claim("kv-scale-30b", "kv", "On a 30B model KV-Embedding matches a post-trained 7B embedder.",
          "Not run: needs Qwen3-30B-A3B and LLM2Vec (LLaMA-2-7B).", "cannot run here",
          refuse("Qwen3-30B-A3B (30B parameters) and LLM2Vec on LLaMA-2-7B, far beyond a 2-core CPU"),
          refuse("Qwen3-30B-A3B (30B parameters) and LLM2Vec on LLaMA-2-7B, far beyond a 2-core CPU"), DEVIATIONS,
          (RETRIEVAL,)),
]
