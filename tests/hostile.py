"""Shared by the hostile-input suites (tests/test_hostile_*.py): what a refusal must look like, tiny models saved
as Hugging Face folders (and broken copies of one), and the command-line harness that bounds a refusal's time and
memory. Every suite runs on tiny random models: nothing here needs the real model."""

from __future__ import annotations

import html
import json
import os
import resource
import shutil
import time
import tracemalloc
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from analysis.models.tiny import save_tiny
from cli import main

REPO = Path(__file__).resolve().parent.parent


def one_sentence(message: str) -> None:
    """What a user sees for bad input: one short line, no traceback, no NaN."""
    assert message and "\n" not in message.strip(), message
    assert "Traceback" not in message and len(message) < 400, message[:500]


def rendered(markdown: str) -> str:
    """How the browser shows a Markdown string (CommonMark with raw HTML on, the worst case)."""
    return MarkdownIt("commonmark", {"html": True}).render(markdown)


def plain(markdown: str) -> str:
    """The text a reader sees: rendered, tags dropped, entities decoded."""
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", rendered(markdown))).strip()


def long_text(words: int) -> str:
    return " ".join(["river bank"] * (words // 2))


# ---- a tiny model on disk, and broken copies of it ----------------------------------------------------------------
@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> str:
    # 1,024 positions: long enough for the attention budget (512 tokens) to be the limit that bites, not truncation
    return save_tiny(tmp_path_factory.mktemp("models") / "tiny-llama", max_length=1024)


def _edit_config(**changes):
    def edit(folder: Path):
        config = json.loads((folder / "config.json").read_text())
        config.update(changes)
        (folder / "config.json").write_text(json.dumps(config))
    return edit


def _truncate_weights(folder: Path):
    f = folder / "model.safetensors"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def _pickle_bin(folder: Path):
    import pickle

    class Payload:  # a pickle that would run code if it were loaded with pickle
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    (folder / "model.safetensors").unlink()
    with open(folder / "pytorch_model.bin", "wb") as fh:
        pickle.dump({"weight": Payload()}, fh)


BROKEN = {  # name -> (how to break a copy of the tiny folder, words the sentence must contain)
    "config-is-a-list": (lambda f: (f / "config.json").write_text("[1, 2, 3]"), "holds a list"),
    "config-not-json": (lambda f: (f / "config.json").write_text("{not json"), "not readable JSON"),
    "config-deeply-nested": (lambda f: (f / "config.json").write_text("[" * 100_000 + "]" * 100_000),
                             "not readable JSON"),
    "zero-heads": (_edit_config(num_attention_heads=0), "num_attention_heads"),
    "layers-not-integer": (_edit_config(num_hidden_layers=2.5), "num_hidden_layers"),
    "layers-a-string": (_edit_config(num_hidden_layers="four"), "num_hidden_layers"),
    "heads-not-dividing": (_edit_config(num_attention_heads=3, head_dim=None), "not divisible"),
    "vocabulary-mismatch": (_edit_config(vocab_size=100), "do not match"),
    "truncated-safetensors": (_truncate_weights, "damaged or truncated"),
    "pickle-bin": (_pickle_bin, "pickle"),
    "no-weights": (lambda f: (f / "model.safetensors").unlink(), "Could not load"),
}


@pytest.fixture(scope="session")
def broken_dirs(tiny_dir, tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("broken")
    out = {}
    for name, (breaker, _) in BROKEN.items():
        folder = root / name
        shutil.copytree(tiny_dir, folder)
        breaker(folder)
        if name == "heads-not-dividing":  # head_dim=None was written as null: drop the key instead
            config = json.loads((folder / "config.json").read_text())
            config.pop("head_dim", None)
            (folder / "config.json").write_text(json.dumps(config))
        out[name] = str(folder)
    return out


@pytest.fixture(scope="session")
def tiny(tiny_dir):
    from analysis.models.backbone import load_backbone

    return load_backbone(tiny_dir)


# ---- the command line: one error line (issue 10) -----------------------------------------------------------------
def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(code: int, out: str, err: str) -> str:
    assert code == 2, (code, out, err)
    assert out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    one_sentence(err)
    return err


@pytest.fixture(scope="module")
def texts_file(tmp_path_factory) -> str:
    f = tmp_path_factory.mktemp("data") / "texts.txt"
    f.write_text("A cat sat on the mat.\nA kitten rested on the rug.\nStocks fell sharply.\n")
    return str(f)


# ---- the command line, within bounds of time and memory (issue 23) -----------------------------------------------
HEAP_MB = 100  # Python heap peak of one refused command (imports excluded: they are warmed up first)
RSS_MB = 500  # growth of the process's resident peak: a refused run allocates no tensors of any size


@pytest.fixture(scope="module")
def warm_imports():
    """Import what the commands import, so the bounds measure the refusal and not the first import (a suite that
    uses `refused` asks for it with `pytestmark = pytest.mark.usefixtures("warm_imports")`)."""
    import analysis.compression.system  # noqa: F401
    import analysis.sweep.windows  # noqa: F401
    import analysis.weights.artefacts  # noqa: F401
    import cli.commands._common  # noqa: F401
    from analysis.methods import list_methods

    list_methods()
    try:
        import ray  # noqa: F401 -- the sweep's --executor ray imports it
    except ImportError:
        pass


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(root))
    return root


def files_under(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()} \
        if folder.exists() else {}


def refused(capfd, cache_dir: Path, *argv: str, seconds: float = 30, keep: tuple[Path, ...] = ()) -> str:
    """Run the command; assert the refusal's shape and bounds; return the sentence (without `error: `)."""
    before = {str(k): files_under(k) for k in keep}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    start = time.perf_counter()
    try:
        code = main(list(argv))
        took = time.perf_counter() - start
        heap = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024  # ru_maxrss is in KiB on Linux
    out, err = capfd.readouterr()
    assert code == 2, (code, out, err)
    assert out == "", out
    assert err.startswith("error: ") and err.count("\n") == 1, err  # no warning or log line before it
    message = err[len("error: "):].strip()
    assert "Traceback" not in message and len(message) < 400, message
    assert "[, " not in message and ", ]" not in message, message  # an interval printed without one of its ends
    assert took < seconds, f"{took:.1f} s: {message}"
    assert heap < HEAP_MB * 2**20, f"{heap / 2**20:.0f} MB of heap: {message}"
    assert grown_mb < RSS_MB, f"resident peak grew {grown_mb:.0f} MB: {message}"
    assert not files_under(cache_dir), f"wrote into the cache: {list(files_under(cache_dir))[:3]}"
    for folder in keep:
        assert files_under(folder) == before[str(folder)], f"{folder} changed"
    return message


# ---- a tiny model with 128 positions, for the commands' checks against the model ------------------------------------
@pytest.fixture(scope="module")
def short_tiny_dir(tmp_path_factory) -> str:
    """128 positions: a context of 200 pools does not fit, so the position checks bite."""
    return save_tiny(tmp_path_factory.mktemp("models") / "tiny-llama", max_length=128)


@pytest.fixture(scope="module")
def short_tiny(short_tiny_dir):
    from analysis.models.backbone import load_backbone

    return load_backbone(short_tiny_dir)


# ---- compress-qa items (issue 23) ------------------------------------------------------------------------------
def _jsonl(folder: Path, name: str, lines: list) -> str:
    path = folder / name
    path.write_bytes(b"".join(line if isinstance(line, bytes) else (json.dumps(line) + "\n").encode()
                              for line in lines))
    return str(path)


ITEM = {"context": ["Maria lives in Lyon."], "question": "Where does Maria live?", "answer": "Lyon"}
