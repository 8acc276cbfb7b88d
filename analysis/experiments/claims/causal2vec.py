"""Causal2Vec's claims (Lin et al., 2025): the concatenated readout beats the last token (Table 12), the contextual
token helps (Table 2) more than plain concatenation (Table 4) and than its encoder alone (Table 6), more than Token
Prepending (Table 6), it is more robust to appended noise (Table 3), and it costs about a plain forward and one token
more (Fig. 4, App. C.7), with causal attention rather than bidirectional (Table 15) and with the token after the
instruction (Table 14). The claims that need a training variant this machine has not made are "not measured" with
its command; the 7B and whole-MTEB claims "cannot run here".

Every claim needs the system trained for this model (a shipped bridge whose manifest names this model's weights); the
quality claims compare on the board's held-out pairs through the `Compute` door (the `causal2vec` record's paired row
is read where it has the comparison and was measured on this model's shipped bridge).

Sources checked (November 2026): the paper's full text (../shared/papers/causal2vec.txt); quotes and numbers in
`papers.causal2vec`.
"""

from __future__ import annotations

import numpy as np

from analysis.core.errors import UserError
from analysis.core.paths import file_sha256
from analysis.data.corpora import Pairs
from analysis.experiments.causal2vec import CONTROLS
from analysis.experiments.claims import (
    Claim,
    Evidence,
    NeedsRun,
    Outcome,
    refuse,
    timing,
)
from analysis.experiments.claims.context import (
    STS_HOW,
    configured,
    recorded_difference,
    short_name,
)
from analysis.experiments.machinery import verdicts
from analysis.experiments.machinery.provenance import weights_folder
from analysis.methods.causal2vec import shipped_fits, shipped_folder
from analysis.training.causal2vec import INSTRUCTION
from analysis.weights.artefacts import WEIGHTS

HERE = "measured here"
DEVIATIONS = ("method:causal2vec", "system:causal2vec")
TRAINING = Evidence("Training: the shipped system's curves", "training")
LESSON = Evidence("Lesson: three embeddings of the same sentences", "lessons", {"lesson": "causal2vec", "step": 3})
ENCODER_LESSON = Evidence("Lesson: what the encoder alone already knows", "lessons", {"lesson": "causal2vec",
                                                                                       "step": 4})
TRAIN_MINUTES = 21  # a control's whole run on SmolLM2 (180 steps, 17.6-17.8 min of training): docs/results
# Table 3 appends "task-irrelevant text" without giving it: one fixed sentence here, the same for every input
NOISE = ("Meanwhile, the committee agreed to meet again next spring to review the maintenance schedule of the old "
         "library building and the plans for a new parking area near the station.")
EOS_RUN = "ablations/eos-readout"


def _train(ctx, what: str, flags: str) -> str:
    name = short_name(ctx.backbone.facts)
    return (f"needs {what} trained for {name} with the system's recipe and budget (`python -m analysis train "
            f"causal2vec --model {name} {flags}--ship`, about {TRAIN_MINUTES} min here on SmolLM2)")


def _trained(ctx) -> None:
    if not shipped_fits(ctx.backbone):
        raise NeedsRun(_train(ctx, "a Causal2Vec bridge", "") + " or all of them at once with `python -m analysis "
                       f"train all --model {short_name(ctx.backbone.facts)} --budget-hours H`")


def _readout(readout: str):
    return configured("causal2vec", readout=readout)


def _shipped_place(ctx, place: str):
    """A folder shipped below this model's Causal2Vec artefacts, or None."""
    try:
        return weights_folder("causal2vec", ctx.backbone.facts, f"shipped/{place}")
    except UserError:
        return None


def _eos_trained(ctx):
    """The system trained on its EOS readout (Table 2 row 2, Table 12's last-token row), read at EOS, or None."""
    folder = _shipped_place(ctx, EOS_RUN)
    return None if folder is None else configured("causal2vec", bridge=str(folder), readout="eos")


# ---- concat against the last token, each trained (Table 12) -------------------------------------------------------
def _readouts_work(ctx):
    _trained(ctx)
    eos = _eos_trained(ctx)
    return [ctx.sts_unit(_readout(r)) for r in ("concat", "eos", "contextual")] + (
        [ctx.sts_unit(eos)] if eos is not None else [])


def _readouts(ctx) -> Outcome:
    _trained(ctx)
    concat, eos, contextual = (_readout(r) for r in ("concat", "eos", "contextual"))
    same_weights = ctx.sts_paired(concat, eos)
    twice = np.array_equal(ctx.cosines(eos), ctx.cosines(contextual))
    beside = [f"The system trained on concat, read at its EOS state (this project's weaker test, one set of weights "
              f"read two ways): concat minus EOS {same_weights.number} ({same_weights.word}).",
              "EOS and contextual readouts of the same weights are " + (
                  "identical: one vector read twice, a fault" if twice else "different vectors (checked pair by "
                  f"pair; Spearman {ctx.spearman(eos):.4f} and {ctx.spearman(contextual):.4f})") + "."]
    values = {"concat (trained on concat)": round(ctx.spearman(concat), 4),
              "EOS of the concat-trained system": round(ctx.spearman(eos), 4),
              "contextual of the concat-trained system": round(ctx.spearman(contextual), 4)}
    trained = _eos_trained(ctx)
    if trained is None:
        return Outcome(verdicts.not_measured(_train(ctx, "the system on its EOS readout", "--train-readout eos ")),
                       HERE, values, tuple(beside))
    values["EOS (trained on EOS)"] = round(ctx.spearman(trained), 4)
    return Outcome(ctx.sts_paired(concat, trained), HERE, values, tuple(beside))


# ---- the system against its encoder and the trained controls (Tables 2, 4, 6) --------------------------------------
def _control(ctx, name: str):
    """The control `name` ("no-contextual", "concat") shipped for this model, read as its trainer reads it
    (`experiments.causal2vec.CONTROLS`); NeedsRun saying how to train it."""
    folder = _shipped_place(ctx, f"ablations/{name}")
    if folder is None:
        raise NeedsRun(_train(ctx, f"the {name} control", f"--control {name} "))
    return configured("causal2vec", bridge=str(folder), readout=CONTROLS[name][1])


def _label(side: str) -> str:
    """The causal2vec record's row label of B in "Causal2Vec minus B": "encoder", or a control's name."""
    return {"encoder": "encoder alone", "tp": "Token Prepending"}.get(side) or CONTROLS[side][0]


def _other(ctx, side: str):
    if side == "encoder":
        return configured("sentence_encoder")
    if side == "tp":
        return configured("token_prepending")
    return _control(ctx, side)


def _recorded(ctx, side: str):
    """(verdict, note, values) from the causal2vec record's paired row against `side`, when it measured this
    model's shipped bridge; else None."""
    found = ctx.record("causal2vec")
    if found is None:
        return None
    rec, note = found
    digests = [d for m in rec.models for d in m.weights.values()]
    if digests and file_sha256(shipped_folder(ctx.backbone) / WEIGHTS) not in digests:
        return None  # the bridge was retrained since the record
    label = _label(side)
    row = rec.table("paired").row(f"trained concat − {label}")
    if row is None:
        return None
    d, ci = recorded_difference(row["all"])
    scores = {r["configuration"]: r["Spearman"] for r in rec.table("scores").dicts()}
    return (verdicts.paired(d, ci, rec.sample.n, unit="pairs"), note,
            {"Causal2Vec (concat)": scores.get("trained concat"), label: scores.get(label)})


def _versus_work(side: str):
    def work(ctx):
        _trained(ctx)
        if _recorded(ctx, side):
            return []
        return [ctx.sts_unit(_readout("concat")), ctx.sts_unit(_other(ctx, side))]
    return work


def _versus(side: str):
    def judge(ctx) -> Outcome:
        _trained(ctx)
        found = _recorded(ctx, side)
        outcome = Outcome(*found) if found is not None else None
        if outcome is None:
            system, other = _readout("concat"), _other(ctx, side)
            outcome = Outcome(ctx.sts_paired(system, other), HERE, {
                "Causal2Vec (concat)": round(ctx.spearman(system), 4), _label(side): round(ctx.spearman(other), 4)})
        if side == "no-contextual" and _eos_trained(ctx) is not None:  # Table 2 rows 2 minus 1: the token alone
            alone = ctx.sts_paired(_eos_trained(ctx), _control(ctx, side))
            outcome = Outcome(outcome.verdict, outcome.source, outcome.values, (
                f"The token alone (Table 2 rows 2 minus 1: the EOS-trained system minus the control): {alone.number} "
                f"({alone.word}).",))
        return outcome
    return judge


# ---- the paper's training variants: attention (Table 15) and the token's position (Table 14) -----------------------
VARIANTS = {  # claim -> (its run's place, what it is, its training flags, the shipped system's label, the variant's)
    "c2v-causal-vs-bidir": ("ablations/bidirectional", "the system with the decoder's causal mask removed",
                            "--attention bidirectional ", "causal (shipped)", "bidirectional"),
    "c2v-ctx-position": ("ablations/contextual-before", "the system with the contextual token before the instruction",
                         "--contextual-position before ", "after the instruction (shipped)",
                         "before the instruction"),
}


def _variant(ctx, claim: str):
    """The variant `claim` compares the shipped system with, trained with the system's recipe and budget and read as
    it was trained (its manifest's attention and position: the method's `auto`); NeedsRun with its command."""
    place, what, flags, _, _ = VARIANTS[claim]
    _trained(ctx)
    folder = _shipped_place(ctx, place)
    if folder is None:
        raise NeedsRun(_train(ctx, what, flags))
    return configured("causal2vec", bridge=str(folder), readout="concat")


def _variant_work(claim: str):
    def work(ctx):
        variant = _variant(ctx, claim)  # first: a missing run is said before any work is counted
        return [ctx.sts_unit(_readout("concat")), ctx.sts_unit(variant)]
    return work


def _versus_variant(claim: str):
    def judge(ctx) -> Outcome:
        variant = _variant(ctx, claim)
        system = _readout("concat")
        _, _, _, ours, theirs = VARIANTS[claim]
        return Outcome(ctx.sts_paired(system, variant), HERE, {ours: round(ctx.spearman(system), 4),
                                                               theirs: round(ctx.spearman(variant), 4)})
    return judge


# ---- noise appended (Table 3) -------------------------------------------------------------------------------------
def noisy(pairs: Pairs) -> Pairs:
    """The same pairs with NOISE appended to every sentence (the gold scores unchanged, so they pair)."""
    return Pairs(f"{pairs.name} (noise appended)", [f"{t} {NOISE}" for t in pairs.left],
                 [f"{t} {NOISE}" for t in pairs.right], pairs.scores)


def _noise_work(ctx):
    _trained(ctx)
    system, control = _readout("concat"), _control(ctx, "no-contextual")
    return [ctx.sts_unit(m, p) for m in (system, control) for p in (ctx.pairs, noisy(ctx.pairs))]


def _noise(ctx) -> Outcome:
    _trained(ctx)
    system, control, dirty = _readout("concat"), _control(ctx, "no-contextual"), noisy(ctx.pairs)
    d = ctx.combination([(1.0, system, ctx.pairs), (-1.0, system, dirty), (-1.0, control, ctx.pairs),
                         (1.0, control, dirty)])
    verdict = verdicts.paired(d.difference, d.ci, len(ctx.pairs), direction=-1, unit="pairs")
    values = {f"{label} {when}": round(ctx.spearman(m, p), 4) for label, m in
              (("Causal2Vec", system), ("no-contextual control", control))
              for when, p in (("clean", ctx.pairs), ("noise appended", dirty))}
    return Outcome(verdict, HERE, values)


# ---- cost against the plain model with the same instruction (Fig. 4, App. C.7) ------------------------------------
def _texts(ctx) -> list[str]:
    return ctx.texts()[: ctx.settings.timing_texts]


def _plain_with_instruction(ctx):
    """The plain decoder reading the system's own instruction and the text, last-token readout: what the paper's
    "standard LLM" costs with the same input but the contextual token."""
    return configured("prompteol", template=INSTRUCTION + "{text}")


def _trio(ctx) -> dict:
    return {"Causal2Vec": _readout("concat"), "plain, same instruction": _plain_with_instruction(ctx),
            "Echo": configured("echo")}


def _time_work(ctx):
    _trained(ctx)
    return [timing.unit(ctx, "causal2vec-plain", _trio(ctx), _texts(ctx))]


def _time(ctx) -> Outcome:
    _trained(ctx)
    t = timing.timed(ctx, "causal2vec-plain", _trio(ctx), _texts(ctx))
    ratio, spread = t.ratio("Causal2Vec", "plain, same instruction")
    echo, echo_spread = t.ratio("Causal2Vec", "Echo")
    under = verdicts.below(echo, bar=1.0, spread=echo_spread, what="Causal2Vec / Echo")
    beside = (f"{under.number}: {under.word}. The paper's 82% less time is against bge-en-icl's in-context examples, "
              "not built here.",)
    return Outcome(verdicts.ratio(ratio, claimed=1.0, spread=spread), t.source(),
                   {"Causal2Vec / plain with the same instruction (paper: comparable)":
                        t.shown("Causal2Vec", "plain, same instruction"),
                    "Causal2Vec / Echo": t.shown("Causal2Vec", "Echo"),
                    "Causal2Vec / plain forward of the bare text": t.shown("Causal2Vec")}, beside)


def _length(ctx) -> Outcome:
    _trained(ctx)
    texts = _texts(ctx)
    lengths = {k: float(np.mean([len(e.ids) for e in m.prepare(ctx.backbone, texts)])) for k, m in _trio(ctx).items()}
    extra = lengths["Causal2Vec"] - lengths["plain, same instruction"]
    beside = (f"Causal2Vec / Echo tokens: {lengths['Causal2Vec'] / lengths['Echo']:.2f}; the paper's 85% fewer is "
              "against bge-en-icl's in-context examples, not built here.",)
    return Outcome(verdicts.at_most(extra, bar=2.0, what="extra tokens per text"), HERE,
                   {f"{k} tokens per text": round(v, 1) for k, v in lengths.items()}, beside)


STS = f"{STS_HOW}, Spearman"
CLAIMS = [
    Claim("c2v-readouts", "causal2vec", "The concatenated readout (contextual and EOS states) beats the last token, "
          "each readout trained.",
          f"{STS}: the shipped system (trained and read on concat) against the same recipe trained and read on its EOS "
          "state (`--train-readout eos`); the concat-trained system read at EOS beside.",
          "paired: concat system minus EOS-trained system > 0", _readouts, _readouts_work, DEVIATIONS,
          (LESSON, TRAINING)),
    Claim("c2v-contextual-token", "causal2vec", "The contextual token helps the decoder: the system beats the same "
          "training without it.",
          f"{STS}: the shipped system (concat) against the control trained with the same recipe and budget without "
          "the contextual token (its LoRA read at EOS): Table 2 rows 3 minus 1; rows 2 minus 1 beside when the "
          "EOS-trained system is shipped.", "paired: Causal2Vec minus the no-contextual control > 0",
          _versus("no-contextual"), _versus_work("no-contextual"), DEVIATIONS, (TRAINING,)),
    Claim("c2v-plain-concat", "causal2vec", "Causal2Vec beats simply concatenating the encoder's and the LLM's "
          "embeddings.",
          f"{STS}: the shipped system (concat) against the plain-concatenation control: the decoder's EOS state next "
          "to the encoder's vector, its LoRA trained with the same recipe and budget.",
          "paired: Causal2Vec minus the trained plain concatenation > 0", _versus("concat"), _versus_work("concat"),
          DEVIATIONS, (TRAINING,)),
    Claim("c2v-encoder", "causal2vec", "Causal2Vec beats its bidirectional encoder alone (the LLM sets the ceiling).",
          f"{STS}: the shipped system (concat) against MiniLM alone (mean-pooled, the encoder that makes its "
          "contextual token).", "paired: Causal2Vec minus MiniLM alone > 0", _versus("encoder"),
          _versus_work("encoder"), DEVIATIONS, (ENCODER_LESSON,)),
    Claim("c2v-vs-tp", "causal2vec", "Causal2Vec beats Token Prepending.",
          f"{STS}: the shipped system (concat) against Token Prepending at its defaults (training-free, on the frozen "
          "model).", "paired: Causal2Vec minus Token Prepending > 0", _versus("tp"), _versus_work("tp"),
          DEVIATIONS + ("method:token_prepending",), (LESSON,)),
    Claim("c2v-noise", "causal2vec", "Appended irrelevant text costs Causal2Vec less than the same model trained "
          "without the contextual token.",
          f"{STS}: every sentence with one fixed irrelevant sentence appended; (clean minus noisy) of the system "
          "against the same of the no-contextual control, paired over the same pairs.",
          "paired: the system's drop minus the control's drop < 0", _noise, _noise_work, DEVIATIONS, (TRAINING,)),
    Claim("c2v-time", "causal2vec", "Causal2Vec runs about as fast as the plain model given the same input.",
          "The board's timing sentences: Causal2Vec (its MiniLM pass included), the plain decoder on the same "
          "instruction and text, Echo and the bare plain forward in the same interleaved rounds; a ratio per round.",
          "ratio: Causal2Vec / plain with the same instruction at most 1.0x plus 25% over every round (straddling: "
          "not resolved)", _time, _time_work, DEVIATIONS + ("method:echo",),
          (Evidence("Report: cost per method", "report"),)),
    Claim("c2v-length", "causal2vec", "Causal2Vec needs only one token more than the plain model.",
          "The board's timing sentences: the decoder's input tokens per text of Causal2Vec (instruction, contextual "
          "token, text, EOS) against the plain decoder's with the same instruction; Echo beside.",
          "count: at most 2 extra tokens per text (the token, and a separator as on Mistral)", _length,
          lambda ctx: (_trained(ctx), [])[1], DEVIATIONS + ("method:echo",), (LESSON,)),
    Claim("c2v-causal-vs-bidir", "causal2vec", "Causal2Vec with causal attention beats the same trained with "
          "bidirectional attention.", f"{STS}: the shipped system (concat) against the same recipe and budget trained "
          "and read with the decoder's causal mask removed in every layer (`--attention bidirectional`).",
          "paired: causal minus bidirectional > 0", _versus_variant("c2v-causal-vs-bidir"),
          _variant_work("c2v-causal-vs-bidir"), DEVIATIONS, (TRAINING,)),
    Claim("c2v-ctx-position", "causal2vec", "The contextual token placed after the instruction beats it placed "
          "before.", f"{STS}: the shipped system (C after the instruction, the paper's layout) against the same recipe "
          "and budget trained and read with C before the instruction (`--contextual-position before`).",
          "paired: after minus before > 0", _versus_variant("c2v-ctx-position"), _variant_work("c2v-ctx-position"),
          DEVIATIONS, (TRAINING,)),
    Claim("c2v-mteb-sota", "causal2vec", "Causal2Vec is state of the art on MTEB among models trained on public "
          "retrieval data.", "Not run: needs 1.3B-7B backbones, 1.5M training pairs and the whole MTEB.",
          "cannot run here", refuse("1.3B-7B backbones trained on about 1.5M public retrieval pairs and the whole "
                                    "MTEB (56 datasets)"),
          refuse("1.3B-7B backbones, 1.5M training pairs and the whole MTEB"), DEVIATIONS, (TRAINING,)),
    Claim("c2v-e5-mistral", "causal2vec", "Causal2Vec also improves e5-mistral-7b-instruct.",
          "Not run: needs e5-mistral-7b-instruct.", "cannot run here",
          refuse("e5-mistral-7b-instruct (7B) and MTEB-MINI"), refuse("e5-mistral-7b-instruct (7B) and MTEB-MINI"),
          DEVIATIONS, (TRAINING,)),
]
