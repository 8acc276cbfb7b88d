"""`python -m analysis soft-tokens --text "..." --k 10`: the tokens a model mixes at each soft-token step."""

from __future__ import annotations

from analysis.core.errors import UserError
from cli.commands._common import add_model_arguments, check_weights, load_model

NAME = "soft-tokens"
HELP = "Generate K soft tokens (GIRCSE-style) after a text; print each step's top tokens, entropy and drift as JSON."


def add_arguments(parser) -> None:
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods.soft_tokens import DEFAULT_INSTRUCTION

    parser.add_argument("--text", required=True, help="the text to continue")
    parser.add_argument("--k", type=int, default=5, help="soft tokens to generate (default 5)")
    parser.add_argument("--temperature", type=float, default=1.0, help="τ in softmax(logits/τ) (default 1.0)")
    parser.add_argument("--instruction", default=DEFAULT_INSTRUCTION,
                        help=f"task instruction before the text (default {DEFAULT_INSTRUCTION!r}; '' = none)")
    parser.add_argument("--top", type=int, default=5, help="tokens shown per step (default 5)")
    parser.add_argument("--top-k", type=int, default=0, help="mix only the k most likely tokens (default 0 = all)")
    parser.add_argument("--mode", choices=["soft", "hard"], default="soft", help="soft mix or argmax token")
    add_model_arguments(parser)
    parser.add_argument("--adapter", default="shipped",
                        help="shipped (default: the adapter trained here for the model; on a model without one the "
                             "frozen model, and the output's stand_in says so), none (frozen), or a PEFT adapter "
                             "folder; same as --param adapter=...")
    parser.add_argument("--param", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                        help="any soft_tokens parameter, e.g. --param adapter=none pooling=last_generated")


def run(args) -> dict:
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.inspect.generation import generate_soft_tokens
    from analysis.methods import (
        parse_params,  # lazy: keeps torch off the pages' and the command line's start
    )
    from analysis.methods.soft_tokens import (
        SoftTokens,  # lazy: keeps torch off the pages' and the command line's start
    )

    settings = dict(instruction=args.instruction, k=args.k, temperature=args.temperature, top_k=args.top_k,
                    mode=args.mode, adapter=args.adapter)
    settings.update(parse_params("soft_tokens", args.param))
    # The parameters are checked (finite temperature, K, top-k, instruction) before the model loads.
    method = SoftTokens(**settings)
    if settings["k"] < 1:  # K = 0 is a valid embedding (the baseline), but there is nothing to show generated
        raise UserError("Generate at least one soft token (k >= 1).")
    backbone = load_model(args)
    check_weights(method, backbone)  # shipped on a model without an adapter: the frozen model, and the output says so
    r = generate_soft_tokens(backbone, args.text, topn=args.top, **settings)
    args.k, args.adapter, args.instruction = settings["k"], settings["adapter"], settings["instruction"]
    args.temperature, args.top_k, args.mode = settings["temperature"], settings["top_k"], settings["mode"]
    steps = [{"step": s + 1, "entropy": round(float(r["entropy"][s]), 4),
              "top": [{"token": t, "prob": round(float(p), 5)} for t, p in zip(r["top_tokens"][s], r["top_probs"][s])]}
             for s in range(args.k)]
    return {"model": backbone.facts.name, "adapter": r["adapter"], "instruction": args.instruction,
            "prompt": r["template"].replace("{text}", args.text), "k": args.k, "temperature": args.temperature,
            "top_k": args.top_k, "mode": args.mode, "max_entropy": round(r["max_entropy"], 4), "steps": steps,
            "drift": [round(float(x), 5) for x in r["drift"]]}
