"""scripts/bench_corpus_stream.py at a small size (the 100,000-document measurement is run by hand on a quiet
machine: /work/notes/faults_runs.md, docs/BUDGETS.md): its folder is a valid BEIR folder, and one measurement in
each mode reports the peak and the same score."""

import sys
from argparse import Namespace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import bench_corpus_stream

from analysis.data.files import load_beir


def test_the_generated_folder_is_read_and_both_modes_measure_the_same_score(tmp_path):
    folder = bench_corpus_stream.generate(tmp_path / "gen", 60, 120)
    beir = load_beir(folder)
    assert len(beir.corpus) == 60 and len(beir.queries) == bench_corpus_stream.QUERIES
    assert all(110 <= len(t) <= 150 for t in beir.corpus.values())
    args = Namespace(model="tiny", method="mean", batch_size=64)
    got = {m: bench_corpus_stream.child(args, m, str(folder)) for m in ("streamed", "whole")}
    assert got["streamed"]["nDCG@10"] == got["whole"]["nDCG@10"]
    for out in got.values():
        assert out["documents"] == 60 and out["peak_rss_mib"] >= out["model_rss_mib"] > 0 and out["seconds"] > 0
