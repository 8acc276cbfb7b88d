"""`python -m analysis id --data PATH [--sample N] [--readout last|mean] [--method NAME] [--bootstrap B]`: the
TwoNN intrinsic-dimension trajectory over hidden states 0..L and the window KV-Embedding's rules select."""

from __future__ import annotations

import time

from analysis.core.errors import UserError
from analysis.data.datasets import ids, texts_of
from cache import default_store
from cache.compute import trajectory
from cli.commands._common import (
    add_method_arguments,
    add_sample_arguments,
    check_weights,
    choose,
    load_model,
    method_from_args,
    ready,
    stderr_progress,
)

HELP = ("Intrinsic dimension (TwoNN) of every hidden state over a corpus, with bootstrap bands, and the layer "
        "window KV-Embedding's selection rules pick (JSON). Hidden state 0 = embeddings; decoder layer l "
        "produces hidden state l+1; window layer k = re-route in decoder layer k.")


def add_arguments(parser) -> None:
    add_method_arguments(parser)
    parser.set_defaults(method="kv_embedding")
    for action in parser._actions:
        if action.dest == "method":
            action.required = False
            action.help = ("method whose prompt and intervention are applied (default kv_embedding, with "
                           "layers=none unless --param layers=... is given: the prompt-only states the paper uses)")
    parser.add_argument("--data", required=True, help="a .txt (one text per line), a .csv/.tsv with a `text` column, "
                        "similarity pairs (STS-B format or sentence1, sentence2, score: their distinct sentences), "
                        f"or a built-in set: {', '.join(ids())}")
    add_sample_arguments(parser, "texts", seed=False, default_sample=1000)
    parser.add_argument("--readout", choices=["last", "mean"], default="last",
                        help="final-token states (default) or the mean over the text")
    parser.add_argument("--bootstrap", type=int, default=20, help="bootstrap resamples for the bands (0 = none)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample and the bootstrap (default 0)")


def run(args) -> dict:
    from analysis.inspect import intrinsic_dim as idm  # lazy: keeps torch off the pages' and the command line's start

    if args.method == "kv_embedding" and not any(p.strip().startswith("layers=") for p in args.param):
        args.param = [*args.param, "layers=none"]
    method = method_from_args(args)
    if args.bootstrap < 0:
        raise UserError(f"--bootstrap must be 0 or more, got {args.bootstrap}.")
    chosen, picked = choose(args, texts_of(args.data))
    texts = chosen.texts
    backbone = load_model(args)
    check_weights(method, backbone)
    method = ready(args, backbone, method)
    start = time.perf_counter()
    df, _, hit = trajectory(None if args.no_cache else default_store(), backbone, method, texts, args.readout,
                            args.bootstrap, args.seed, batch_size=args.batch_size, progress=stderr_progress("id"))
    sel = idm.select_window(df["id"].to_numpy(), backbone.facts.n_layers)
    rows = df.to_dict(orient="records")  # NaN (an undefined layer) is written as null by __main__.to_json
    return {
        "model": backbone.identity,
        "method": method.name,
        "params": {k: getattr(method.params, k) for k in method.params.__dataclass_fields__},
        "data": str(args.data),
        "n_texts": len(texts),
        **picked,
        "readout": args.readout,
        "bootstrap": args.bootstrap,
        "convention": "hidden state 0 = embeddings; decoder layer l produces hidden state l+1; "
                      "window layer k = re-route in decoder layer k (it reads hidden state k)",
        "trajectory": rows,
        "selection": sel.as_dict(),
        "seconds": round(time.perf_counter() - start, 3),
        "cached": hit,
    }
