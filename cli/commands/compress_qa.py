"""`python -m analysis compress-qa --data personas --pools sentence`: fact extraction from compressed contexts."""

from __future__ import annotations

NAME = "compress-qa"
HELP = ("Answer questions about contexts compressed to one vector per sentence (the trained adapter + LoRA) and "
        "score them. Exact match is case-insensitive and ignores surrounding punctuation and whitespace; "
        "first_token is the share of answers whose first generated token is the gold answer's first token.")


def add_arguments(parser) -> None:
    parser.add_argument("--data", default="personas",
                        help="'personas' (the built-in held-out split: names never seen in training) or a .jsonl file, "
                             'one {"context": ["sentence", ...], "question": ..., "answer": ..., "key": ...} per line '
                             "(key optional; 'id' optional, needed by --ids)")
    parser.add_argument("--pools", choices=["sentence", "paragraph", "none", "text"], default="sentence",
                        help="one pool per sentence (default), one pool for the whole context, no context, or the "
                             "full text as tokens")
    parser.add_argument("--ids", action="store_true",
                        help="literal identifier tokens ' [<id>]' before each pool (the source's fix for names)")
    parser.add_argument("--limit", type=int, default=0, help="score only the first N items (default: all)")
    parser.add_argument("--n", type=int, default=200, help="items of the built-in split (default 200)")
    parser.add_argument("--distractors", type=int, default=-1,
                        help="built-in data only: pad every context with distractor sentences up to this many "
                             "sentences (the scaling curve); default: 0-2 distractors as in training")
    parser.add_argument("--weights", default="", help="artefact folder (default: the shipped one for the model)")
    parser.add_argument("--model", default="default", help="'default', a Hugging Face id or a folder")
    parser.add_argument("--no-cache", action="store_true", help="always compute; neither read nor write the cache")


def read_jsonl(path: str) -> list[dict]:
    import json
    from pathlib import Path

    from analysis.compression.system import MAX_SENTENCE_TOKENS, check_item, encoder_token_count
    from analysis.core.errors import UserError

    p = Path(path)
    if not p.is_file():
        raise UserError(f"{path} is not a file (give a .jsonl file or 'personas').")
    items = []
    for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            raise UserError(f"{path} line {i} is not JSON (expected one JSON object per line).") from None
        if not isinstance(item, dict):
            raise UserError(f"{path} line {i} is not a JSON object.")
        check_item(item, f"{path} line {i}: ")
        for s in item["context"]:
            if encoder_token_count(s) > MAX_SENTENCE_TOKENS:
                raise UserError(f"{path} line {i}: a context sentence is longer than {MAX_SENTENCE_TOKENS} encoder "
                                "tokens; split it into sentences.")
        items.append(item)
    if not items:
        raise UserError(f"{path} has no items.")
    return items


def builtin(n: int, distractors: int) -> list:
    from analysis.data import datasets
    from analysis.data import personas

    if distractors < 0:  # the registered set (200 items); more are generated the same way
        return datasets.get("personas").load()[:n] if n <= 200 else personas.generate("heldout", n)
    from analysis.core.errors import UserError

    try:
        return personas.generate_scaled("heldout", n, total_sentences=distractors)
    except ValueError as err:
        raise UserError(f"--distractors: {err}.") from None


def run(args) -> dict:
    from analysis.core.errors import UserError

    if args.limit < 0 or args.n < 1:
        raise UserError("--limit must be 0 or more and --n at least 1.")
    if args.data == "personas":
        items = builtin(args.n, args.distractors)
    else:
        if args.distractors >= 0:
            raise UserError("--distractors only applies to --data personas.")
        items = read_jsonl(args.data)
    if args.limit:
        items = items[:args.limit]
    from cli.commands._common import load_model
    from analysis.compression.system import CompressionSystem, score

    backbone = load_model(args.model)
    system = CompressionSystem.from_artefact(backbone, args.weights or None)
    if args.no_cache:
        preds = system.predict(items, args.pools, ids=args.ids)
    else:
        from cache import cached_compress_predict, default_store

        preds, _ = cached_compress_predict(default_store(), system, items, args.pools, ids=args.ids)
    keys = [(it.get("key") if isinstance(it, dict) else it.key) for it in items]
    res = score(preds, keys if all(keys) else None)
    mode = args.pools + ("+ids" if args.ids and args.pools in ("sentence", "paragraph") else "")
    return {**res, "pools": mode}
