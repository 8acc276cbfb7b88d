"""`python -m analysis compress-qa --data personas --pools sentence`: fact extraction from compressed contexts."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from analysis.core import budgets
from analysis.core.errors import UserError
from analysis.core.intake import read_lines
from analysis.data import datasets, personas
from cache import cached_compress_predict, default_store
from cli.commands._common import load_model

NAME = "compress-qa"
DEFAULT_N = 200  # items of the built-in split: the registered held-out set
HELP = ("Answer questions about contexts compressed to one vector per sentence (the trained adapter + LoRA) and "
        "score them. Exact match is case-insensitive and ignores surrounding punctuation and whitespace; "
        "first_token is the share of answers whose first generated token is the gold answer's first token.")


def add_arguments(parser) -> None:
    parser.add_argument("--data", default="personas",
                        help="'personas' (the built-in held-out split: names never seen in training) or a .jsonl file, "
                             'one {"context": ["sentence", ...], "question": ..., "answer": ..., "key": ...} per line '
                             "(key optional; 'id' optional, needed by --ids; 'ids' optional: one name per context "
                             "sentence, the person it is about, shown before that sentence's pool by --ids)")
    parser.add_argument("--pools", choices=["sentence", "paragraph", "none", "text"], default="sentence",
                        help="one pool per sentence (default), one pool for the whole context, no context, or the "
                             "full text as tokens")
    parser.add_argument("--ids", action="store_true",
                        help="literal identifier tokens ' [<id>]' before each pool (the source's fix for names): the "
                             "name of the person each sentence is about where items have 'ids', else the item's 'id'; "
                             "with --people, name questions are left out (their answer would be copied)")
    parser.add_argument("--people", type=int, default=None,
                        help="built-in data only: contexts of N held-out people's fact sentences (N >= 1), the "
                             "question names one of them (the source's Experiment B); default: one person with 0-2 "
                             "distractors")
    parser.add_argument("--layout", choices=["grouped", "interleaved"], default=None,
                        help="with --people: each person's sentences together (grouped, the default) or interleaved")
    parser.add_argument("--limit", type=int, default=0, help="score only the first N items (default: all; at most "
                        "5,000 items per run unless --no-budgets)")
    parser.add_argument("--n", type=int, default=None,
                        help="items of the built-in split (default 200; at most one per held-out person and fact)")
    parser.add_argument("--distractors", type=int, default=None,
                        help="built-in data only: pad every context with distractor sentences up to this many "
                             "sentences, 5 to 1,000 (the scaling curve); default: 0-2 distractors as in training")
    parser.add_argument("--weights", default="", help="artefact folder (default: the shipped one for the model)")
    parser.add_argument("--model", default="default", help="'default', a Hugging Face id or a folder")
    parser.add_argument("--no-cache", action="store_true", help="always compute; neither read nor write the cache")


def read_jsonl(path: str, most: int) -> list[dict]:
    """The first `most` items of a .jsonl file, each checked (strict UTF-8, JSON, fields, sentences per context)
    before the next line is read: a file of a billion lines costs what `most` lines cost."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.compression.system import MAX_SENTENCE_TOKENS, check_item, encoder_token_count
    p = Path(path)
    if not p.is_file():
        raise UserError(f"--data: {path} is not a file (give a .jsonl file or 'personas').")
    items = []
    with contextlib.closing(read_lines(p)) as lines:  # up to the byte budget, one line at a time
        for i, raw in enumerate(lines, 1):
            if len(items) == most:
                break
            try:  # replacement characters would be scored as if they were the text: a wrong result, silently
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise UserError(f"{path} line {i} is not UTF-8 text (byte {raw[err.start]:#04x} at column "
                                f"{err.start + 1}); save the file as UTF-8.") from None
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except (ValueError, RecursionError):
                raise UserError(f"{path} line {i} is not JSON (expected one JSON object per line).") from None
            if not isinstance(item, dict):
                raise UserError(f"{path} line {i} is not a JSON object.")
            check_item(item, f"{path} line {i}: ")
            items.append(item)
    with quiet_tokenizer():  # a sentence past the encoder's 512 positions is refused below, in our own sentence
        for i, item in enumerate(items, 1):  # the encoder's tokenizer, once every line is known to be well formed
            if any(encoder_token_count(s) > MAX_SENTENCE_TOKENS for s in item["context"]):
                raise UserError(f"{path} item {i}: a context sentence is longer than {MAX_SENTENCE_TOKENS} encoder "
                                "tokens; split it into sentences.")
    if not items:
        raise UserError(f"{path} has no items.")
    return items


@contextlib.contextmanager
def quiet_tokenizer():
    """transformers' logger at errors only: its "Token indices sequence length is longer than ..." line would reach
    stderr before our one sentence about the same sentence."""
    # lazy: keeps torch, transformers off the pages' and the command line's start
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


def distinct_questions(people: int, names: bool) -> int:
    """How many different questions the held-out split can ask: one per held-out person (full name) and fact asked
    (`personas.asked_keys`). More items would ask about the same people again, adding no held-out evidence while
    narrowing the interval as if they did."""
    first = personas.PEOPLE_FIRST_NAMES if people else personas.FIRST_NAMES
    heldout = sum(personas.name_split(f, s) == "heldout" for f in first for s in personas.SURNAMES)
    return heldout * len(personas.asked_keys(names and bool(people)))


def builtin(n: int, distractors: int | None, people: int = 0, layout: str = "grouped", names: bool = False) -> list:
    if people:
        try:
            return personas.generate_people("heldout", n, people=people, layout=layout, names=names)
        except ValueError as err:
            raise UserError(f"--people: {err}.") from None
    if distractors is None:  # the registered set (200 items); more are generated the same way
        return datasets.get("personas").load()[:n] if n <= 200 else personas.generate("heldout", n)
    try:
        return personas.generate_scaled("heldout", n, total_sentences=distractors)
    except ValueError as err:
        raise UserError(f"--distractors: {err}.") from None


def check_flags(args) -> int | None:
    """The flags, checked before any item is read or generated; returns how many items the run takes (None: every
    item of a file)."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.compression.system import check_sentences
    if args.limit < 0:
        raise UserError(f"--limit must be 0 (all items) or more, got {args.limit}.")
    if args.n is not None and args.data != "personas":
        raise UserError("--n only applies to --data personas (a file's items are all read; choose some with --limit).")
    n = DEFAULT_N if args.n is None else args.n
    if n < 1:
        raise UserError(f"--n must be at least 1 item, got {n}.")
    if args.distractors is not None:
        if args.data != "personas":
            raise UserError("--distractors only applies to --data personas.")
        if args.distractors < 0:
            raise UserError(f"--distractors counts sentences per context: 5 or more, not {args.distractors}.")
        check_sentences(args.distractors, "--distractors")
    if args.people is not None or args.layout:
        if args.data != "personas":
            raise UserError("--people and --layout only apply to --data personas (a file's items carry their own "
                            "'ids').")
        if args.people is None or args.people < 1:
            raise UserError(f"--people counts people per context: 1 or more, not {args.people or 0}"
                            f"{' (--layout orders the sentences of --people contexts)' if args.layout else ''}.")
        if args.distractors is not None:
            raise UserError("--people contexts hold fact sentences only: leave out --distractors.")
        check_sentences(5 * args.people, "--people")
    wanted = n if args.data == "personas" else None
    if args.limit:
        wanted = args.limit if wanted is None else min(wanted, args.limit)
    if wanted is not None:
        budgets.check("qa_items", wanted, "the number of questions of this run (--n or --limit)")
    if args.data == "personas":
        most = distinct_questions(args.people or 0, args.ids)
        if wanted > most:
            raise UserError(f"--n {wanted:,} is more questions than the held-out split can ask: one per held-out "
                            f"person and fact, {most:,} in all; give --n {most} or fewer.")
    return wanted


def run(args) -> dict:
    wanted = check_flags(args)
    if args.data == "personas":  # the first k items of a seeded split are the same items whatever n is
        items = builtin(wanted, args.distractors, args.people or 0, args.layout or "grouped", names=args.ids)
    else:  # without --limit, read one item past the budget: enough to refuse the file
        items = read_jsonl(args.data, wanted or budgets.limit("qa_items") + 1)
        budgets.check("qa_items", len(items), f"the number of questions in {args.data} (choose some with --limit)")
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.compression.system import CompressionSystem, score

    backbone = load_model(args.model)
    system = CompressionSystem.from_artefact(backbone, args.weights or None)
    system.check_contexts(items, args.pools, ids=args.ids)  # sizes against the model, before it runs
    if args.no_cache:
        preds = system.predict(items, args.pools, ids=args.ids)
    else:
        preds, _ = cached_compress_predict(default_store(), system, items, args.pools, ids=args.ids)
    keys = [(it.get("key") if isinstance(it, dict) else it.key) for it in items]
    res = score(preds, keys if all(keys) else None)
    mode = args.pools + ("+ids" if args.ids and args.pools in ("sentence", "paragraph") else "")
    people = args.people  # None: one person with distractors, or a file's items
    return {**res, "pools": mode, "people": people, "layout": (args.layout or "grouped") if people else None}
