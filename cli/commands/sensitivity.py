"""`python -m analysis sensitivity --text "..."`: per-position Jacobian norms of one text's embedding for the
last-token and the mean readout (see analysis/inspect/sensitivity.py), as one JSON line:

    {"method": "mean", "layer": 30, "tokens": [...], "last": [...], "mean": [...], "last_se": [...], ...}

Positions without a token embedding (TP/HTP placeholders) are null. `--bound` adds the attention-product
quantities (`bound_last`, `bound_mean`) and their rank agreement with the measurement; `--exact` adds the exact
norms (d backward passes per readout: for short texts).
"""

from __future__ import annotations

import math

from cli.commands._common import add_model_arguments, check_weights, load_model, ready

HELP = "Sensitivity of one text's embedding to each input position (Jacobian norms, last vs mean readout)."


def add_arguments(parser) -> None:
    parser.add_argument("--text", required=True, help="the text to analyse")
    add_model_arguments(parser)
    parser.add_argument("--method", default="mean",
                        help="whose forward pass: mean/last (vanilla), htp, token_prepending, kv_embedding, ...")
    parser.add_argument("--param", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                        help="method parameter, e.g. --param exit=5 (repeatable)")
    parser.add_argument("--layer", type=int, default=None,
                        help="hidden state read out (default: the method's own readout layer; -1 = final)")
    parser.add_argument("--probes", type=int, default=16, help="random probes per readout (default 16)")
    parser.add_argument("--probe", default="rademacher", choices=["rademacher", "gaussian"])
    parser.add_argument("--seed", type=int, default=0, help="seed of the probes")
    parser.add_argument("--exact", action="store_true", help="also compute exact norms (slow for long texts)")
    parser.add_argument("--bound", action="store_true", help="add the attention-product bound and its agreement")


def _list(values):
    if values is None:
        return None
    return [None if not math.isfinite(float(x)) else float(x) for x in values]


def run(args) -> dict:
    from analysis.inspect import sensitivity as S  # lazy: keeps torch off the pages' and the command line's start

    # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods import get_method, parse_params

    method = get_method(args.method, **parse_params(args.method, args.param))  # typos fail before the model loads
    backbone = load_model(args)
    check_weights(method, backbone)
    method = ready(args, backbone, method)
    s = S.jacobian_norms(backbone, method, args.text, layer=args.layer, probes=args.probes, probe=args.probe,
                         seed=args.seed, exact=args.exact)
    out = {
        "method": s.method, "params": method.params, "layer": s.layer, "probes": s.probes, "probe": s.probe,
        "tokens": s.tokens, "last": _list(s.last), "mean": _list(s.mean),
        "last_se": _list(s.last_se), "mean_se": _list(s.mean_se),
        "placeholder": [bool(x) for x in s.placeholder], "seconds": round(s.seconds, 3),
        "decay": S.decay(s),
    }
    if args.exact:
        out.update(exact_last=_list(s.exact_last), exact_mean=_list(s.exact_mean))
    if args.bound:
        b = S.attention_bound(backbone, method, args.text, layer=args.layer)
        out.update(bound_last=_list(b.last), bound_mean=_list(b.mean), agreement=S.compare(s, b))
    return out
