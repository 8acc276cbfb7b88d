"""A safetensors file read without trusting it: its header checked against the file's size, its tensors' shapes
against what the loaded model needs, before a byte of weights is read.

The format is 8 bytes (little-endian header length n), n bytes of JSON {name: {"dtype", "shape", "data_offsets"}},
then the tensors' bytes. safetensors' own loader raises `SafetensorError` for a damaged file, which is neither
OSError nor ValueError, and a shape mismatch only surfaces later as a RuntimeError inside torch; here both are
one `UserError` naming the file.

    shapes = read_shapes(path)                      # {name: (dtype, shape)}; UserError when damaged
    check_shapes(path, shapes, {"bridge.w2.weight": (576, None)})   # None: any size in that dimension
    tensors = load(path)                            # safetensors.torch.load_file, errors as one sentence
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from safetensors import SafetensorError

from analysis.core.errors import UserError

BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
         "U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1}
MAX_HEADER = 100 * 2**20  # safetensors' own limit on the JSON header (100 MB)


def read_shapes(path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """{tensor name: (dtype, shape)} from the header; the header must describe exactly the bytes the file holds."""
    path = Path(path)
    damaged = f"{path} is damaged or truncated: it is not a readable safetensors file"
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            n = int.from_bytes(fh.read(8), "little") if size >= 8 else 0
            if not 2 <= n <= MAX_HEADER:
                raise UserError(f"{damaged} (no header).")
            if n > size - 8:
                raise UserError(f"{damaged} (it ends inside its header).")
            header = json.loads(fh.read(n))
    except FileNotFoundError:
        raise UserError(f"{path} does not exist.") from None
    except OSError as err:
        raise UserError(f"{path} could not be read ({err.strerror or type(err).__name__}).") from None
    except (ValueError, RecursionError):
        raise UserError(f"{damaged} (its header is not JSON).") from None
    if not isinstance(header, dict):
        raise UserError(f"{damaged} (its header is not a table of tensors).")
    shapes, end = {}, 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (start, stop) = info["dtype"], tuple(info["shape"]), info["data_offsets"]
            ok = all(isinstance(d, int) and d >= 0 for d in (*shape, start, stop)) and \
                stop - start == math.prod(shape) * BYTES[dtype]
        except (TypeError, KeyError, ValueError):
            ok = False
        if not ok:
            raise UserError(f"{damaged} (the entry for {str(name)[:60]!r} is inconsistent).")
        shapes[name] = (dtype, shape)
        end = max(end, stop)
    if 8 + n + end != size:
        raise UserError(f"{damaged} (its header describes {8 + n + end:,} bytes, the file has {size:,}).")
    return shapes


def check_shapes(path, shapes: dict, expected: dict[str, tuple]) -> None:
    """Every expected tensor present with the expected shape (None in a dimension: any size), else one sentence
    saying the weights were made for a model of another size."""
    for name, want in expected.items():
        if name not in shapes:
            raise UserError(f"{path} has no tensor {name!r}: these are not weights of the kind expected here.")
        got = shapes[name][1]
        if len(got) != len(want) or any(w is not None and g != w for g, w in zip(got, want)):
            shown = tuple("any" if w is None else w for w in want)
            raise UserError(f"{path} holds {name} of shape {got}, and the loaded model needs {shown}: the weights "
                            "were made for a model of another size.")


def load(path) -> dict:
    """The tensors of a file whose header `read_shapes` accepted; a failure still is one sentence naming it."""
    from safetensors.torch import load_file  # lazy: keeps torch off the pages' and the command line's start

    try:
        return load_file(str(path))
    except (OSError, ValueError, SafetensorError) as err:
        first = str(err).strip().splitlines()[0][:160] if str(err).strip() else type(err).__name__
        raise UserError(f"{path} could not be read as safetensors ({first}).") from None
