"""`python -m analysis explain --a "..." --b "..." --method prompteol`: why two texts are similar under one method,
as one JSON line (see analysis/inspect/attribution.py):

    {"method": "prompteol", "score": 0.91, "interaction": 0.42, "gap": {"a": ..., "b": ..., "relative": ...},
     "a": {"tokens": [...], "kinds": [...], "attribution": [...], "held": [...]}, "b": {...},
     "pairs": [[...], ...], "pairs_kind": "plane", "notes": [...], "seconds": 12.3, "cached": false}

Every token of A and of B gets a share of the interaction I = s(A,B) - s(A,B~) - s(A~,B) + s(A~,B~) (the cosine
once what each text shares with the baseline is taken out); `pairs` splits it over token pairs. Tokens the method
adds (its prompt, placeholders, contextual or soft tokens) have their own `kinds`. `--curves` adds the deletion and
insertion curves against random and attention order, `--lens` what each embedding decodes to through the LM head,
per layer. Results go through the cache's `Compute` door (`analysis.inspect.explain`), so a repeat is instant and the
Explain view reads what this computed; the settings' flags come from `analysis.inspect.explain_settings.Settings`,
checked with the limits of `docs/BUDGETS.md` before the model loads (`--no-budgets` lifts them).
"""

from __future__ import annotations

from analysis.core.intake import check_sizes
from analysis.core.options import add_options, flag, from_args
from analysis.inspect.explain_settings import FRACTIONS, RANDOMS, Settings, check
from cache import default_store
from cli.commands._common import add_model_arguments, check_weights, load_model, ready

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
    add_options(parser, Settings)  # --steps, --baseline-kind, --directions, --seed, --through-generation
    parser.add_argument("--curves", action="store_true",
                        help=f"add deletion and insertion curves of the words in attribution order, against "
                             f"{RANDOMS} random orders and attention order (fractions {list(FRACTIONS)})")
    parser.add_argument("--lens", action="store_true", help="add what each embedding decodes to through the LM head, "
                                                            "per layer (decoder methods)")
    parser.add_argument("--no-cache", action="store_true", help="compute; neither read nor write the cache")


def run(args) -> dict:
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.compute.direct import Direct
    from analysis.inspect import explain as X
    from analysis.methods import get_method, parse_params
    from cache.cached import Cached

    method = get_method(args.method, **parse_params(args.method, args.param))  # typos fail before the model loads
    settings = check(from_args(Settings, args), flag)  # before the model loads, too
    check_sizes([args.a, args.b], "--a and --b")
    backbone = load_model(args)
    check_weights(method, backbone)
    method = ready(args, backbone, method)
    compute = Direct() if args.no_cache else Cached(default_store())
    ex, hit = X.explanation(compute, backbone, method, args.a, args.b, settings)
    out = {"method": method.name, "params": method.params, "model": backbone.identity, **ex.to_json(),
           "pairs_kind": ex.pairs_kind or None, "seconds": round(ex.seconds, 3), "cached": hit}
    if args.curves:
        out["curves"] = X.curves(compute, backbone, method, args.a, args.b, settings)[0].to_json()
    if args.lens:
        out["lens"] = {side: X.logit_lens(compute, backbone, method, text)[0].to_json()
                       for side, text in (("a", args.a), ("b", args.b))}
    return out
