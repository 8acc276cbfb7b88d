"""GIRCSE's claims (anonymous, under review): contrastively trained soft-token generation beats its fair baselines
(Table 2), improves as more tokens are generated (Fig. 2 top), where a model not trained for generation gains nothing
from it (Fig. 2 bottom), each part of its objective adds (Table 3), and with the KV cache it costs about one forward
(Table 6), against its other fair baseline Bidirectional-Avg too (Table 2), by more with less training data (Fig. 3).
The claims that need 7B embedders, the whole MTEB or the instruction-following sets are on the board as "cannot run
here"; those that need a training run this machine can make but has not are "not measured" with it.

Sources checked (November 2026): the paper's full text (../shared/papers/gircse.txt), the reference code
(github.com/Roytsai27/GIRCSE) and its model card; quotes and numbers in `papers.gircse`.

Each claim is read from the `gircse` record (`python -m analysis measure gircse`) when it was measured on this model
with the adapters shipped now and has the comparison; otherwise it is measured here on the board's held-out pairs
through the compute, with the adapters shipped for this model. A model without them says what to train.
"""

from __future__ import annotations

from analysis.data.corpora import lee_documents
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
from analysis.inspect.generation import older_recipe, untrained_result
from analysis.weights.adapters import adapter_spec, shipped_folder

HERE = "measured here"
DEVIATIONS = ("method:soft_tokens", "system:gircse")
K_CURVE = Evidence("Soft tokens: the recorded K curve", "soft_tokens")
K_LESSON = Evidence("Lesson: do more steps help?", "lessons", {"lesson": "soft-tokens", "step": 4})
GIRCSE, BASELINE, FROZEN = "GIRCSE", "Causal-EOS", "frozen model"
BIDIR_AVG = "Bidirectional-Avg"  # the paper's other fair baseline (Table 2): `adapter=bidirectional-avg`, read at K = 0
SMALL_PAIRS = 350  # Fig. 3's smallest training set is a quarter of its largest (50K of 200K): 350 of 1,406 positives
SMALL_STEPS = 80  # ... trained for as many passes as the shipped 320 steps make over all of them (`queue._QUARTER`)
SMALL = {GIRCSE: f"GIRCSE, {SMALL_PAIRS} pairs", BASELINE: f"Causal-EOS, {SMALL_PAIRS} pairs"}  # labels of the runs
FINAL, STEPWISE = "ablation final", "ablation stepwise"  # the ladder's rungs below GIRCSE, as the record names them
FIXED_K = {FINAL: 5, STEPWISE: 5}  # the K a configuration is read at, when fixed
TIE = 0.01  # Spearman: the non-inferiority margin of the rungs the paper shows flat on STS (+0.17, +0.06 points)
RUN_MINUTES = {"causal-eos": 23, "final": 29, "stepwise": 26, "icr": 37}  # the shipped runs' training minutes
RUN_MINUTES["bidirectional-avg"] = RUN_MINUTES["causal-eos"]  # one forward a text, no generation: Causal-EOS's cost
RECIPE = "--steps 320 --eval-every 40 --hard-negatives 8"  # the shipped adapter's flags (`queue._GIRCSE`)


def _k(label: str, k: int | None) -> int | None:
    return FIXED_K.get(label, k)


def _name(label: str, k: int | None) -> str:
    """A configuration as the gircse record's rows name it ("GIRCSE K=5", "Causal-EOS K=0")."""
    k = _k(label, k)
    return label if k is None else f"{label} K={k}"


def _adapter(ctx, label: str) -> str:
    """The `adapter` parameter a configuration runs with on this model, or NeedsRun saying what to train: an
    ablation counts only when today's recipe trained it and it beat its untrained start."""
    name = short_name(ctx.backbone.facts)
    train = f"`python -m analysis train gircse --model {name}"
    if label == FROZEN:
        return "none"
    base = shipped_folder(ctx.backbone.facts)
    if base is None:
        raise NeedsRun(f"needs a GIRCSE adapter trained for {name} ({train} --ship`, about {RUN_MINUTES['icr']} min "
                       "here for SmolLM2; or `python -m analysis train all --model " + name + "`)")
    if label == GIRCSE:
        return "shipped"
    if label == BASELINE:
        if shipped_folder(ctx.backbone.facts, "causal-eos") is None:
            raise NeedsRun(f"needs its Causal-EOS baseline trained for {name} ({train} --objective causal-eos "
                           f"--ship`, about {RUN_MINUTES['causal-eos']} min here for SmolLM2)")
        return "causal-eos"
    if label == BIDIR_AVG:
        if shipped_folder(ctx.backbone.facts, "bidirectional-avg") is None:
            raise NeedsRun(f"needs its Bidirectional-Avg baseline trained for {name} with the shipped recipe and "
                           f"budget ({train} {RECIPE} --objective bidirectional-avg --ship`, about "
                           f"{RUN_MINUTES['bidirectional-avg']} min here for SmolLM2)")
        return "bidirectional-avg"
    if label in SMALL.values():
        return _small_run(ctx, label, base)
    rung = label.removeprefix("ablation ")
    folder = base / "ablations" / rung
    trained = (folder / "adapter_config.json").is_file()
    why = ("is not trained" if not trained else "comes from the first trainer (another recipe)" if older_recipe(folder)
           else "never beat its untrained start (best step 0: the frozen model)" if untrained_result(folder) else "")
    if why:
        raise NeedsRun(f"needs the ablation ladder trained for {name} with the shipped recipe and budget ({train} "
                       f"--objective {rung} --ship`, with the shipped adapter's other flags, about "
                       f"{RUN_MINUTES.get(rung, 30)} min here): {rung} {why}")
    return str(folder)


def _small_run(ctx, label: str, base) -> str:
    """The folder of GIRCSE or Causal-EOS trained on a quarter of the positive pairs (Fig. 3's smaller set), shipped
    below the GIRCSE adapter's folder `base` (`training.gircse.ship_place`), or NeedsRun with the commands of both
    small runs (the comparison needs the two)."""
    name = short_name(ctx.backbone.facts)
    objective = "icr" if label == SMALL[GIRCSE] else "causal-eos"
    found = base / "ablations" / f"{objective}-pairs{SMALL_PAIRS}"
    if (found / "adapter_config.json").is_file():
        return str(found)
    minutes = round((RUN_MINUTES["icr"] + RUN_MINUTES["causal-eos"]) * SMALL_STEPS / 320)
    recipe = RECIPE.replace("--steps 320", f"--steps {SMALL_STEPS}")
    raise NeedsRun(f"needs GIRCSE and Causal-EOS each trained for {name} on a seeded {SMALL_PAIRS} of the 1,406 "
                   f"positive pairs with the shipped recipe for as many passes over them (`python -m analysis train "
                   f"gircse --model {name} {recipe} --train-pairs {SMALL_PAIRS} --ship` and the same with "
                   f"--objective causal-eos, about {minutes} min here for SmolLM2 with their validations; the runs "
                   "on all of them are the shipped adapter and baseline)")


def _method(ctx, label: str, k: int | None):
    return configured("soft_tokens", adapter=_adapter(ctx, label), k=_k(label, k))


def _record(ctx):
    """(record, note) of the gircse record when it measured this model with the adapters shipped now, else None."""
    found = ctx.record("gircse")
    if found is None:
        return None
    adapters = found[0].extra.get("adapters") or {}
    try:
        if any(adapter_spec(name) != spec for name, spec in adapters.items()):
            return None  # an adapter was retrained since: measure it again
    except Exception:  # noqa: BLE001 -- an adapter the record names is gone: the record is out of date
        return None
    return found


def _recorded(ctx, a: tuple, b: tuple, margin: float | None = None):
    """(verdict, note, values) of the record's paired row A - B, or None when no current record has it."""
    found = _record(ctx)
    if found is None:
        return None
    rec, note = found
    row = rec.table("paired").row(f"{_name(*a)} − {_name(*b)}")
    if row is None:
        return None
    d, ci = recorded_difference(row["all"])
    scores = {r["configuration"]: r["Spearman"] for r in rec.table("scores").dicts()}  # rows named as `_name` names
    values = {_name(*side): scores.get(_name(*side)) for side in (a, b)}
    verdict = (verdicts.paired(d, ci, rec.sample.n, unit="pairs") if margin is None
               else verdicts.non_inferior(d, ci, rec.sample.n, margin=margin, unit="pairs"))
    return verdict, note, values


def difference(ctx, a: tuple, b: tuple, margin: float | None = None) -> tuple[verdicts.Verdict, str, dict]:
    """(verdict, source, values) of Spearman A - B, A and B (configuration, K): the record's paired row when it has
    one, else measured on the board's pairs; with `margin`, A not worse than B by more than it (`non_inferior`)."""
    found = _recorded(ctx, a, b, margin)
    if found is not None:
        return found
    ma, mb = _method(ctx, *a), _method(ctx, *b)
    verdict = ctx.sts_paired(ma, mb) if margin is None else ctx.sts_non_inferior(ma, mb, margin)
    return verdict, HERE, {_name(*a): round(ctx.spearman(ma), 4), _name(*b): round(ctx.spearman(mb), 4)}


def _work(*comparisons):
    def work(ctx):
        units = []
        for a, b, *_ in comparisons:
            if _recorded(ctx, a, b) is None:
                units += [ctx.sts_unit(_method(ctx, *a)), ctx.sts_unit(_method(ctx, *b))]
        return units
    return work


def _judge(*comparisons, labels=(), beside=()):
    """One comparison's verdict, or all of several (`verdicts.all_of`, labelled); a comparison is (A, B) or (A, B,
    margin). `beside`: comparisons shown beside the verdict, not judged."""
    def judge(ctx) -> Outcome:
        parts = [difference(ctx, *c) for c in comparisons]
        shown = [difference(ctx, *c) for c in beside]
        values = {k: v for _, _, vals in parts + shown for k, v in vals.items()}
        verdict = parts[0][0] if len(parts) == 1 else verdicts.all_of([p[0] for p in parts], list(labels))
        sources = list(dict.fromkeys(p[1] for p in parts + shown))
        notes = tuple(f"{_name(*c[0])} minus {_name(*c[1])} (beside, not judged): {p[0].number} ({p[0].word})"
                      for c, p in zip(beside, shown))
        return Outcome(verdict, "; ".join(sources), values, notes)
    return judge


# ---- cost with the KV cache (Table 6) -----------------------------------------------------------------------------
def _documents(ctx) -> list[str]:
    """Texts of about a thousand tokens (four Lee news documents joined): Table 6 reports 512-2K-token inputs."""
    docs = lee_documents().texts
    return [" ".join(docs[i: i + 4]) for i in range(0, 4 * DOCUMENTS, 4)]


DOCUMENTS = 16


def _cost_methods(ctx) -> dict:
    _adapter(ctx, GIRCSE)
    _adapter(ctx, BASELINE)
    return {"GIRCSE K=5": configured("soft_tokens", adapter="shipped", k=5),
            "Causal-EOS K=0": configured("soft_tokens", adapter="causal-eos", k=0)}


def _cost_work(ctx):
    methods = _cost_methods(ctx)
    return [timing.unit(ctx, "gircse-documents", methods, _documents(ctx)),
            timing.unit(ctx, "gircse-sentences", methods, ctx.texts()[: ctx.settings.timing_texts])]


def _cost(ctx) -> Outcome:
    methods = {k: ctx.ready(m) for k, m in _cost_methods(ctx).items()}
    docs = timing.timed(ctx, "gircse-documents", methods, _documents(ctx))
    sents = timing.timed(ctx, "gircse-sentences", methods, ctx.texts()[: ctx.settings.timing_texts])
    ratio, spread = docs.ratio("GIRCSE K=5", "Causal-EOS K=0")
    beside = (f"On the board's short STS sentences: {sents.shown('GIRCSE K=5', 'Causal-EOS K=0')} ({sents.source()}). "
              "Appendix F's caveat applies there: K cached steps and a softmax over the whole vocabulary (49K words "
              "on SmolLM2, 262K on Gemma 3) are large beside a 20-token input, small beside a 1,000-token one.",)
    return Outcome(verdicts.ratio(ratio, claimed=1.0, spread=spread), docs.source(),
                   {"GIRCSE K=5 / Causal-EOS K=0, ~1,000-token documents (paper 1.01x FLOPs)":
                        docs.shown("GIRCSE K=5", "Causal-EOS K=0"),
                    "the same on STS sentences": sents.shown("GIRCSE K=5", "Causal-EOS K=0"),
                    "GIRCSE K=5 / plain forward, documents": docs.shown("GIRCSE K=5")}, beside)


K5, K20 = (GIRCSE, 5), (GIRCSE, 20)
LADDER = (((FINAL, 5), (BASELINE, 0)), ((STEPWISE, 5), (FINAL, 5), TIE), (K5, (STEPWISE, 5), TIE))
BIDIR = ((K20, (BIDIR_AVG, 0)),)
SCALE = ((GIRCSE, 20), (BASELINE, 0), (SMALL[GIRCSE], 20), (SMALL[BASELINE], 0))  # all pairs, then the quarter


def _scale_work(ctx):
    methods = [_method(ctx, *side) for side in SCALE]  # first: a missing run is said before any work is counted
    return [ctx.sts_unit(m) for m in methods]


def _scale(ctx) -> Outcome:
    """Fig. 3: (GIRCSE minus Causal-EOS) on a quarter of the pairs minus the same on all of them, every term on the
    same held-out pairs resampled together (`Context.combination`)."""
    big_g, big_e, small_g, small_e = (_method(ctx, *side) for side in SCALE)
    d = ctx.combination([(1.0, small_g, ctx.pairs), (-1.0, small_e, ctx.pairs), (-1.0, big_g, ctx.pairs),
                         (1.0, big_e, ctx.pairs)])
    verdict = verdicts.paired(d.difference, d.ci, len(ctx.pairs), unit="pairs")
    values = {_name(*side): round(ctx.spearman(m), 4) for side, m in zip(SCALE, (big_g, big_e, small_g, small_e))}
    small, large = ctx.spearman(small_g) - ctx.spearman(small_e), ctx.spearman(big_g) - ctx.spearman(big_e)
    gaps = (f"GIRCSE minus Causal-EOS: {small:+.4f} on {SMALL_PAIRS} pairs, {large:+.4f} on all of them.",)
    return Outcome(verdict, HERE, values, gaps)


STS = f"{STS_HOW} (the gircse record's pairs: those no GIRCSE selection saw), Spearman"
SOFT = Evidence("Soft tokens: the adapters side by side", "soft_tokens")
CLAIMS = [
    Claim("gircse-baseline", "gircse", "GIRCSE beats its fair baseline Causal-EOS (same data, LoRA, steps and loss; "
          "EOS readout, no generation).",
          f"{STS}: the shipped adapter generating K = 20 soft tokens (App. C's inference K) against the Causal-EOS "
          "adapter read at its last state (K = 0); K = 5, the training K, beside.",
          "paired: GIRCSE K=20 minus Causal-EOS K=0 > 0", _judge((K20, (BASELINE, 0)), beside=((K5, (BASELINE, 0)),)),
          _work((K20, (BASELINE, 0)), (K5, (BASELINE, 0))), DEVIATIONS, (K_CURVE,)),
    Claim("gircse-scaling", "gircse", "GIRCSE improves as it generates more tokens, within its training K (1 to 5) and "
          "beyond it (10, 20).",
          f"{STS}: the shipped adapter at K = 1, 5, 10 and 20, paired.",
          "all of: paired K=5 minus K=1, K=10 minus K=5 and K=20 minus K=5 > 0",
          _judge((K5, (GIRCSE, 1)), ((GIRCSE, 10), K5), (K20, K5),
                 labels=("K=5 minus K=1", "K=10 minus K=5", "K=20 minus K=5")),
          _work((K5, (GIRCSE, 1)), ((GIRCSE, 10), K5), (K20, K5)), DEVIATIONS, (K_CURVE, K_LESSON)),
    Claim("gircse-contrastive", "gircse", "A model trained without generation (Causal-EOS) gains nothing from "
          "generating soft tokens.",
          f"{STS}: the Causal-EOS adapter at K = 0 against the same adapter generating K = 5 (a gain would reverse "
          "it); the shipped adapter against the frozen model at K = 5 beside (this project's sanity check).",
          f"paired: Causal-EOS K=0 minus Causal-EOS K=5 not below -{TIE} (no gain larger than {TIE})",
          _judge(((BASELINE, 0), (BASELINE, 5), TIE), beside=((K5, (FROZEN, 5)),)),
          _work(((BASELINE, 0), (BASELINE, 5)), (K5, (FROZEN, 5))), DEVIATIONS, (K_CURVE,)),
    Claim("gircse-baselines", "gircse", "GIRCSE beats strong trained LLM embedders on MTEB and instruction following.",
          "Not run: the paper ranks GIRCSE among 7B trained embedders on the whole MTEB v2 and two "
          "instruction-following sets; PromptEOL, which this board compared before, is not among its baselines.",
          "cannot run here", refuse("7B trained embedders (E5-Mistral, GritLM, NV-Embed, gte-Qwen2, ...), the whole "
                                    "MTEB v2 (41 datasets) and the IntentEmotion and NYTClustering sets"),
          refuse("7B trained embedders, the whole MTEB v2 and the instruction-following sets"), DEVIATIONS,
          (K_CURVE,)),
    Claim("gircse-ablation", "gircse", "Generation with the final-step loss beats Causal-EOS; the stepwise loss and "
          "the regulariser are not worse on STS (their gains are elsewhere).",
          f"{STS} at K = 5: the ablations trained with the shipped recipe and budget (final-step loss only; the "
          "stepwise loss) and the shipped adapter (ICR), each rung against the one below, the first against "
          "Causal-EOS (K = 0).",
          f"all of: paired final minus Causal-EOS > 0; stepwise minus final and ICR minus stepwise not below -{TIE}",
          _judge(*LADDER, labels=("final minus Causal-EOS", "stepwise minus final (not worse)",
                                  "ICR minus stepwise (not worse)")),
          _work(*LADDER), DEVIATIONS, (SOFT,)),
    Claim("gircse-bidir-avg", "gircse", "GIRCSE beats its fair baseline Bidirectional-Avg (mask removed, mean "
          "pooling, same data and recipe).", f"{STS}: the shipped adapter generating K = 20 soft tokens against the "
          "Bidirectional-Avg adapter (the same LoRA, data, steps and loss, trained and read with the causal mask "
          "removed and the mean of the text's states, K = 0); K = 5 beside.",
          "paired: GIRCSE K=20 minus Bidirectional-Avg K=0 > 0", _judge(*BIDIR, beside=((K5, (BIDIR_AVG, 0)),)),
          _work(*BIDIR, (K5, (BIDIR_AVG, 0))), DEVIATIONS, (SOFT,)),
    Claim("gircse-data-scale", "gircse", "GIRCSE's lead over Causal-EOS is larger with less training data.",
          f"{STS}: (GIRCSE K=20 minus Causal-EOS K=0) each trained with the shipped recipe on a seeded {SMALL_PAIRS} "
          "of the 1,406 positive pairs (a quarter, as 50K of 200K; `--train-pairs`) for as many passes over them "
          f"({SMALL_STEPS} steps), minus the same trained on all of them (the shipped adapter and baseline).",
          "paired (the four on the same resampled pairs): the gap on the quarter minus the gap on all > 0", _scale,
          _scale_work, DEVIATIONS, (SOFT,)),
    Claim("gircse-cache-cost", "gircse", "With the KV cache, generating K = 5 soft tokens costs about one forward of "
          "the input.",
          f"{DOCUMENTS} documents of about 1,000 tokens (four Lee news articles each): the shipped adapter at K = 5 "
          "against the Causal-EOS adapter's single forward of the same prompt (K = 0), in the same interleaved rounds; "
          "the board's STS sentences beside.", "ratio: at most 1.0x plus 25% over every round (straddling: not "
          "resolved)", _cost, _cost_work, DEVIATIONS, (Evidence("Report: cost per method", "report"),)),
    Claim("gircse-nanobeir-trec", "gircse", "GIRCSE's gains hold on NanoBEIR and TREC.",
          "Not run: needs the 7B model and those collections.", "cannot run here",
          refuse("the 7B GIRCSE model and the NanoBEIR and TREC collections"),
          refuse("the 7B GIRCSE model and the NanoBEIR and TREC collections"), DEVIATIONS, (K_CURVE,)),
]
