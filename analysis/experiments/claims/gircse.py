"""GIRCSE's claims (Tsai et al., 2025): contrastively trained soft-token generation beats its fair baseline and the
training-free prompt, improves as more tokens are generated, needs the contrastive training, and each part of its
objective adds to the last.

Sources checked (November 2026): the abstract (arXiv:2509.24291 / OpenReview, ICLR 2026), the reference code
(github.com/Roytsai27/GIRCSE) and its model card; the paper's tables were not available, so the Causal-EOS baseline,
the no-training control and the objective's ablation ladder are this project's reading, labelled so in `where`.

Each claim is read from the `gircse` record (`python -m analysis measure gircse`) when it was measured on this model
with the adapters shipped now; otherwise it is measured here on the board's held-out pairs through the compute, with
the adapters shipped for this model. A model without them cannot test GIRCSE: the claim says what to train.
"""

from __future__ import annotations

from analysis.experiments.machinery import verdicts
from analysis.experiments.claims import CannotRun, Claim, Evidence, Outcome
from analysis.experiments.claims.context import STS_HOW, configured, recorded_difference, short_name

HERE = "measured here"
DEVIATIONS = ("method:soft_tokens", "system:gircse")
K_CURVE = Evidence("Soft tokens: the recorded K curve", "soft_tokens")
K_LESSON = Evidence("Lesson: do more steps help?", "lessons", {"lesson": "soft-tokens", "step": 4})
GIRCSE, BASELINE, FROZEN, PROMPTEOL = "GIRCSE", "Causal-EOS", "frozen model", "PromptEOL"
FINAL, STEPWISE = "ablation final", "ablation stepwise"  # the ladder's rungs below GIRCSE, as the record names them
FIXED_K = {BASELINE: 0, PROMPTEOL: None, FINAL: 5, STEPWISE: 5}  # the K a configuration is read at, when fixed


def _k(label: str, k: int | None) -> int | None:
    return FIXED_K.get(label, k)


def _name(label: str, k: int | None) -> str:
    """A configuration as the gircse record's rows name it ("GIRCSE K=5", "Causal-EOS K=0", "PromptEOL")."""
    k = _k(label, k)
    return label if k is None else f"{label} K={k}"


def _adapter(ctx, label: str) -> str | None:
    """The `adapter` parameter a configuration runs with on this model (None: PromptEOL), or CannotRun saying what
    to train: an ablation counts only when today's recipe trained it and it beat its untrained start."""
    from analysis.inspect.generation import older_recipe, untrained_result
    from analysis.weights.adapters import shipped_folder

    name = short_name(ctx.backbone.facts)
    train = f"`python -m analysis train gircse --model {name}"
    if label == PROMPTEOL:
        return None
    if label == FROZEN:
        return "none"
    base = shipped_folder(ctx.backbone.facts)
    if base is None:
        raise CannotRun(f"needs a GIRCSE adapter trained for {name} ({train} --ship`)")
    if label == GIRCSE:
        return "shipped"
    if label == BASELINE:
        if shipped_folder(ctx.backbone.facts, "causal-eos") is None:
            raise CannotRun(f"needs its Causal-EOS baseline trained for {name} ({train} --objective causal-eos "
                            "--ship`)")
        return "causal-eos"
    rung = label.removeprefix("ablation ")
    folder = base / "ablations" / rung
    trained = (folder / "adapter_config.json").is_file()
    why = ("is not trained" if not trained else "comes from the first trainer (another recipe)" if older_recipe(folder)
           else "never beat its untrained start (best step 0: the frozen model)" if untrained_result(folder) else "")
    if why:
        raise CannotRun(f"needs the ablation ladder trained for {name} with the shipped recipe and budget ({train} "
                        f"--objective {rung} --ship`, with the shipped adapter's other flags): {rung} {why}")
    return str(folder)


def _method(ctx, label: str, k: int | None):
    adapter = _adapter(ctx, label)
    return configured("prompteol") if adapter is None else configured("soft_tokens", adapter=adapter, k=_k(label, k))


def _record(ctx):
    """(record, note) of the gircse record when it measured this model with the adapters shipped now, else None."""
    from analysis.weights.adapters import adapter_spec

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


def _recorded(ctx, a: tuple, b: tuple):
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
    return verdicts.paired(d, ci, rec.sample.n, unit="pairs"), note, values


def difference(ctx, a: tuple, b: tuple) -> tuple[verdicts.Verdict, str, dict]:
    """(verdict, source, values) of Spearman A - B, A and B (configuration, K): the record's paired row when it has
    one, else measured on the board's pairs."""
    found = _recorded(ctx, a, b)
    if found is not None:
        return found
    ma, mb = _method(ctx, *a), _method(ctx, *b)
    return ctx.sts_paired(ma, mb), HERE, {_name(*a): round(ctx.spearman(ma), 4), _name(*b): round(ctx.spearman(mb), 4)}


def _work(*comparisons):
    def work(ctx):
        units = []
        for a, b in comparisons:
            if _recorded(ctx, a, b) is None:
                units += [ctx.sts_unit(_method(ctx, *a)), ctx.sts_unit(_method(ctx, *b))]
        return units
    return work


def _judge(*comparisons, labels=()):
    """One comparison's verdict, or all of several (`verdicts.all_of`, labelled)."""
    def judge(ctx) -> Outcome:
        parts = [difference(ctx, a, b) for a, b in comparisons]
        values = {k: v for _, _, vals in parts for k, v in vals.items()}
        verdict = parts[0][0] if len(parts) == 1 else verdicts.all_of([p[0] for p in parts], list(labels))
        sources = list(dict.fromkeys(p[1] for p in parts))
        return Outcome(verdict, "; ".join(sources), values)
    return judge


K5 = (GIRCSE, 5)
LADDER = (((FINAL, 5), (BASELINE, 0)), ((STEPWISE, 5), (FINAL, 5)), (K5, (STEPWISE, 5)))


STS = f"{STS_HOW} (the gircse record's pairs: those no GIRCSE selection saw), Spearman"
CLAIMS = [
    Claim("gircse-baseline", "gircse", "abstract (beats strong LLM-based baselines); a same-recipe last-state "
          "baseline named Causal-EOS is this project's reading of the paper's main comparison, not checked against "
          "its tables",
          "GIRCSE \"outperforms strong LLM-based embedding baselines\" (abstract); tested here against the same model "
          "trained contrastively on its last state without generation.",
          f"{STS}: GIRCSE's soft tokens (the shipped adapter, K = 5) against Causal-EOS, its fair baseline (the same "
          "LoRA, data, steps and loss, read at its last state, K = 0).",
          "paired: GIRCSE K=5 minus Causal-EOS K=0 > 0", _judge((K5, (BASELINE, 0))), _work((K5, (BASELINE, 0))),
          DEVIATIONS, (K_CURVE,)),
    Claim("gircse-scaling", "gircse", "abstract; the model card's example range is 5 to 20 generated tokens",
          "\"GIRCSE exhibits an emergent test-time scaling property: generating more tokens at inference steadily "
          "improves embedding quality\" (abstract).",
          f"{STS}: the shipped adapter at K = 10 and K = 20 against K = 5 (the K it "
          "was trained with).", "all of: paired K=10 minus K=5 > 0 and K=20 minus K=5 > 0",
          _judge(((GIRCSE, 10), K5), ((GIRCSE, 20), K5), labels=("K=10 minus K=5", "K=20 minus K=5")),
          _work(((GIRCSE, 10), K5), ((GIRCSE, 20), K5)), DEVIATIONS, (K_CURVE, K_LESSON)),
    Claim("gircse-contrastive", "gircse", "not found in the text checked (the abstract says the soft tokens are "
          "optimized under a contrastive objective): this project's reading, not verified",
          "The soft tokens are \"optimized under contrastive objective\" (abstract); that generation in the untrained "
          "model makes a poor embedding is this project's reading, not a verified ablation of the paper.",
          f"{STS}: the shipped adapter against the frozen model, both generating K = 5 soft tokens.",
          "paired: GIRCSE K=5 minus frozen K=5 > 0", _judge((K5, (FROZEN, 5))), _work((K5, (FROZEN, 5))),
          DEVIATIONS, (K_CURVE,)),
    Claim("gircse-baselines", "gircse", "abstract (MTEB and instruction-following tasks); the MTEB table was not "
          "checked",
          "\"GIRCSE outperforms strong LLM-based embedding baselines on the MTEB benchmark and instruction-following "
          "tasks\" (abstract).",
          f"{STS}: the shipped adapter at K = 5 against PromptEOL on the frozen model (training-free, the same "
          "model).", "paired: GIRCSE K=5 minus PromptEOL > 0", _judge((K5, (PROMPTEOL, None))),
          _work((K5, (PROMPTEOL, None))), DEVIATIONS + ("method:prompteol",), (K_CURVE,)),
    Claim("gircse-ablation", "gircse", "abstract (the ICR objective); the ladder of ablations is this project's "
          "reading of the paper's objective ablation, not checked against its table",
          "The Iterative Contrastive Refinement objective \"encourages each refinement step to yield better "
          "representations\" (abstract); that each part adds in turn (generation with the final-step loss, the "
          "stepwise loss, the regulariser) is this project's reading.",
          f"{STS} at K = 5: the ablations trained with the shipped recipe and budget (final-step loss only; the "
          "stepwise loss) and the shipped adapter (ICR), each rung against the one below, the first against "
          "Causal-EOS.", "all of: paired final minus Causal-EOS, stepwise minus final and ICR minus stepwise > 0",
          _judge(*LADDER, labels=("final minus Causal-EOS", "stepwise minus final", "ICR minus stepwise")),
          _work(*LADDER), DEVIATIONS, (Evidence("Soft tokens: the adapters side by side", "soft_tokens"),)),
]
