"""Causal2Vec on held-out STS-B: does the decoder add to the encoder?

Configurations, all with the instruction the bridge was trained with: the trained system's concat / EOS / contextual
readouts, the same readouts with the untrained bridge and no LoRA, the frozen concatenation (the plain decoder's EOS
state next to the encoder vector, nothing trained), the encoder alone, PromptEOL, and the earlier MLP-only bridge (a
shipped ablation). The paper's controls, when they are shipped (`train causal2vec --control ... --ship`, trained with
the system's recipe and budget): the same recipe without the contextual token (Table 2, its EOS state) and the plain
concatenation of the two embeddings trained (Table 4; both table numbers as this project read the paper); the claims
then include the system against each.
Each with a 95% bootstrap interval; the claims as paired differences overall and per genre. Cost: ratios to the
plain forward of the same texts, timed interleaved in this run, on sentences and on the Lee corpus' documents.

`--variant LABEL=WEIGHTS` judges a variant of the recipe (a training run) against the shipped system, the encoder
alone and the frozen concatenation instead, and is recorded as `causal2vec_<label>`.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.core.errors import UserError
from analysis.core.params import param
from analysis.data.corpora import lee_documents
from analysis.experiments import Measured
from analysis.experiments.machinery import heldout_sts
from analysis.experiments.machinery.provenance import model_entry, shown_weights, weights_folder
from analysis.experiments.machinery.records import Table
from analysis.weights.artefacts import read_manifest

ID = "causal2vec"
TITLE = "Causal2Vec: does the decoder add to the encoder?"
HELP = ("Causal2Vec's readouts, untrained bridge, frozen concatenation, encoder alone, PromptEOL and the MLP-only "
        "ablation on held-out STS-B with paired differences, and the inference cost against the plain forward; "
        "--variant judges another training run against the shipped system.")
READOUTS = {"concat": "concat", "eos": "EOS", "contextual": "contextual"}
FROZEN_CONCAT = "frozen concatenation"
NO_C, TRAINED_CONCAT = "no-C control (Table 2)", "trained concatenation (Table 4)"  # the paper's trained controls
CONTROLS = {"no-contextual": (NO_C, "eos"), "concat": (TRAINED_CONCAT, "direct")}  # folder -> (row, its readout)
CLAIMS = [  # (A, B, what A > B would show)
    ("trained concat", "trained contextual", "the decoder's reading of the text adds to C alone"),
    ("trained concat", FROZEN_CONCAT, "the trained system beats the frozen decoder's EOS next to the encoder vector"),
    ("trained EOS", "untrained EOS", "training taught the half that reads the text"),
    ("trained concat", "encoder alone", "the system beats its encoder"),
    ("trained concat", "PromptEOL", "the system beats the decoder's best training-free method"),
    ("trained concat", "MLP-only concat", "the paper's recipe beats the earlier MLP-only bridge"),
    ("trained concat", NO_C, "the contextual token beats the same recipe without it (the paper's Table 2)"),
    ("trained concat", TRAINED_CONCAT, "the system beats the plain concatenation of the two embeddings trained with "
                                       "the same recipe (the paper's Table 4)"),
]


@dataclass(frozen=True)
class Config:
    sample: int = param(600, "pairs of the STS-B dev report part, stratified by genre (0 = all 1,200)", min=0)
    seed: int = param(0, "seed of the sample and of the bootstrap", min=0)
    model: str = param("default", "the decoder the bridge was trained for")
    bridge: str = param("shipped", "the trained system: shipped, or a run name / folder")
    ablation: str = param("shipped/ablations/mlp-only", "the MLP-only bridge ('' leaves its rows out)")
    controls: str = param("shipped/ablations", "where the paper's trained controls are (<place>/no-contextual, "
                           "<place>/concat; absent ones are left out, '' leaves both out)")
    variant: str = param("", "LABEL=WEIGHTS: judge this training run against the shipped system instead")
    speed_n: int = param(256, "sentences timed for the cost table (0 = no cost table)", min=0)
    speed_long: int = param(64, "Lee-corpus documents timed for the cost table", min=0)
    repeats: int = param(3, "interleaved timing rounds (medians kept)", min=1, limit=20)
    n_boot: int = param(1000, "bootstrap resamples", min=0, limit=10_000)


def readouts(label: str, **params) -> dict:
    """{"<label> concat": method, "<label> EOS": ..., "<label> contextual": ...} of one bridge."""
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start

    return {f"{label} {shown}": get_method("causal2vec", readout=r, **params) for r, shown in READOUTS.items()}


def variant_claims(label: str) -> list[tuple[str, str, str]]:
    return [(f"{label} concat", "trained concat", f"{label} beats the shipped recipe"),
            (f"{label} concat", "encoder alone", f"{label} beats its encoder"),
            (f"{label} concat", FROZEN_CONCAT, f"{label} beats the frozen concatenation"),
            (f"{label} concat", f"{label} contextual", f"with {label}, the decoder's reading adds to C alone")]


def measure(config: Config, compute, progress) -> Measured:
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start

    pairs, sample = heldout_sts.report_pairs(config.sample, config.seed)
    backbone = compute.backbone(config.model)
    facts = backbone.facts
    trained = weights_folder(ID, facts, config.bridge)
    instruction = get_method("causal2vec", bridge=str(trained)).params.instruction  # what it was trained with
    methods = readouts("trained", bridge=str(trained))
    weights = {shown_weights(config.bridge): trained}
    label = ""
    if config.variant:
        label, _, spec = config.variant.partition("=")
        if not label or not spec:
            raise UserError("--variant takes LABEL=WEIGHTS, for example encoder-lora=encoder-lora-run.")
        folder = weights_folder(ID, facts, spec)
        methods = {"trained concat": methods["trained concat"], **readouts(label, bridge=str(folder))}
        weights[shown_weights(spec)] = folder
    else:
        methods.update(readouts("untrained", bridge="untrained", instruction=instruction))
    methods[FROZEN_CONCAT] = get_method("causal2vec", readout="direct", instruction=instruction)
    methods["encoder alone"] = get_method("sentence_encoder")
    if not config.variant:
        methods["PromptEOL"] = get_method("prompteol")
        if config.ablation:
            old = weights_folder(ID, facts, config.ablation)
            weights[shown_weights(config.ablation)] = old
            ablation = readouts("MLP-only", bridge=str(old))
            methods.update({k: ablation[k] for k in ("MLP-only concat", "MLP-only contextual")})
        for spec, (row, how) in trained_controls(facts, config.controls).items():
            weights[shown_weights(spec)] = folder = weights_folder(ID, facts, spec)
            methods[row] = get_method("causal2vec", bridge=str(folder), readout=how)
    cos, took = heldout_sts.cosines(compute, backbone, methods, pairs, progress)
    n_texts = len(heldout_sts.texts_of(pairs))
    scores, _ = heldout_sts.score_table("scores", f"Spearman on {len(pairs)} held-out pairs ({n_texts} sentences), "
                                        "95% bootstrap interval, and per genre", pairs, cos, n_boot=config.n_boot,
                                        seed=config.seed)
    claims = variant_claims(label) if config.variant else CLAIMS
    paired, overall = heldout_sts.paired_table("paired", "Paired differences (the same resampled pairs for both "
                                               "sides), overall and per genre", pairs, cos,
                                               [(a, b) for a, b, _ in claims], n_boot=config.n_boot, seed=config.seed)
    tables = [scores, paired]
    if not config.variant and (config.speed_n or config.speed_long):
        progress(len(methods), len(methods) + 1, "cost")
        tables.append(cost_table(backbone, str(trained), heldout_sts.texts_of(pairs), config))
    findings = [heldout_sts.verdict(meaning, a, b, overall[a, b]) for a, b, meaning in claims if (a, b) in overall]
    missing = [row for row, _ in CONTROLS.values() if row not in methods]
    if not config.variant and config.controls and missing:
        findings.append(f"Not measured, since not trained for this model: {', '.join(missing)} (`python -m analysis "
                        "train causal2vec --control no-contextual --ship` and `--control concat --ship`, the system's "
                        "recipe and budget).")
    return Measured(data=f"{pairs.name}: STS-B dev pairs that no checkpoint or setting was selected on",
                    sample=sample, models=[model_entry(backbone, weights)], tables=tables, findings=findings,
                    extra={"seconds": took, "trained_by": _trained_by(weights)}, variant=label,
                    title=f"Causal2Vec: {label} against the shipped recipe" if label else "")


def trained_controls(facts, place: str) -> dict[str, tuple[str, str]]:
    """{weights spec: (row label, readout)} of the paper's controls found under `place` for this model."""
    if not place:
        return {}
    out = {}
    for name, row in CONTROLS.items():
        spec = f"{place.rstrip('/')}/{name}"
        try:
            weights_folder(ID, facts, spec)
        except UserError:
            continue  # not trained for this model (yet): its claim is left out, the record says which are there
        out[spec] = row
    return out


def cost_table(backbone, bridge: str, texts: list[str], config: Config) -> Table:
    from analysis.eval.cost import ratios  # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods import get_method  # lazy: keeps torch off the pages' and the command line's start

    rows = []
    documents = lee_documents().texts[: config.speed_long]
    for what, sample in (("sentences", texts[: config.speed_n]), ("documents", documents)):
        if not sample:
            continue
        configs = {"encoder alone": get_method("sentence_encoder"), "Causal2Vec (concat)":
                   get_method("causal2vec", bridge=bridge), "PromptEOL": get_method("prompteol")}
        timed = ratios(backbone, {k: (lambda m=m, s=sample: m.encode(backbone, s, batch_size=16))
                                  for k, m in configs.items()}, sample, repeats=config.repeats)
        rows += [(f"{what} ({len(sample)})", label, sec, ratio) for label, (sec, ratio) in timed.items()]
    return Table("cost", f"Inference cost, medians of {config.repeats} interleaved rounds in one run (batch 16)",
                 ("texts", "configuration", "seconds", "× plain forward"), tuple(rows), digits={"× plain forward": 2})


def _trained_by(weights: dict) -> dict:
    out = {}
    for label, folder in weights.items():
        m = read_manifest(folder)
        out[label] = {k: m.get(k) for k in ("command", "steps_done", "best_step", "wall_seconds",
                                            "examples_per_second")}
    return out
