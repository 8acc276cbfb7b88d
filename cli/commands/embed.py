"""`python -m analysis embed --method NAME --input texts.txt --output out.npy`: embed a file of texts."""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import numpy as np

from analysis.core.errors import UserError
from analysis.data.datasets import texts_of
from analysis.data.samples import select
from cli.commands._common import (
    add_method_arguments,
    add_sample_arguments,
    check_request,
    check_writable,
    encode,
    load_model,
    method_from_args,
    params_dict,
    picks,
    reported,
)

HELP = "Embed the texts of a file or a built-in set with a method; save an (n, d) float32 .npy."
INPUT_HELP = (".txt (one text per line), .csv or .tsv (a `text` column), similarity pairs (STS-B format or sentence1, "
              "sentence2, score: their distinct sentences), or a built-in set name")


def add_arguments(parser) -> None:
    add_method_arguments(parser)
    parser.add_argument("--input", required=True, help=INPUT_HELP)
    parser.add_argument("--output", required=True, help="where to write the (n, d) float32 array (.npy)")
    add_sample_arguments(parser, "texts")


def run(args) -> dict:
    method = method_from_args(args)  # cheap checks first: a typo should not wait for the model
    output = Path(args.output)
    if output.suffix != ".npy":
        raise UserError(f"--output must be a .npy file, got {str(output)!r:.80}.")
    check_writable(output, "--output")
    chosen, report = select(texts_of(args.input), **picks(args))  # the file read up to the byte budget
    check_request(chosen)  # 100,000 one-line texts are one sentence here, not minutes of work
    texts = chosen.texts
    backbone = load_model(args)
    emb, info = encode(args, backbone, method, texts)
    _save(output, emb)
    return {
        "method": method.name,
        "params": params_dict(method),
        "model": info["model"],  # the weights that computed them: under --dtype auto, maybe the bfloat16 twin's
        "n": int(emb.shape[0]),
        "dim": int(emb.shape[1]),
        "seconds": round(info["seconds"], 3),
        "cached": info["cached"],
        "truncated": _count_truncated(backbone, method, texts) if info["warnings"] else 0,
        "output": str(output),
        **reported(report),  # what was embedded: the sample and its genres (labels)
        # row i of the array is input text rows[i] (0-based, file order), so a sample can be matched to its texts
        **({"rows": report["rows"]} if report["how"] != "all" else {}),
    }


def _count_truncated(backbone, method, texts) -> int:
    """How many texts were cut to the model's limit (re-tokenizes: cheap next to the forward pass).
    Only called when encoding warned, since a cache hit keeps the warning's text but not the count."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # already reported once by `encode`
        return sum(bool(getattr(e, "truncated", False)) for e in method.prepare(backbone, texts))


def _save(path: Path, emb: np.ndarray) -> None:
    """Write atomically, so an interrupted run never leaves a half-written array under the final name."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".npy", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, emb.astype(np.float32), allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
