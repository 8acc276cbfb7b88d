"""GIRCSE (anonymous, under review; gircse.txt) as it states each claim the board tests. Its setting: Mistral-7B and
Qwen2.5-7B (Qwen2.5-0.5B and Llama-3.2-3B in §5.1 and §6), 0.2M training pairs, LoRA r64, K = 5 in training and 20
at inference (App. C), MTEB English v2 (41 datasets) and two instruction-following sets."""

from analysis.experiments.claims.papers.shapes import Coverage, Headline, Source

TEXT = "gircse.txt"
SMALL = "a 135M model with a LoRA trained here for 320 steps on STS-B pairs instead of 7B models on 0.2M pairs"
STSB = "held-out STS-B pairs instead of MTEB's STS family"

SOURCES = {
    "gircse-baseline": Source(
        "It not only outperforms fair baselines and competitive embedding models (e.g., GritLM, LLM2Vec), but also "
        "avoids the severe trade-offs observed in existing approaches.",
        "§4.1 Comparison Methods (4)(i); §4.2; Table 2, rows Fair Baseline Causal-EOS and GIRCSE; Appendix J, Table 10",
        "Table 2 col STS: Mistral-7B 76.37 vs Causal-EOS 73.98 (+2.39), Qwen2.5-7B 76.30 vs 74.71 (+1.59); Table 10 "
        "row STSBenchmark: 0.832 vs 0.807, 0.820 vs 0.814",
        f"{SMALL}; {STSB}; read at K = 20 (App. C's inference K), K = 5 beside"),
    "gircse-scaling": Source(
        "Although GIRCSE is trained with K = 5, its performance improves monotonically within the training regime (K "
        "= 1, 3, 5) and continues to improve even beyond it (K = 10, 15, 20).",
        "§5.1 Effect of Generation Length at Inference; Fig. 2 (top)",
        "Fig. 2 is an image (three backbones, three MTEB tasks, gains relative to K = 1); the text gives no numbers",
        f"{SMALL}; {STSB}"),
    "gircse-contrastive": Source(
        "In contrast, the non-generative method (Causal-EOS) does not benefit from additional generation and often "
        "degrades in performance.",
        "§1 Challenges (first); §5.1 finding (1); Fig. 2 (bottom)",
        "Fig. 2 (bottom) is an image: Causal-EOS generating K tokens \"degraded or fluctuated\" relative to its own "
        "K = 0; no number in the text",
        f"{SMALL}; {STSB}"),
    "gircse-baselines": Source(
        "GIRCSE outperforms strong LLM-based embedding baselines on the MTEB benchmark and instruction-following "
        "tasks.",
        "abstract; §4.1; §4.2; Table 2 (cols MTEB Avg (Rank), IF Avg (Rank))",
        "Table 2: GIRCSE Mistral-7B MTEB Avg 67.83 (rank 5), Qwen2.5-7B 67.67 (6), behind gte-Qwen2 70.72 and "
        "SFR-Embedding-2 69.82; IF Avg 62.97 (rank 2). No training-free baseline (PromptEOL) is among its baselines",
        "7B trained embedders (E5-Mistral, GritLM, NV-Embed, ...), the whole MTEB v2 and the IntentEmotion and "
        "NYTClustering sets"),
    "gircse-ablation": Source(
        "Incorporating generative embedding alone yields consistent improvements across nearly all tasks. Adding SL "
        "provides further gains, particularly for classification and summarization, while the combination of SL and "
        "IR achieves the strongest overall performance.",
        "§4.3 Ablation Study; Table 3 (Mistral-7B, 50K samples; rows Gen, SL, IR)",
        "Table 3 col STS: 75.76, then 78.70 with generation (+2.94), 78.87 with SL (+0.17), 78.93 with IR (+0.06); "
        "col Avg +1.37, +0.48, +0.58",
        f"{SMALL}; {STSB}; the IR rung's main gain is on instruction following, which cannot run here"),
    "gircse-bidir-avg": Source(
        "Fig. 3 shows that our method consistently outperforms both baselines across all data scales and model "
        "sizes.",
        "§4.1 (4)(ii); Table 2, rows Fair Baseline Bidirectional-Avg and GIRCSE; §6, Fig. 3; Table 10",
        "Table 2 col STS: Mistral-7B 76.37 vs Bidirectional-Avg 75.87 (+0.50), Qwen2.5-7B 76.30 vs 72.81 (+3.49); "
        "Table 10 STSBenchmark 0.832 vs 0.823, 0.820 vs 0.773",
        f"{SMALL}; {STSB}"),
    "gircse-data-scale": Source(
        "The performance gap becomes more pronounced when the training data is limited.",
        "§6 Discussion of Robustness and Learning Efficiency; Fig. 3",
        "§6 at 50K pairs, GIRCSE vs Causal-EOS: Qwen2.5-0.5B 61.2 vs 55.5 (+5.7), Llama-3B 65.5 vs 62.7 (+2.8), "
        "Mistral-7B 66.2 vs 63.8 (+2.4); Mistral at 0.2M (Table 2) +1.51",
        f"{SMALL}; two toy data sizes instead of 50K-200K pairs"),
    "gircse-cache-cost": Source(
        "with caching enabled, the FLOPs are effectively reduced to baseline levels",
        "§3.1 Computational Considerations; Appendix E, Table 6 (FLOPs at 512/1K/2K tokens); Appendix F (Eq. 9-10)",
        "Table 6: GIRCSE with the cache at K = 5 1.01x the Causal-EOS FLOPs (7.40 vs 7.33 T at 512 tokens); without "
        "it 6.02x",
        "wall time on a 2-core CPU instead of FLOPs; short sentences, where K steps and the vocabulary's softmax "
        "(49K-262K words) weigh much more than beside a 512-token input (App. F)"),
    "gircse-nanobeir-trec": Source(
        "These benchmarks complement the main paper by covering a wider range of retrieval tasks and domains.",
        "Appendix I; Tables 8-9",
        "Table 8: NanoBEIR average 66.81; Table 9: TREC average 25.9 (GIRCSE, 7B)",
        "the 7B model and the NanoBEIR and TREC collections"),
}

COVERAGE = Coverage((
    Headline("beats its fair baselines Causal-EOS and Bidirectional-Avg (Table 2)",
             ("gircse-baseline", "gircse-bidir-avg")),
    Headline("beats strong trained LLM embedders on MTEB and instruction following (Table 2 ranks)", (),
             "needs 7B embedders, MTEB v2 and the instruction-following sets: gircse-baselines"),
    Headline("test-time scaling with K, within and beyond training (Fig. 2 top)", ("gircse-scaling",)),
    Headline("generation without its training does not help (Fig. 2 bottom)", ("gircse-contrastive",)),
    Headline("each part of the objective adds (Table 3)", ("gircse-ablation",),
             "the IR rung's instruction-following gain needs those sets"),
    Headline("a larger gap with less data (Fig. 3)", ("gircse-data-scale",), "toy data sizes only"),
    Headline("about 1.0x the FLOPs with the KV cache (Table 6)", ("gircse-cache-cost",)),
    Headline("instruction-specific refinement tokens (Table 4)", (), "qualitative: shown on the Soft tokens page"),
    Headline("NanoBEIR and TREC (Appendix I)", (), "needs the 7B model and those collections: gircse-nanobeir-trec"),
))
