"""Options and steps shared by the commands: --model/--device/--dtype on every command (`add_model_arguments`),
--method/--param/--batch-size/--no-cache for those that embed texts with a method (`embed`, `sts`, ...),
--sample/--limit/--seed for those that read pairs or texts (`add_sample_arguments`, `choose`, which also holds
the choice to the per-request budgets), the check of an output path before any work (`check_writable`), building
the method, loading the model, checking that the trained weights it asks for exist for the model (`check_weights`),
and encoding through the compute cache with warnings turned into one stderr line each."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from analysis.core import budgets, intake, precision
from analysis.core.errors import UserError
from analysis.core.precision import CHOICES
from analysis.data.samples import select
from analysis.models import backbone as backbone_module  # by module: tests replace load_backbone
from analysis.models.backbone import DEVICES
from analysis.weights import stand_in as stand_ins
from cache import cached_encode, default_store, resolve_method


def add_sample_arguments(parser, unit: str = "pairs", *, seed: bool = True, default_sample: int | None = None) -> None:
    """--sample N [--seed S] (a seeded sample stratified by genre: for numbers) and --limit N (the first N: for a
    quick look). `seed=False` when the command already has a --seed (it then seeds the sample too);
    `default_sample`: the sample used when neither --sample nor --limit is given (None: everything)."""
    default = f" (default {default_sample})" if default_sample else " (default: all)"
    parser.add_argument("--sample", type=int, default=None, metavar="N",
                        help=f"a seeded sample of N {unit}, stratified by genre where the data has one (STS-B's "
                             f"genre/source, SICK's corpus, a SemEval year's sub-set; labelled texts by label), "
                             f"else random: use this for numbers{default}")
    parser.add_argument("--limit", type=int, default=None, metavar="N",
                        help=f"only the first N {unit}, for a quick look: NOT representative of a file sorted by "
                             "genre (STS-B's first 500 dev pairs are all image and video captions)")
    if seed:
        parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    parser.set_defaults(default_sample=default_sample)


def picks(args) -> dict:
    """--sample/--limit/--seed as keywords of `analysis.data.samples.select` (the command's default sample when
    neither --sample nor --limit is given)."""
    sample = args.sample if args.sample is not None or args.limit is not None else args.default_sample
    return {"sample": sample, "limit": args.limit, "seed": args.seed}


def reported(report: dict) -> dict:
    """{"sample": {how, n, of, seed}, "genres": counts of what is scored} for a command's JSON, from a `select`
    report; a --limit cut that leaves one genre of a multi-genre set prints its one-line warning on stderr."""
    if report["warning"]:
        print(f"warning: {report['warning']}", file=sys.stderr)
    return {"sample": {k: report[k] for k in ("how", "n", "of", "seed")}, "genres": report["genres"]}


def choose(args, data, check=None):
    """(chosen, fields): the pairs or texts --sample/--limit/--seed pick (`analysis.data.samples.select`) and
    what to report about them (`reported`). `check(chosen)` and the per-request budgets (`check_request`) run
    before any warning is printed, so a choice that cannot be used gives its one error line and nothing else."""
    chosen, report = select(data, **picks(args))
    if check is not None:
        check(chosen)
    check_request(chosen)
    return chosen, reported(report)


def check_request(chosen) -> None:
    """What a command will embed, against the per-request budgets before any model loads (a file was already read
    only up to the byte budget, `analysis.core.intake`): pairs by their number and their sentences' characters,
    texts by their number and characters. The sentence says how to choose fewer."""
    name = f"{chosen.name} (choose fewer with --sample N or --limit N)"
    if hasattr(chosen, "unique_texts"):  # similarity pairs
        budgets.check("pairs", len(chosen), f"the number of pairs in {name}")
        intake.check_chars(chosen.unique_texts(), chosen.name)
    else:
        intake.check_sizes(chosen.texts, name)


def check_writable(path: Path, flag: str) -> Path:
    """`path` can be written, checked before any work: its folder exists and takes a new file there (one is created
    and removed: the one test that cannot be fooled, since a folder under /proc passes an access check and then
    refuses files), and it is not itself a folder. Returns the path."""
    if path.is_dir():
        raise UserError(f"{flag} {str(path)!r:.80} is a folder; give a file name.")
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{flag}: {str(folder)!r:.80} is a file, not a folder.")
    if not folder.is_dir():
        raise UserError(f"{flag}: the folder {str(folder)!r:.80} does not exist.")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name[:40]}.", suffix=".write-check", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise UserError(f"{flag}: {str(path)!r:.80} cannot be written ({err.strerror or err}).") from None
    return path


def check_html_out(value: str, budget_minutes: float) -> Path:
    """An --out that names a writable .html file with its .json beside it, and a positive --budget-minutes: the
    checks the report and the claims board make before any work. Returns the path."""
    out = Path(value)
    if out.suffix.lower() != ".html":
        raise UserError(f"--out must name an .html file (its .json goes beside it), not {value!r:.60}.")
    check_writable(out, "--out")
    check_writable(out.with_suffix(".json"), "--out's .json")
    if not (math.isfinite(budget_minutes) and budget_minutes > 0):
        raise UserError(f"--budget-minutes must be a positive number of minutes, not {budget_minutes}.")
    return out


def add_boot_argument(parser) -> None:
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates for the intervals (0 = none)")


def check_boot(args) -> None:
    """--n-boot within 0 and the bootstrap budget, before any work."""
    if args.n_boot < 0:
        raise UserError(f"--n-boot must be 0 or more, got {args.n_boot}.")
    budgets.check("bootstrap", args.n_boot, "the number of bootstrap replicates")


def add_method_arguments(parser) -> None:
    parser.add_argument("--method", required=True, help="embedding method name (see `list_methods()`), e.g. prompteol")
    parser.add_argument("--param", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                        help="method parameter, e.g. --param layer=20 (repeatable)")
    add_model_arguments(parser)
    add_run_arguments(parser)


def add_run_arguments(parser) -> None:
    """--batch-size and --no-cache, for every command that embeds texts."""
    parser.add_argument("--batch-size", type=int, default=16, help="texts per forward pass (default 16)")
    parser.add_argument("--no-cache", action="store_true", help="always compute; neither read nor write the cache")


METHODS_PARAM_HELP = ("method parameter: LABEL.KEY=VALUE for one chosen method (LABEL: its label, by default its "
                      "name), e.g. --param prompteol.layer=20; KEY=VALUE for every chosen method that has KEY "
                      "(repeatable)")
LABEL = re.compile(r"[A-Za-z0-9_-]+")


def configure_methods(names: str, params: list[str]) -> dict:
    """{label: method} from --methods 'a,b,c' ('all': every method) and --param values (`METHODS_PARAM_HELP`).

    An entry LABEL=NAME adds a labelled copy, so one method can be compared with itself under other parameters:
    `--methods last,deep=last --param deep.layer=20`. Unknown names, labels and keys are one UserError each."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods import get_method, method_class, method_names, parse_params

    entries = method_names(names)
    if not entries:
        raise UserError("--methods names no method.")
    chosen: dict[str, str] = {}  # label -> method name
    for entry in entries:
        label, eq, name = entry.partition("=")
        label, name = label.strip(), (name if eq else label).strip()
        if not LABEL.fullmatch(label):
            raise UserError(f"--methods: {label!r:.40} is not a label (letters, digits, _ and - only).")
        method_class(name)  # unknown name -> UserError listing the available ones
        if label in chosen:
            raise UserError(f"--methods names {label!r} twice: give the copy its own label, e.g. {label}2={name}.")
        chosen[label] = name
    per_method: dict[str, list[str]] = {label: [] for label in chosen}
    for p in params:
        key = p.partition("=")[0]
        target, dot, _ = key.partition(".")
        if dot:
            if target not in per_method:
                raise UserError(f"--param {p}: {target!r} is not among the chosen methods {list(chosen)}.")
            per_method[target].append(p[len(target) + 1:])
            continue
        takers = [label for label, name in chosen.items()
                  if key.strip() in {f.name for f in dataclasses.fields(method_class(name).Params)}]
        if not takers:
            raise UserError(f"--param {p}: no chosen method has a parameter {key.strip()!r}.")
        for label in takers:
            per_method[label].append(p)
    return {label: get_method(name, **parse_params(name, per_method[label])) for label, name in chosen.items()}


MODEL_HELP = ("a built-in model (default = smollm2-135m, gemma3-270m), a Hugging Face id in the local cache, a "
              "model folder, or a .gguf file (converted once)")


def add_model_arguments(parser, *, many: bool = False, dtype: str = "auto") -> None:
    """--model (or --models for commands that compare several), --device and --dtype (default auto; commands that
    publish a board or a report default to float32, so what they publish compares across machines)."""
    if many:
        parser.add_argument("--models", default="default", help="comma-separated models, each " + MODEL_HELP)
    else:
        parser.add_argument("--model", default="default", help=MODEL_HELP)
    parser.add_argument("--device", default="cpu", choices=DEVICES,
                        help="where the model runs (default cpu); auto = CUDA, else MPS, else CPU, and a model too "
                             "large for one GPU is split over the GPUs and the CPU by accelerate (device_map=auto)")
    parser.add_argument("--dtype", default=dtype, choices=CHOICES,
                        help=f"weights and activations (default {dtype}); auto: each method in bfloat16 where this "
                             "machine has bfloat16 units and the model's dtype record measured its scores unmoved "
                             "(`measure dtype`), float32 otherwise; the output's `precision` says which ran and why")


def method_from_args(args):
    """The configured method; raises UserError for an unknown name or a bad parameter (before any model loads)."""
    # lazy: keeps torch off the pages' and the command line's start
    from analysis.methods import get_method, parse_params

    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}.")
    return get_method(args.method, **parse_params(args.method, args.param))


def load_model(name_or_args, name: str | None = None):
    """The model named by args.model (or `name`), on args.device in args.dtype. A plain name: float32 on the CPU."""
    # lazy: keeps torch, transformers off the pages' and the command line's start
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # stdout carries one JSON line; keep stderr for messages
    if isinstance(name_or_args, str):
        backbone = backbone_module.load_backbone(name_or_args)
    else:
        args = name_or_args
        backbone = backbone_module.load_backbone(name or args.model, device=getattr(args, "device", "cpu"),
                                                 dtype=getattr(args, "dtype", "float32"))
    LOADED.append(backbone)
    return backbone


LOADED: list = []  # the models this command loaded (`cli.main` empties it): its output says what each method ran in


def precision_note() -> dict:
    """{method or view: "<dtype>: <why>"} of what this command ran (`precision.ran`), one line each; keyed by model
    first when it loaded several. Empty when it loaded none."""
    notes = {b.facts.name: {n: c.reason for n, c in precision.ran(b).items()} for b in LOADED}
    notes = {model: said for model, said in notes.items() if said}
    return next(iter(notes.values())) if len(notes) == 1 else notes


STOOD_IN: dict = {}  # {label: warning}: the methods this command ran with something in place of trained weights


def check_weights(method, backbone) -> None:
    """Before any work: refuse `method` when it asks for trained weights `backbone` has none of and nothing may stand
    in for them (one sentence); when something does stand in (the frozen model for GIRCSE's adapter), say so once on
    stderr and keep it for the output's "stand_in" (`cli.main`), so no result passes for what it is not."""
    why = stand_ins.refusal(method, backbone)
    if why:
        raise UserError(why)
    found = stand_ins.stand_in(method, backbone)
    if found is not None:
        if found.warning not in STOOD_IN.values():
            print(f"warning: {found.warning}", file=sys.stderr)
        STOOD_IN[stand_ins.label(method, backbone)] = found.warning


def ready(args, backbone, method):
    """The method ready to run: KV-Embedding's `layers=auto` window from the compute cache (computed into it once
    per model and prompt); with --no-cache computed in memory and not stored."""
    if getattr(args, "no_cache", False):
        return method  # a layers=auto window is then computed in memory by the method itself
    return resolve_method(default_store(), backbone, method)


def params_dict(method) -> dict:
    return dataclasses.asdict(method.params)


def encode(args, backbone, method, texts: list[str]) -> tuple[np.ndarray, dict]:
    """Embed `texts`; returns (emb (n, d) float32, {"seconds", "cached", "warnings", "model", "precision"}): "model"
    is the identity that computed them (under --dtype auto, a bfloat16 twin's where the record allows it).

    `seconds` is the time the embeddings took to compute; on a cache hit, the time recorded when they were
    computed (the lookup itself is in `lookup_seconds`). The batch size is not in the cache key (results do not
    depend on it: tested), so the app and the command line share entries. Warnings (e.g. truncation) go to stderr
    as one `warning: ...` line each, on hits too."""
    check_weights(method, backbone)
    progress = stderr_progress(method.name)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        emb, meta, hit = cached_encode(None if args.no_cache else default_store(), backbone,
                                       ready(args, backbone, method), texts, batch_size=args.batch_size,
                                       progress=progress)
    wall = time.perf_counter() - start
    messages = list(dict.fromkeys([str(w.message) for w in caught] + list(meta.get("warnings") or [])))
    for m in messages:
        print(f"warning: {m}", file=sys.stderr)
    ran_on, choice = precision.for_method(backbone, method.name)  # --dtype auto: the twin it ran on, or the model
    info = {"seconds": float(meta.get("seconds", wall)), "cached": hit, "warnings": messages,
            "model": ran_on.identity, "precision": choice.reason}
    if hit:
        info["lookup_seconds"] = wall
    return np.asarray(emb, dtype=np.float32), info


def stderr_progress(label: str):
    """The command line's `progress(done, total, message)` (`cache.progress`): one line on stderr, rewritten in
    place, ended when the work is done; None when stderr is not a terminal (a log gets no progress lines)."""
    if not sys.stderr.isatty():
        return None

    def progress(done: int, total: int, message: str = "") -> None:
        print(f"\r{label}: {message or f'{done}/{total}'}\033[K", end="\n" if done >= total else "", file=sys.stderr,
              flush=True)

    return progress
