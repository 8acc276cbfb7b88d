"""GIRCSE against its fair baseline on held-out STS-B: the K curve of the shipped adapter, Causal-EOS, the frozen
model, PromptEOL and the shipped ablations, with paired differences overall and per genre, the cost of each K and
how each adapter was trained.

Pairs: `analysis.inspect.generation.unseen_pairs`, a genre-stratified sample of the STS-B dev report part without
the first 200 dev pairs, where the adapters trained before the split selected: no selection saw a pair here.
Configurations, each embedding every distinct sentence once:
- GIRCSE (adapter=shipped) at every K, from one generation of max(K) tokens (generation is causal);
- Causal-EOS (adapter=causal-eos), the fair baseline, at K = 0 (the readout it was trained on) and at K = 5
  (generating although it was never trained to: what generation alone adds to the same contrastive training);
- the frozen model at every K, and PromptEOL (training-free, the same model);
- the shipped ablations (ablations/*) at K = 5, "older recipe" when the first trainer made them, "best step 0" when the
  run never beat its untrained start (the frozen model under another name: left out of every claim).
The paper's ablation ladder, when its rungs are shipped with today's recipe (`train gircse --objective final` and
`--objective stepwise`, the shipped adapter's flags, `--ship`): generation only (final) against Causal-EOS, + the
stepwise loss against generation only, + the regulariser (the shipped GIRCSE) against the stepwise loss, each a paired
difference at K = 5.
Cost: every K of the shipped adapter and PromptEOL as ratios to one plain forward of the same sentences. The Soft
tokens page draws the record's `k_curve` and `cost` series and its `scores` and `paired` tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.core.errors import UserError
from analysis.core.params import param
from analysis.data.samples import genre_counts
from analysis.experiments import Measured
from analysis.experiments.machinery import cells, heldout_sts
from analysis.experiments.machinery.provenance import model_entry
from analysis.experiments.machinery.records import Sample, Series, Table, read
from analysis.weights.adapters import (
    BIDIRECTIONAL_AVG,
    CAUSAL_EOS,
    PLACES,
    adapter_spec,
    shipped_folder,
    trained_objective,
)
from analysis.weights.artefacts import read_manifest

ID = "gircse"
TITLE = "GIRCSE against its fair baseline: the K curve on held-out pairs"
HELP = ("GIRCSE's soft tokens at every K against its fair baseline Causal-EOS, the frozen model, PromptEOL and the "
        "shipped ablations on held-out STS-B, with paired differences, the cost of each K and the training runs.")
GIRCSE, BASELINE, FROZEN, PROMPTEOL = "GIRCSE", "Causal-EOS", "frozen model", "PromptEOL"
ABLATION_K = 5  # the K the ablations and the paper's comparisons are read at (the K they were trained with)
CLAIMS = [  # (A, B, what A > B would show); a row is (configuration, K), K None for PromptEOL
    ((GIRCSE, 5), (BASELINE, 0), "GIRCSE beats its fair baseline Causal-EOS (same LoRA, data, steps and loss, "
                                 "without generation)"),
    ((GIRCSE, 10), (GIRCSE, 5), "K = 10 is above K = 5 (test-time scaling)"),
    ((GIRCSE, 5), (GIRCSE, 1), "K = 5 is above K = 1"),
    ((GIRCSE, 20), (GIRCSE, 5), "K = 20 is above K = 5"),
    ((GIRCSE, 5), (FROZEN, 5), "training helps at K = 5"),
    ((GIRCSE, 5), (PROMPTEOL, None), "GIRCSE beats the training-free PromptEOL"),
    ((GIRCSE, 5), (GIRCSE, 0), "generating 5 tokens beats none with the same adapter"),
]


@dataclass(frozen=True)
class Config:
    sample: int = param(500, "held-out pairs, stratified by genre (0 = all 1,037)", min=0)
    seed: int = param(0, "seed of the sample and of the bootstrap", min=0)
    model: str = param("default", "the model the adapters were trained for")
    ks: tuple = param(("0", "1", "3", "5", "10", "20"), "the K curve (the claims need 0, 1, 5, 10 and 20)")
    speed_n: int = param(64, "sentences timed for the cost table (0 = no cost table)", min=0)
    repeats: int = param(3, "interleaved timing rounds (medians kept)", min=1, limit=20)
    batch_size: int = param(64, "batch of the timed runs (soft tokens' default)", min=1, limit=1024)
    n_boot: int = param(1000, "bootstrap resamples", min=0, limit=10_000)


LADDER_CLAIMS = [  # (rung, the rung below, what rung > below would show); rungs: ablation names, GIRCSE, BASELINE
    ("final", BASELINE, "generation alone (the final-step loss) beats Causal-EOS: the ladder's first rung"),
    ("stepwise", "final", "the stepwise loss adds to generation alone: the ladder's second rung"),
    (GIRCSE, "stepwise", "the regulariser adds to the stepwise loss: the ladder's third rung"),
]


def name(row: tuple) -> str:
    return row[0] if row[1] is None else f"{row[0]} K={row[1]}"


def variants(backbone) -> dict[str, tuple[str, list | None]]:
    """{configuration: (adapter, Ks)} of what is shipped for this model; Ks None = every K of the run."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.inspect.generation import older_recipe, untrained_result
    shipped = shipped_folder(backbone.facts)
    if shipped is None:
        raise UserError(f"No GIRCSE adapter is shipped for {backbone.facts.name}: nothing to measure.")
    out = {GIRCSE: ("shipped", None)}
    if shipped_folder(backbone.facts, CAUSAL_EOS) is not None:
        out[BASELINE] = (CAUSAL_EOS, [0, ABLATION_K])
    out[FROZEN] = ("none", None)
    for sub in sorted(shipped.glob("ablations/*")):
        if (sub / "adapter_config.json").is_file():
            note = " (older recipe)" if older_recipe(sub) else " (best step 0: the frozen model)" \
                if untrained_result(sub) else ""
            # Bidirectional-Avg generates nothing: read at K = 0, its trained readout (soft_tokens refuses K > 0)
            ks = [0] if trained_objective(str(sub)) == BIDIRECTIONAL_AVG else [ABLATION_K]
            out[f"ablation {sub.name}{note}"] = (str(sub), ks)
    return out


def ladder_rows(configs: dict) -> dict[str, tuple]:
    """{rung: (configuration, K)} of the ladder's rungs measured here: an ablation counts only when today's recipe
    trained it (no note on its label), GIRCSE at K = 5, Causal-EOS at its readout K = 0."""
    rows = {GIRCSE: (GIRCSE, ABLATION_K), BASELINE: (BASELINE, 0)}
    rows.update({label.removeprefix("ablation "): (label, ABLATION_K) for label in configs
                 if label.startswith("ablation ") and "(" not in label})
    return {rung: row for rung, row in rows.items() if row[0] in configs}


def embeddings(backbone, texts: list[str], ks: list[int], configs: dict, progress) -> dict:
    """{(configuration, K): (n, d) embeddings}; PromptEOL's K is None. Every K of a configuration comes from one
    generation of its largest K."""
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods.soft_tokens import SoftTokens  # lazy: keeps torch off the pages' and the command line's start

    out = {}
    for i, (label, (adapter, wanted)) in enumerate(configs.items()):
        progress(i, len(configs) + 1, label)
        run_ks = ks if wanted is None else wanted
        emb = SoftTokens(k=max(run_ks), adapter=adapter).encode_steps(backbone, texts, run_ks)  # (n, m, d)
        out.update({(label, k): emb[:, j] for j, k in enumerate(run_ks)})
    progress(len(configs), len(configs) + 1, PROMPTEOL)
    out[PROMPTEOL, None] = get_method("prompteol").encode(backbone, texts, batch_size=32)
    return out


def cost(backbone, texts: list[str], ks: list[int], config: Config) -> dict[str, tuple[float, float]]:
    """{configuration: (median seconds, ratio to the plain forward)} over the same texts, interleaved rounds."""
    from analysis.eval.cost import ratios  # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods.soft_tokens import SoftTokens  # lazy: keeps torch off the pages' and the command line's start

    configs = {}
    for k in ks:
        method = SoftTokens(k=k, adapter="shipped")
        method.adapted(backbone)  # merged once, outside the timed calls: it then costs what the frozen model costs
        configs[f"soft tokens K={k}"] = lambda m=method: m.encode(backbone, texts, batch_size=config.batch_size)
    configs[PROMPTEOL] = lambda: get_method("prompteol").encode(backbone, texts, batch_size=config.batch_size)
    return ratios(backbone, configs, texts, repeats=config.repeats, batch_size=config.batch_size)


def training_rows(backbone, configs: dict) -> list[tuple]:
    """One row per trained configuration: its recipe and run as its manifest records them."""
    rows = []
    for label, (adapter, _) in configs.items():
        if adapter == "none":
            continue
        man = read_manifest(shipped_folder(backbone.facts, adapter) if adapter in PLACES else Path(adapter))
        hp = man.get("hyperparameters") or {}
        wall = man.get("wall_seconds")
        rows.append((label, hp.get("objective") or f"{hp.get('loss')} (first trainer)", man.get("steps_done"),
                     man.get("best_step"), man.get("best_score"), None if wall is None else round(wall / 60, 1),
                     man.get("examples_per_second"), man.get("command")))
    return rows


def measure(config: Config, compute, progress) -> Measured:
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.inspect.generation import OLD_SELECTION, unseen_pairs

    pairs, pool = unseen_pairs(config.sample, config.seed)
    sample = Sample(n=len(pairs), of=pool, how="stratified by genre" if config.sample else "all of it",
                    seed=config.seed if config.sample else None, strata=genre_counts(pairs) or {})
    return measure_on(compute.backbone(config.model), pairs, config, progress,
                      data=f"STS-B dev report part without the first {OLD_SELECTION} dev pairs (no selection saw "
                           "them)", sample=sample)


def measure_on(backbone, pairs, config: Config, progress, *, data: str, sample) -> Measured:
    """The measurement on given pairs (any `Pairs` with genres): tables, series, findings."""
    from analysis.inspect.generation import ABLATIONS  # lazy: keeps torch off the pages' and the command line's start
    ks = sorted({int(k) for k in config.ks})
    configs = variants(backbone)
    texts = heldout_sts.texts_of(pairs)
    emb = embeddings(backbone, texts, ks, configs, progress)
    labels = {row: name(row) for row in emb}
    cos = heldout_sts.from_embeddings({labels[row]: e for row, e in emb.items()}, pairs)
    scores, score_of = heldout_sts.score_table(
        "scores", f"Spearman on {len(pairs)} held-out pairs ({len(texts)} sentences), 95% bootstrap interval, and per "
                  "STS-B genre (K = 0: the prompt's last state, no generation)", pairs, cos, n_boot=config.n_boot,
        seed=config.seed,
        notes="Causal-EOS was trained on K = 0, its readout; at K = 5 it generates although it was never trained to. "
              "Ablations, read at K = 5: " + "; ".join(f"{k} = {v}" for k, v in ABLATIONS.items()) +
              ". PromptEOL has no K.")
    rungs = ladder_rows(configs)
    ladder = [(rungs[a], rungs[b], meaning) for a, b, meaning in LADDER_CLAIMS if a in rungs and b in rungs]
    claims = [(name(a), name(b), meaning) for a, b, meaning in CLAIMS + ladder if a in emb and b in emb]
    paired, overall = heldout_sts.paired_table("paired", "Paired differences (the same resampled pairs for both "
                                               "sides), overall and per STS-B genre", pairs, cos,
                                               [(a, b) for a, b, _ in claims], n_boot=config.n_boot, seed=config.seed)
    speed = cost(backbone, texts[: config.speed_n], ks, config) if config.speed_n else {}
    tables = [scores, paired]
    if speed:
        tables.append(Table("cost", f"Inference cost on {min(config.speed_n, len(texts))} of these sentences (batch "
                                    f"{config.batch_size}), medians of {config.repeats} interleaved rounds in this run",
                            ("configuration", "seconds", "× plain forward"),
                            tuple((label, sec, ratio) for label, (sec, ratio) in speed.items()),
                            "Soft tokens with the shipped adapter, merged into a copy of the model once before timing "
                            "(the frozen model's cost). K = 0 is one forward of the instruction-wrapped prompt, "
                            "longer than the bare sentence.", digits={"× plain forward": 2}))
    tables.append(Table("training", "How each shipped adapter was trained (from its manifest)",
                        ("configuration", "objective", "steps", "best step", "best validation ρ", "wall (min)",
                         "pairs/s", "command"), tuple(training_rows(backbone, configs)),
                        digits={"wall (min)": 1, "pairs/s": 2}))
    series = [Series("k_curve", "Held-out STS-B: Spearman vs K", "generated tokens K (0 = no generation)", tuple(ks),
                     {line: [round(score_of[f"{line} K={k}"].spearman, 4) for k in ks] for line in (GIRCSE, FROZEN)},
                     {line: [cells.interval(score_of[f"{line} K={k}"].ci) for k in ks] for line in (GIRCSE, FROZEN)},
                     y="Spearman ρ")]
    timed = [k for k in ks if f"soft tokens K={k}" in speed]
    if timed:
        series.append(Series("cost", "Cost of each K", "generated tokens K", tuple(timed),
                             {"× plain forward": [speed[f"soft tokens K={k}"][1] for k in timed]}))
    findings = [heldout_sts.verdict(meaning, a, b, overall[a, b]) for a, b, meaning in claims if (a, b) in overall]
    if BASELINE not in configs:
        findings.append("No Causal-EOS baseline is shipped for this model, so the fair-baseline claim is not measured "
                        "(train it with `python -m analysis train gircse --objective causal-eos --ship`).")
    missing = [r for r in ("final", "stepwise") if r not in rungs]
    if missing:
        findings.append("The ablation ladder lacks " + " and ".join(missing) + " trained with today's recipe, so its "
                        "claims about them are not measured (`python -m analysis train gircse --steps 320 --eval-every "
                        "40 --max-minutes 50.0 --threads 2 --hard-negatives 8 --objective <rung> --ship`).")
    if any(label.endswith("(best step 0: the frozen model)") for label in configs):
        findings.append("An ablation marked best step 0 never beat its untrained start on validation: its weights are "
                        "the frozen model's, so no claim uses it.")
    if any(label.endswith("(older recipe)") for label in configs):
        findings.append("The rows marked older recipe come from the first trainer (mean of the step losses, selected "
                        "on the first 200 dev pairs; the training table has the rest): they differ from GIRCSE in more "
                        "than the loss.")
    weights = {f"gircse {place}": shipped_folder(backbone.facts, place) for place in PLACES
               if shipped_folder(backbone.facts, place) is not None}
    return Measured(data=data, sample=sample, models=[model_entry(backbone, weights)], tables=tables, series=series,
                    findings=findings, extra={"adapters": {a: adapter_spec(a) for a in PLACES
                                                           if any(v[0] == a for v in configs.values())}})


def recorded(backbone):
    """(record, changed) of the published GIRCSE record when it was measured on this model, else None; `changed`
    lists the shipped adapters ("shipped", "causal-eos") that differ from the ones it measured (the record is then
    out of date)."""
    record = read(ID)
    if record is None or not record.models or record.models[0].identity != backbone.identity:
        return None
    if not any(s.name == "k_curve" for s in record.series):
        return None
    adapters = record.extra.get("adapters") or {}
    return record, [name for name, spec in adapters.items() if adapter_spec(name) != spec]


def reference_rows(record) -> tuple[dict, dict]:
    """({label: row}, {label: row}) of the scores table: the flat references (Causal-EOS at K = 0, PromptEOL) and the
    single points (every other configuration that is not on the K curve), each row {"k", "spearman", "ci"}."""
    refs, points = {}, {}
    for row in record.table("scores").dicts():
        label = row["configuration"]
        base, _, k = label.partition(" K=")
        entry = {"k": int(k) if k else None, "spearman": row["Spearman"], "ci": row["95% CI"]}
        if base in (GIRCSE, FROZEN):
            continue
        if label == PROMPTEOL or label == f"{BASELINE} K=0":
            refs[f"{BASELINE} (K = 0)" if label != PROMPTEOL else PROMPTEOL] = entry
        else:
            points[label] = entry
    return refs, points
