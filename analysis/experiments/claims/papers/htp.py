"""HTP (Ding, Huang et al., 2025; htp.txt) as it states each claim the board tests. Its setting: Mistral-7B-Instruct-v0.3,
Gemma2-9B and Qwen2-1.5B; 7 BEIR datasets, LongEmbed's 4 real tasks at 512 to 16,384 tokens, 30 MTEB datasets."""

from analysis.experiments.claims.papers.shapes import Coverage, Headline, Source

TEXT = "htp.txt"
SMALL = "a 135-270M model instead of 1.5B-9B"
SCIFACT = "a seeded SciFact sub-corpus (100 claims) instead of the whole set, texts embedded bare"
LONG_STS = ("long inputs built here by concatenating STS-B pairs of similar gold score (the construction is this "
            "project's: the paper does not give its own) instead of LongEmbed's documents at 512-16,384 tokens")

SOURCES = {
    "htp-long-mean": Source(
        "At both context lengths, HTP achieves strong performance.",
        "§5.2 LongEmbed Retrieval Tasks; Table 2 (4 LongEmbed tasks at 512 and 8,192 tokens); Fig. 5",
        "Table 2, 4-task mean nDCG@10 (computed), HTP vs Vanilla Mean: Mistral-7B 19.28 vs 16.64 at 512, 28.48 vs "
        "26.38 at 8,192; Gemma2-9B 25.85 vs 24.32, 35.72 vs 34.55 (+1.2 to +2.6 points)",
        f"{SMALL}; {LONG_STS}"),
    "htp-long-gap": Source(
        "HTP achieves consistent performance gains across 11 retrieval datasets and 30 general embedding benchmarks, "
        "especially in long-context settings.",
        "abstract; §5.2; Table 2 (cols 512 and 8,192); Fig. 5",
        "Table 2, 4-task means (computed), HTP minus X from 512 to 8,192 tokens: vs TP w. Mean Mistral +1.24 to "
        "+1.61, Gemma +1.33 to +17.24; vs PromptEOL +14.13 to +21.53, +3.38 to +17.18; vs Echo +0.32 to +4.70, "
        "+12.92 to +20.31 (grows); vs Vanilla Mean +2.63 to +2.10, +1.53 to +1.18 (shrinks)",
        f"{SMALL}; {LONG_STS}; Echo doubles the input, so its longest input is twice the others'"),
    "htp-long-readout": Source(
        "the performance of last-token embeddings degrades sharply as input length increases.",
        "§3.1 Mean vs. Last-token Embedding, Theorem 3.1; Fig. 1; Table 1 (Vanilla Mean vs Vanilla Last); Table 5",
        "Table 1, 7-dataset BEIR mean nDCG@10 (computed), Vanilla Mean vs Vanilla Last: Mistral-7B 20.35 vs 2.44, "
        "Gemma2-9B 19.85 vs 5.71, Qwen2-1.5B 12.41 vs 1.69. No HTP-with-last-token row exists",
        f"{SMALL}; {LONG_STS}; HTP read at its last token is shown beside as this project's derivation"),
    "htp-long-sts-readout": Source(
        "create long-context inputs by concatenating sentences with similar human-annotated scores",
        "§3.1 Long-context Sentence Similarity (STS) Task; Fig. 1 (left: methods across lengths; right: drop)",
        "Fig. 1 is an image with no numbers in the text and no model named: last-token \"degrades sharply\" with "
        "length, PromptEOL mitigates, mean pooling is stable and best",
        f"{SMALL}; the concatenation is this project's (Appendix B does not describe the paper's), lengths up to a "
        "few hundred tokens"),
    "htp-retrieval": Source(
        "HTP matches or outperforms other training-free LLM embedding baselines, frequently ranking first or second "
        "across datasets.",
        "§5.1 BEIR Retrieval Task; Table 1 (7 BEIR datasets), rows HTP and Vanilla Mean",
        "Table 1 col SciFact, HTP vs Vanilla Mean: Mistral-7B 46.67 vs 42.10 (+4.57), Gemma2-9B 53.72 vs 49.13, "
        "Qwen2-1.5B 28.29 vs 27.16; 7-dataset means +2.2 to +6.1 points (computed)",
        f"{SMALL}; {SCIFACT} (the paper instructs queries, Table 10)"),
    "htp-sts-tp": Source(
        "However, it lags behind other methods on sentence similarity tasks.",
        "§5.3 General Embedding Tasks; Table 3 (row STS, Mistral-7B); Appendix B.2.2, Table 15 (STS12-16)",
        "Table 3 row STS: TP w. PromptEOL 68.46 (Table 15's average: 68.10), PromptEOL 67.89, Echo Mean 64.46, HTP "
        "53.64: TP minus HTP +14.5 to +14.8 points",
        f"{SMALL}; held-out STS-B pairs instead of STS12-16"),
    "htp-cost": Source(
        "HTP achieves performance comparable to Echo Mean (Springer et al., 2025) with substantially lower memory "
        "and latency.",
        "§5.1; Table 1 (cols Time, Memory vs Vanilla); §5.2, Table 2 (col Avg. Time)",
        "Table 1 time vs Vanilla: HTP 1.08x-1.20x, Echo Mean 2.85x-3.45x; Table 2: HTP 1.08x-1.50x, Echo 1.84x-3.50x. "
        "HTP / Echo 0.32-0.73 (computed)",
        f"{SMALL}; a 2-core CPU instead of a GPU; news documents of a few hundred tokens"),
    "htp-local-global": Source(
        "removing either component consistently degrades performance, confirming that both global and local backward "
        "lookup are essential for HTP.",
        "§5.4 Prepending Only Locally and Globally; Table 4 (Mistral-7B, BEIR subset)",
        "Table 4 col SciFact: HTP 46.67, Local Only 43.39 (+3.28), Global Only 36.71 (+9.96); 5-dataset means 24.82 / "
        "21.75 / 20.65 (computed). Global Only wins FiQA (12.72 vs 8.77)",
        f"{SMALL}; {SCIFACT}"),
    "htp-block-size": Source(
        "For short documents, performance degrades as K increases, suggesting that coarser summaries may elide "
        "critical, fine-grained details necessary for the task.",
        "§5.4 Effect of Hyperparameter K; Fig. 6; Appendix B.3, Table 16 (Mistral-7B)",
        "Table 16 col SciFact (max 512): K=1 46.66, K=2 45.00, K=8 44.93, K=64 41.36 (K1 minus K8 +1.73). The long "
        "half (larger K helps) is at 16,382 tokens: SumFD K1 54.21 vs K8 56.73",
        f"{SMALL}; {SCIFACT}; only the short-document half (the long half needs 16K-token documents)"),
    "htp-sentence-blocks": Source(
        "sentence-based partitioning consistently outperforms the fixed-interval baseline.",
        "§5.4 Sentences vs. Every Few Tokens; Fig. 8 (NFCorpus, SciFact)",
        "Fig. 8 is an image; the text gives no numbers. The baseline cuts every floor(tokens / sentences) tokens, so "
        "both have as many blocks",
        f"{SMALL}; {SCIFACT}"),
    "htp-exit-layer": Source(
        "Exiting too early (e.g., layer 3) degrades performance relative to our default setting (layer 7), while "
        "exiting much later or disabling early exit also hurts performance on most datasets.",
        "§5.4 Early Readout, Start and Exit Layer; Table 5 (Mean w. E.R. vs HTP); Table 6 (exit); Table 9",
        "Table 6 (Mistral-7B), 5-dataset means (computed): exit 7 24.82, exit 31 (no early exit) 23.84, exit 3 23.08; "
        "Table 5: HTP 24.82 vs Mean w. E.R. 21.65",
        f"{SMALL}; {SCIFACT}; the exit here is a share of the depth (7/32) and the readout the second-to-last layer"),
    "htp-scifact-tp-echo": Source(
        "It also consistently outperforms Token Prepending (TP) (Fu et al., 2024) with either PromptEOL (Jiang et al., "
        "2024) or mean pooling",
        "§5.1; Table 1, col SciFact (rows HTP, Echo Mean, TP w. PromptEOL, TP w. Mean)",
        "Table 1 col SciFact: Mistral-7B HTP 46.67 vs Echo 28.93, TP w. PromptEOL 8.38, TP w. Mean 36.71; Gemma2-9B "
        "53.72 vs 40.16 / 43.33 / 52.73",
        f"{SMALL}; {SCIFACT}"),
    "htp-clustering": Source(
        "we observe that HTP performs well on classification, reranking, and clustering tasks.",
        "§5.3 General Embedding Tasks; Table 3 (row Cluster, Mistral-7B); Table 14",
        "Table 3 row Cluster: HTP 35.39 vs Echo 34.07, PromptEOL 23.10, TP w. PromptEOL 22.11 (HTP minus PromptEOL "
        "+12.29)",
        f"{SMALL}; Banking77 clustering (MTEB's protocol, report part) instead of the 11 MTEB clustering sets"),
    "htp-longembed": Source(
        "It notably outperforms other methods at 8,192 and 16,384, while incurring lower runtime than Echo Embedding",
        "§5.2; Table 2; Fig. 5; Table 17 (documents average 5.6K-50K words)",
        "Table 2 col 8,192, 4-task mean (computed): Mistral-7B HTP 28.48 vs Vanilla Mean 26.38; Gemma2-9B 35.72 vs "
        "34.55",
        "LongEmbed's four real tasks (QMSum, 2WikiMQA, SummScreenFD, NarrativeQA) and 8K-16K-token forwards of 7B-9B "
        "models"),
    "htp-finetuned": Source(
        "we answer (Q4) by modifying over NV-Embed-v2 (Lee et al., 2025), a finetuned model for embedding tasks, and "
        "show that HTP can yield more performance.",
        "§5.5; Table 8",
        "Table 8: NV-Embed-v2 + HTP vs NV-Embed-v2: NFCorpus 47.26 vs 45.10, FiQA 64.18 vs 62.63, SciFact 82.52 vs "
        "80.92",
        "NV-Embed-v2, a 7B fine-tuned embedder"),
}

COVERAGE = Coverage((
    Headline("gains on 11 retrieval datasets (Tables 1-2)", ("htp-retrieval", "htp-scifact-tp-echo"),
             "one BEIR set (SciFact) here; LongEmbed's real tasks need that data and 7B-9B models (htp-longembed)"),
    Headline("especially in long-context settings (Table 2)", ("htp-long-mean", "htp-long-gap"),
             "on concatenated STS-B, not LongEmbed"),
    Headline("mean readout beats last-token (Theorem 3.1, Fig. 1, Table 1)",
             ("htp-long-readout", "htp-long-sts-readout")),
    Headline("comparable to Echo at lower cost (Tables 1-2)", ("htp-cost",)),
    Headline("general embedding: good on clustering, behind on STS (Table 3)", ("htp-clustering", "htp-sts-tp"),
             "the 30-dataset MTEB needs those sets and a 7B model"),
    Headline("both local and global prepending are needed (Table 4)", ("htp-local-global",)),
    Headline("short documents prefer K = 1 (Fig. 6, Table 16)", ("htp-block-size",),
             "the long-document half needs 16K-token documents"),
    Headline("sentence blocks beat fixed-length blocks (Fig. 8)", ("htp-sentence-blocks",)),
    Headline("robust to the exit layer; the gain is not early exit (Tables 5-7)", ("htp-exit-layer",)),
    Headline("helps a fine-tuned model (Table 8)", (), "needs NV-Embed-v2 (7B): htp-finetuned"),
))
