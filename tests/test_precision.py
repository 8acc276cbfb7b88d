"""`--dtype auto`: bfloat16 only on hardware that has it and only for what this model's dtype record measured equal;
float32 with the reason everywhere else (a machine without bfloat16 units is simulated by forcing the check off)."""

from __future__ import annotations

import pytest

from analysis.core.precision import FORCE, bf16_supported, choose

VERDICTS = {"prompteol": {"dtype": "bfloat16", "reason": "bfloat16: did not move"},
            "htp": {"dtype": "float32", "reason": "float32: moved"}}


def test_the_cpu_flags_decide_unless_forced(tmp_path, monkeypatch):
    monkeypatch.delenv(FORCE, raising=False)
    with_units, without = tmp_path / "a", tmp_path / "b"
    with_units.write_text("flags\t\t: fpu avx512f avx512_bf16 amx_tile\n")
    without.write_text("flags\t\t: fpu avx2 avx512f\n")
    assert bf16_supported(cpuinfo=with_units) and not bf16_supported(cpuinfo=without)
    assert not bf16_supported(cpuinfo=tmp_path / "missing")  # no /proc: no claim of units
    monkeypatch.setenv(FORCE, "0")
    assert not bf16_supported(cpuinfo=with_units)


@pytest.mark.parametrize("forced, method, dtype, says", [
    ("1", "prompteol", "bfloat16", "did not move"),
    ("1", "htp", "float32", "moved"),
    ("1", "echo", "float32", "was not in this model's dtype record"),
    ("0", "prompteol", "float32", "no bfloat16 units"),
])
def test_auto_follows_the_record_and_the_hardware(monkeypatch, forced, method, dtype, says):
    monkeypatch.setenv(FORCE, forced)
    choice = choose(VERDICTS, method)
    assert choice.dtype == dtype and says in choice.reason


def test_no_record_means_float32_and_an_explicit_dtype_is_kept(monkeypatch):
    monkeypatch.setenv(FORCE, "1")
    assert choose(None, "prompteol").dtype == "float32" and "no bfloat16 evidence" in choose(None, "x").reason
    assert choose(VERDICTS, "htp", requested="bfloat16").dtype == "bfloat16"
