"""Causal2Vec on held-out STS-B: does the decoder add to the encoder? Writes docs/results/causal2vec.json.

    python scripts/causal2vec_results.py [--bridge shipped] [--sample 0] [--speed-n 256] [--speed-long 64]

Data: the report part of STS-B dev (`analysis.data.samples.dev_split`: 1,200 pairs of all six sources that no
checkpoint or setting was selected on), or a genre-stratified `--sample` of it. Configurations, all with the
instruction the bridge was trained with: the trained system's concat / EOS / contextual readouts (one forward pass
gives all three), the same readouts with the untrained bridge and no LoRA, the direct-concatenation control (the
plain decoder's EOS next to the encoder vector, the paper's), the encoder alone, PromptEOL, and the earlier
MLP-only bridge (shipped under ablations/mlp-only). Each with a 95% bootstrap interval; the claims as paired
differences (the same 1,000 resampled pairs for both sides), overall and per genre. Speed: ratios to the vanilla
forward of the same texts, measured interleaved in the same run (`--speed-n` sentences, `--speed-long` documents).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLAIMS = [  # (A, B, what A > B would show)
    ("trained concat", "trained contextual", "the decoder's reading of the text adds to C alone"),
    ("trained concat", "direct control", "the trained system beats the paper's no-contextual-token control"),
    ("trained EOS", "untrained EOS", "training taught the half that reads the text"),
    ("trained concat", "encoder alone", "the system beats its encoder"),
    ("trained concat", "PromptEOL", "the system beats the decoder's best training-free method"),
    ("trained concat", "MLP-only concat", "the paper's recipe beats the earlier MLP-only bridge"),
]


def readouts_one_pass(bb, method, texts, batch_size=32):
    """{readout: (n, D)} for concat/eos/contextual from one forward pass per batch."""
    import numpy as np
    import torch

    from analysis.core.tokens import batches_by_length
    from analysis.methods.causal2vec import readout_at

    runner = method.load(bb)[1]
    L = bb.facts.n_layers
    items = method.prepare(runner, texts)
    out = {}
    with torch.inference_mode(), runner.lock:
        for idx in batches_by_length([len(e) for e in items], batch_size):
            batch = method.collate(runner, [items[i] for i in idx], "right")
            hidden = method.forward(runner, batch, [L]).hidden[L]
            for r in ("concat", "eos", "contextual"):
                z = readout_at(hidden, batch, r).float().numpy()
                out.setdefault(r, np.zeros((len(texts), z.shape[1]), dtype=np.float32))[idx] = z
    return out


def _timer(seconds: dict):
    def timed(label, f):
        start = time.perf_counter()
        result = f()
        seconds[label] = round(time.perf_counter() - start, 1)
        print(f"{label}: {seconds[label]:.0f} s", file=sys.stderr, flush=True)
        return result

    return timed


def variant_embeddings(bb, bridge: str, variant: str, label: str, texts: list[str]) -> tuple[dict, dict]:
    """The configurations a variant of the shipped recipe is judged against (`--variant`): the shipped concat, the
    variant's three readouts, the encoder alone and the direct control."""
    from analysis import get_method

    trained = get_method("causal2vec", bridge=bridge)
    other = get_method("causal2vec", bridge=variant)
    out, seconds = {}, {}
    timed = _timer(seconds)
    out["trained concat"] = timed("trained (3 readouts)", lambda: readouts_one_pass(bb, trained, texts))["concat"]
    for name, r in timed(f"{label} (3 readouts)", lambda: readouts_one_pass(bb, other, texts)).items():
        out[f"{label} {name if name != 'eos' else 'EOS'}"] = r
    out["direct control"] = timed("direct control", lambda: get_method(
        "causal2vec", readout="direct", instruction=trained.params.instruction).encode(bb, texts, batch_size=32))
    out["encoder alone"] = timed("encoder alone", lambda: get_method("sentence_encoder").encode(bb, texts, batch_size=32))
    return out, seconds


def variant_claims(label: str) -> list[tuple[str, str, str]]:
    return [(f"{label} concat", "trained concat", f"{label} beats the shipped recipe"),
            (f"{label} concat", "encoder alone", f"{label} beats its encoder"),
            (f"{label} concat", "direct control", f"{label} beats the paper's no-contextual-token control"),
            (f"{label} concat", f"{label} contextual", f"with {label}, the decoder's reading adds to C alone")]


def embeddings(bb, bridge: str, ablation: Path, texts: list[str]) -> tuple[dict, dict]:
    """({configuration: (n, D) embeddings}, {configuration: seconds}) for every configuration of the table."""
    from analysis import get_method

    trained = get_method("causal2vec", bridge=bridge)
    instruction = trained.params.instruction  # what the bridge was trained with (instruction=auto)
    out, seconds = {}, {}
    timed = _timer(seconds)
    for name, r in timed("trained (3 readouts)", lambda: readouts_one_pass(bb, trained, texts)).items():
        out[f"trained {name if name != 'eos' else 'EOS'}"] = r
    untrained = get_method("causal2vec", bridge="untrained", instruction=instruction)
    for name, r in timed("untrained (3 readouts)", lambda: readouts_one_pass(bb, untrained, texts)).items():
        out[f"untrained {name if name != 'eos' else 'EOS'}"] = r
    out["direct control"] = timed("direct control", lambda: get_method(
        "causal2vec", readout="direct", instruction=instruction).encode(bb, texts, batch_size=32))
    out["encoder alone"] = timed("encoder alone", lambda: get_method("sentence_encoder").encode(bb, texts, batch_size=32))
    out["PromptEOL"] = timed("PromptEOL", lambda: get_method("prompteol").encode(bb, texts, batch_size=32))
    if (ablation / "manifest.json").is_file():
        old = get_method("causal2vec", bridge=str(ablation))
        r = timed("MLP-only (3 readouts)", lambda: readouts_one_pass(bb, old, texts))
        out["MLP-only concat"], out["MLP-only contextual"] = r["concat"], r["contextual"]
    return out, seconds


def tables(pairs, emb: dict, n_boot: int, claims_asked=CLAIMS) -> tuple[list[dict], list[str], dict]:
    """(tables, findings, raw numbers) from the embeddings: scores with intervals, per genre, paired claims."""
    import numpy as np

    from analysis.eval.stats import paired_difference, resample_indices, spearman_replicates
    from analysis.eval.sts import pair_cosines, pair_index, score_cosines

    texts, left, right = pair_index(pairs)
    cos = {k: pair_cosines(v, left, right) for k, v in emb.items()}
    gold = np.asarray(pairs.scores)
    scores = {k: score_cosines(c, gold, n_boot=n_boot) for k, c in cos.items()}
    genre = np.array([g.split("/")[0] for g in pairs.genres])
    genres = sorted(set(genre))
    per_genre = {k: {g: float(score_cosines(c[genre == g], gold[genre == g], n_boot=0).spearman) for g in genres}
                 for k, c in cos.items()}
    main = {"title": f"Spearman on {len(pairs)} held-out pairs ({len(texts)} sentences), 95% bootstrap interval, "
                     "and per genre",
            "columns": ["configuration", "Spearman", "95% CI", *genres],
            "rows": [[k, round(s.spearman, 4), [round(s.ci[0], 4), round(s.ci[1], 4)],
                      *[round(per_genre[k][g], 4) for g in genres]] for k, s in scores.items()]}
    idx = resample_indices(len(gold), n_boot, seed=0)
    claims, findings, raw = [], [], {"scores": {k: s.spearman for k, s in scores.items()}, "paired": {}}
    for a, b, meaning in claims_asked:
        if a not in cos or b not in cos:
            continue
        row = [f"{a} − {b}"]
        for subset in ["all", *genres]:
            m = np.ones(len(gold), bool) if subset == "all" else genre == subset
            sub_idx = idx if subset == "all" else resample_indices(int(m.sum()), n_boot, seed=0)
            reps = spearman_replicates(np.stack([cos[a][m], cos[b][m]]), gold[m], sub_idx)
            d = paired_difference(reps[0], reps[1], scores[a].spearman - scores[b].spearman if subset == "all"
                                  else per_genre[a][subset] - per_genre[b][subset])
            raw["paired"][f"{a} - {b} | {subset}"] = {"difference": d.difference, "ci": d.ci, "p": d.p}
            row.append(f"{d.difference:+.3f} [{d.ci[0]:+.3f}, {d.ci[1]:+.3f}]")
            if subset == "all":
                verdict = ("holds" if d.ci[0] > 0 else "is reversed" if d.ci[1] < 0 else "is not shown")
                findings.append(f"{meaning[0].upper()}{meaning[1:]}: {verdict} ({a} − {b} = {d.difference:+.3f}, "
                                f"paired 95% CI [{d.ci[0]:+.3f}, {d.ci[1]:+.3f}], p = {d.p:.3g}).")
        claims.append(row)
    paired = {"title": "Paired differences (the same resampled pairs for both sides), overall and per genre",
              "columns": ["A − B", "all", *genres], "rows": claims}
    return [main, paired], findings, raw


def speed(bb, bridge: str, texts, repeats):
    """Medians of interleaved rounds; ratios to the vanilla forward of the same round set."""
    import torch

    from analysis import get_method
    from benchmark import vanilla_forward  # scripts/benchmark.py, beside this script

    configs = {
        "vanilla forward": lambda: vanilla_forward(bb, texts, 16),
        "encoder alone": lambda: get_method("sentence_encoder").encode(bb, texts, batch_size=16),
        "Causal2Vec (concat)": lambda: get_method("causal2vec", bridge=bridge).encode(bb, texts, batch_size=16),
        "PromptEOL": lambda: get_method("prompteol").encode(bb, texts, batch_size=16),
    }
    times = {k: [] for k in configs}
    with torch.inference_mode():
        for f in configs.values():  # warm-up: loads, first-call allocations
            f()
        for _ in range(repeats):
            for k, f in configs.items():
                start = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {k: (round(v, 3), round(v / med["vanilla forward"], 3)) for k, v in med.items()}


def held_out_pairs(sample: int):
    """(the report part of STS-B dev, the pairs scored: all of it, or a genre-stratified sample, seed 0), with the
    libraries' progress bars off."""
    from transformers.utils import logging as hf_logging

    from analysis.data.datasets import stsb_pairs
    from analysis.data.samples import dev_split, sample_pairs

    hf_logging.disable_progress_bar()
    _, report = dev_split(stsb_pairs("dev"))
    return report, sample_pairs(report, sample, seed=0) if sample else report


def base_record(args, pairs, report, man: dict, wall: float, seconds: dict, tabs, findings, raw) -> dict:
    """The fields every Causal2Vec record shares: its data and sample, the training run, timings, tables."""
    from analysis.data.samples import genre_counts

    return {"data": f"{pairs.name}: STS-B dev pairs that no checkpoint or setting was selected on",
            "sample": {"n": len(pairs), "of": len(report), "how": "all of the report part" if not args.sample
                       else "stratified by genre/source", "seed": 0, "genres": genre_counts(pairs)},
            "trained_by": {"command": man.get("command"), "steps": man.get("steps_done"),
                           "best_step": man.get("best_step"), "wall_seconds": man.get("wall_seconds"),
                           "examples_per_second": man.get("examples_per_second")},
            "wall_seconds": round(time.perf_counter() - wall, 1), "seconds": seconds, "tables": tabs,
            "findings": findings, "raw": raw}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bridge", default="shipped", help="the trained system: shipped or a folder")
    ap.add_argument("--sample", type=int, default=0, help="a genre-stratified sample of the report part (0 = all)")
    ap.add_argument("--speed-n", type=int, default=256, help="sentences for the speed comparison (0 = skip)")
    ap.add_argument("--speed-long", type=int, default=64, help="Lee corpus documents for the speed comparison")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--out", default=str(REPO / "docs" / "results"), help="folder of the results records")
    ap.add_argument("--variant", default="", metavar="LABEL=FOLDER",
                    help="judge a variant of the recipe (a training run's folder) against the shipped system, the "
                         "encoder alone and the direct control instead; writes causal2vec_<label>.json, no speed table")
    args = ap.parse_args(argv)
    if args.variant:
        return variant_main(args)

    from analysis import load_backbone
    from analysis.data.corpora import lee_documents
    from analysis.eval.results import write_record
    from analysis.eval.sts import pair_index
    from analysis.weights.artefacts import read_manifest, shipped_dir

    wall = time.perf_counter()
    report, pairs = held_out_pairs(args.sample)
    texts = pair_index(pairs)[0]
    bb = load_backbone()
    shipped = shipped_dir("causal2vec", bb.facts)
    emb, seconds = embeddings(bb, args.bridge, shipped / "ablations" / "mlp-only", texts)
    tabs, findings, raw = tables(pairs, emb, args.n_boot)
    if args.speed_n or args.speed_long:
        rows = []
        for label, sample in (("sentences", texts[: args.speed_n]), ("documents", lee_documents().texts[: args.speed_long])):
            if len(sample):
                for k, (s, x) in speed(bb, args.bridge, sample, args.repeats).items():
                    rows.append([f"{label} ({len(sample)})", k, s, x])
        tabs.append({"title": "Inference cost, medians of interleaved rounds in one run (batch 16)",
                     "columns": ["texts", "configuration", "seconds", "× vanilla forward"], "rows": rows})
    man = read_manifest(shipped if args.bridge == "shipped" else Path(args.bridge))
    record = {"id": "causal2vec", "title": "Causal2Vec: does the decoder add to the encoder?",
              "command": "python scripts/causal2vec_results.py" + (f" --sample {args.sample}" if args.sample else ""),
              **base_record(args, pairs, report, man, wall, seconds, tabs, findings, raw)}
    path = write_record(args.out, record)
    print("\n".join(findings))
    print(f"written: {path}", file=sys.stderr)


def variant_main(args):
    """`--variant LABEL=FOLDER`: the variant's readouts next to the shipped concat, paired, on the same pairs."""
    from analysis import load_backbone
    from analysis.eval.results import write_record
    from analysis.eval.sts import pair_index
    from analysis.weights.artefacts import read_manifest

    label, _, folder = args.variant.partition("=")
    if not label or not folder:
        raise SystemExit("--variant takes LABEL=FOLDER, for example encoder-lora=runs/encoder-lora")
    wall = time.perf_counter()
    report, pairs = held_out_pairs(args.sample)
    bb = load_backbone()
    emb, seconds = variant_embeddings(bb, args.bridge, folder, label, pair_index(pairs)[0])
    tabs, findings, raw = tables(pairs, emb, args.n_boot, variant_claims(label))
    man = read_manifest(Path(folder))
    record = {"id": f"causal2vec_{label.replace('-', '_')}", "title": f"Causal2Vec: {label} against the shipped recipe",
              "command": f"python scripts/causal2vec_results.py --variant {label}=FOLDER"
                         + (f" --sample {args.sample}" if args.sample else "")
                         + f" (FOLDER: the run of `{man.get('command')}`)",
              **base_record(args, pairs, report, man, wall, seconds, tabs, findings, raw)}
    path = write_record(args.out, record)
    print("\n".join(findings))
    print(f"written: {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
