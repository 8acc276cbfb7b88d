"""`python -m analysis explain --a "..." --b "..." --method prompteol`: why two texts are similar under one method,
as one JSON line (see analysis/inspect/attribution.py):

    {"method": "prompteol", "score": 0.91, "interaction": 0.42, "gap": {"a": ..., "b": ..., "relative": ...},
     "a": {"tokens": [...], "kinds": [...], "attribution": [...], "held": [...]}, "b": {...},
     "pairs": [[...], ...], "pairs_kind": "plane", "notes": [...], "seconds": 12.3, "cached": false}

Every token of A and of B gets a share of the interaction I = s(A,B) - s(A,B~) - s(A~,B) + s(A~,B~) (the cosine
once what each text shares with the baseline is taken out); `pairs` splits it over token pairs. Tokens the method
adds (its prompt, placeholders, contextual or soft tokens) have their own `kinds`. `--curves` adds the deletion and
insertion curves against random and attention order, `--lens` what each embedding decodes to through the LM head,
per layer. Results go through the cache, so a repeat is instant; the limits of `docs/BUDGETS.md` are checked before
any work (`--no-budgets` lifts them).
"""

from __future__ import annotations

from analysis.core.intake import check_sizes
from analysis.inspect import attribution as A
from analysis.inspect.faithfulness import FRACTIONS, ORDERS, RANDOMS
from analysis.methods import get_method, parse_params
from cache import compute as C
from cache import default_store
from cli.commands._common import add_model_arguments, load_model, ready

HELP = ("Why are two texts similar? Token and token-pair attribution of their cosine under one method (integrated "
        "Jacobians, the completeness gap reported), optionally deletion/insertion curves and the logit lens.")


def add_arguments(parser) -> None:
    parser.add_argument("--a", required=True, metavar="TEXT", help="the first text")
    parser.add_argument("--b", required=True, metavar="TEXT", help="the second text")
    parser.add_argument("--method", default="prompteol", help="embedding method (default prompteol; `methods` lists "
                                                               "them all)")
    parser.add_argument("--param", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                        help="method parameter, e.g. --param layer=20 (repeatable)")
    add_model_arguments(parser)
    parser.add_argument("--steps", type=int, default=A.STEPS,
                        help=f"at most this many path nodes per text (default {A.STEPS}; the adaptive rule stops "
                             "earlier once the parts add up); more nodes, a smaller completeness gap")
    parser.add_argument("--baseline", default="mean", choices=A.BASELINES,
                        help="what every input vector starts from: the average token vector (default) or the padding "
                             "token's; the first position keeps its own (the attention sink)")
    parser.add_argument("--directions", type=int, default=A.DIRECTIONS,
                        help="1 = token attributions only (fastest); 2 = and the pair matrix in the plane of the two "
                             "embedding changes (default, exact); K > 2 = the full pair matrix estimated in K "
                             "directions (with standard errors); 0 = the full matrix exactly (the embedding's width "
                             "in backward passes per node: --no-budgets)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random directions (K > 2)")
    parser.add_argument("--through-generation", action="store_true",
                        help="soft tokens: differentiate through the generation (the default holds the generated "
                             "inputs as inputs of their own, so they are attributed)")
    parser.add_argument("--curves", action="store_true",
                        help=f"add deletion and insertion curves of the words in attribution order, against "
                             f"{RANDOMS} random orders and attention order (fractions {list(FRACTIONS)})")
    parser.add_argument("--lens", action="store_true", help="add what each embedding decodes to through the LM head, "
                                                            "per layer (decoder methods)")
    parser.add_argument("--no-cache", action="store_true", help="compute; neither read nor write the cache")


def run(args) -> dict:
    method = get_method(args.method, **parse_params(args.method, args.param))  # typos fail before the model loads
    A.check_settings(args.steps, args.directions)  # before the model loads, too
    check_sizes([args.a, args.b], "--a and --b")
    backbone = load_model(args)
    method = ready(args, backbone, method)
    store = None if args.no_cache else default_store()
    settings = dict(steps=args.steps, baseline_kind=args.baseline, directions=args.directions, seed=args.seed,
                    through_generation=args.through_generation)
    ex, meta, hit = C.explanation(store, backbone, method, args.a, args.b, **settings)
    out = {"method": method.name, "params": method.params, "model": backbone.identity, **explanation_json(ex),
           "seconds": round(float(meta.get("seconds", 0.0)), 3), "cached": hit}
    if args.curves:
        curves, _, _ = C.explanation_curves(store, backbone, method, args.a, args.b, **settings)
        out["curves"] = curves_json(curves)
    if args.lens:
        out["lens"] = {side: lens_json(C.logit_lens(store, backbone, method, text)[0])
                       for side, text in (("a", args.a), ("b", args.b))}
    return out


def explanation_json(ex) -> dict:
    side = lambda s: {"text": s.text, "tokens": s.tokens, "kinds": s.kinds, "copy": s.copy.tolist(),  # noqa: E731
                      "held": s.held.tolist(), "attribution": s.attribution.tolist()}
    return {"layer": ex.layer, "baseline": ex.baseline, "steps": ex.steps, "nodes": list(ex.nodes),
            "score": ex.score, "score_a_vs_baseline_b": ex.score_a, "score_baseline_a_vs_b": ex.score_b,
            "score_baselines": ex.score_baselines, "interaction": ex.interaction, "gap": ex.gap,
            "a": side(ex.a), "b": side(ex.b), "pairs_kind": ex.pairs_kind or None,
            "pairs": None if ex.pairs is None else ex.pairs.tolist(),
            "pairs_se": None if ex.pairs_se is None else ex.pairs_se.tolist(), "notes": ex.notes}


def curves_json(c) -> dict:
    return {"fractions": c.fractions.tolist(), "words": c.words,
            "deletion": {o: c.deletion[o].tolist() for o in ORDERS},
            "insertion": {o: c.insertion[o].tolist() for o in ORDERS}, "areas": c.areas, "gains": c.gains}


def lens_json(lens) -> dict:
    return {"applies": lens.applies, "reason": lens.reason, "layers": lens.layers, "tokens": lens.tokens,
            "probs": None if lens.probs is None else lens.probs.tolist()}
