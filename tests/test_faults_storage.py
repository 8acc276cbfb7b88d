"""Issue 52, folders that refuse files: a cache folder that cannot be written (read-only, missing under a file, full)
and an output path on a disk that fills halfway each give one warning or one sentence, and the right result. Tiny
random models only; root ignores permission bits, so a cache "nothing can create" is a folder under a file
(ENOTDIR), and a full disk is a write that raises ENOSPC."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from analysis.core.errors import StorageWarning
from analysis.models import backbone

REPO = Path(__file__).resolve().parent.parent


def _unwritable(tmp_path) -> Path:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache folder's parent should be")
    return blocker / "cache"


def test_an_intrinsic_dimension_estimate_leaves_warnings_on(tmp_path):
    """Before: skdim's first import turned every warning off for the rest of the process, so a sweep on a cache that
    cannot be written said nothing about it (nor about anything else). A fresh process: the fault is in what a first
    import does."""
    script = ("import warnings, numpy as np\n"
              "from analysis.inspect import intrinsic_dim\n"
              "print(intrinsic_dim.twonn(np.random.default_rng(0).normal(size=(40, 5))).value is not None)\n"
              "warnings.warn('still heard')\n")
    env = {**os.environ, "MPLCONFIGDIR": str(tmp_path / "mpl")}
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr
    assert "still heard" in proc.stderr


def test_matplotlib_gets_a_folder_it_can_write_when_the_cache_cannot_be_written(tmp_path, temporary, capsys,
                                                                                monkeypatch):
    """Before: MPLCONFIGDIR inside the read-only cache, and two lines from matplotlib about it on the first
    intrinsic-dimension estimate. After: a temporary folder; and a writable cache keeps it inside."""
    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(_unwritable(tmp_path)))
    assert run_cli(capsys, "methods")[0] == 0
    assert Path(os.environ["MPLCONFIGDIR"]).is_relative_to(temporary)
    monkeypatch.delenv("MPLCONFIGDIR")
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    assert run_cli(capsys, "methods")[0] == 0
    assert os.environ["MPLCONFIGDIR"] == str(tmp_path / "cache" / ".matplotlib")
    assert not (tmp_path / "cache").exists()  # nothing made before a command writes


def _fake_conversion(monkeypatch, full_under: Path | None = None) -> list[Path]:
    """Replace the GGUF conversion by one that writes a record the way the real one does (a temporary folder renamed
    into place); it raises ENOSPC for a folder under `full_under` (a disk that fills during the conversion)."""
    made = []

    def convert(gguf: Path, folder: Path) -> None:
        if full_under is not None and full_under in folder.parents:
            raise OSError(errno.ENOSPC, "No space left on device")
        tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=folder.parent))
        (tmp / "embedscope.json").write_text(json.dumps({"source": str(gguf), "gguf_sha256": "0" * 64}))
        os.rename(tmp, folder)
        made.append(folder)

    monkeypatch.setattr(backbone, "_convert_gguf", convert)
    return made


@pytest.fixture
def temporary(tmp_path, monkeypatch) -> Path:
    """The system's temporary folder, inside the test's own folder."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return tmp_path / "tmp"


def test_a_model_converted_for_a_cache_that_cannot_be_written_goes_to_a_temporary_folder(tmp_path, temporary,
                                                                                         monkeypatch):
    """Before: `OSError: [Errno 20] Not a directory` (EROFS on a read-only file system) from mkdir, a traceback.
    After: converted into the per-user temporary folder, with the one warning, and found there the next time."""
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(_unwritable(tmp_path)))
    made = _fake_conversion(monkeypatch)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF not really")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        folder, identity = backbone._gguf_folder(gguf)
        again, _ = backbone._gguf_folder(gguf)
    assert Path(folder).is_relative_to(temporary) and (Path(folder) / "embedscope.json").is_file()
    assert again == folder and len(made) == 1 and identity.startswith("gguf:model.gguf@sha256:")
    told = [str(w.message) for w in caught if issubclass(w.category, StorageWarning)]
    assert len(told) == 1 and "cannot be written" in told[0], told


def test_a_disk_that_fills_during_a_conversion_converts_into_the_temporary_folder(tmp_path, temporary, monkeypatch):
    """Before: "Could not convert ... No space left on device", and no model. After: the model, with the warning."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(cache))
    _fake_conversion(monkeypatch, full_under=cache)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF not really")
    with pytest.warns(StorageWarning, match="No space left on device"):
        folder, _ = backbone._gguf_folder(gguf)
    assert Path(folder).is_relative_to(temporary) and (Path(folder) / "embedscope.json").is_file()
    assert not [p for p in (cache / "models").iterdir() if not p.name.startswith(".")]  # nothing half-made


def test_a_sweep_spills_into_a_temporary_folder_when_the_cache_cannot_be_written(tiny_llama, tmp_path, temporary,
                                                                                monkeypatch):
    """Before: `OSError: Not a directory` from the spill folder's mkdir. After: the same embeddings, one warning."""
    from analysis.sweep.runner import SuffixRunner
    from analysis.sweep.windows import Cell

    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(_unwritable(tmp_path)))
    texts = ["a cat sat on the mat", "the dog ran", "stocks fell on monday", "a man plays the guitar"]
    in_memory = SuffixRunner(tiny_llama, texts, [1], batch_size=2)
    spilled = SuffixRunner(tiny_llama, texts, [1], batch_size=2, memory_mb=0)
    with pytest.warns(StorageWarning, match="cannot be written"):
        spilled.prepare()
    try:
        assert spilled.spilled > 0 and any(temporary.rglob("*.npy"))
        assert np.array_equal(spilled.embed(Cell(1, 2, 2.0)), in_memory.embed(Cell(1, 2, 2.0)))
    finally:
        spilled.close()


def test_a_disk_that_fills_while_the_output_is_written_is_one_sentence_and_the_work_is_kept(tiny_folder, tmp_path,
                                                                                           capsys, monkeypatch):
    """Before: `OSError: [Errno 28] No space left on device`, a traceback after all the work. After: one sentence
    that names the disk, no half-written file, and the same command afterwards reads the embeddings from the cache."""
    monkeypatch.setenv("EMBEDSCOPE_CACHE", str(tmp_path / "cache"))
    texts = tmp_path / "texts.txt"
    texts.write_text("a cat sat on the mat\nthe dog ran\n", encoding="utf-8")
    out = tmp_path / "out" / "emb.npy"
    out.parent.mkdir()
    argv = ["embed", "--method", "mean", "--model", tiny_folder, "--input", texts, "--output", out]

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(np, "save", full)
        code, _, err = run_cli(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: Could not write: the disk is full"), err
    assert list(out.parent.iterdir()) == []
    code, result, err = run_cli(capsys, *argv)
    assert code == 0 and result["cached"] and np.load(out).shape == (2, 64), err
