"""Causal2Vec (Lin, Li et al., 2025; causal2vec.txt) as it states each claim the board tests. Its setting:
S-LLaMA-1.3B, Qwen2.5-1.5B, LLaMA-2-7B and Mistral-7B with an E5-base-v2 encoder, about 1.5M public retrieval pairs,
MTEB (56 datasets) and, for its ablations, MTEB-MINI (30 datasets)."""

from analysis.experiments.claims.papers.shapes import Coverage, Headline, Source

TEXT = "causal2vec.txt"
SMALL = ("a 135M decoder with MiniLM as the encoder, trained here for 180 steps on STS-B pairs, instead of 1.3B-7B "
         "with E5-base-v2 on 1.5M retrieval pairs")
STSB = "held-out STS-B pairs instead of MTEB-MINI's 30 datasets"

SOURCES = {
    "c2v-readouts": Source(
        "The representation methods that … utilize both the EOS and Contextual tokens consistently outperform "
        "last-token pooling for S-LLaMA-1.3B and Mistral-7B.",
        "§3.3 Representation Method; Appendix C.4, Table 12 (rows concat, concat-bi, average, last-token); Table 2",
        "Table 12 (MTEB-MINI): concat 62.83 / 65.85 vs last-token 62.19 / 65.44 (S-LLaMA-1.3B / Mistral-7B, +0.64 / "
        "+0.41, computed). There is no Contextual-only readout",
        f"{SMALL}; {STSB}; the paper trains each readout (Table 12's last-token row is Table 2's separately trained "
        "row)"),
    "c2v-contextual-token": Source(
        "incorporating the Contextual token into the LLM’s causal attention mechanism yields average score "
        "improvements of 0.38 and 0.60 for S-LLaMA-1.3B and Mistral-7B, respectively.",
        "§4.4 Effectiveness of Each Component; Table 2 (rows CtxToken and Concat)",
        "Table 2 (MTEB-MINI): the token alone (rows 2 minus 1) +0.38 / +0.60; the whole system against neither "
        "(rows 3 minus 1, what is compared here) +1.02 / +1.01 (S-LLaMA-1.3B / Mistral-7B)",
        f"{SMALL}; {STSB}; rows 3 minus 1 mix the token with the concat readout"),
    "c2v-plain-concat": Source(
        "As shown in Table 4, this simple strategy leads to significant performance degradation, suggesting that the "
        "improvements achieved by Causal2Vec stem from addressing the inherent shortcomings of causal attention and "
        "last-token pooling.",
        "§4.4 (after the noise test); Table 4",
        "Table 4 (MTEB-MINI): Embedding Concatenation 61.92 / 65.02 vs Causal2Vec 62.83 / 65.85 (-0.91 / -0.83, "
        "S-LLaMA-1.3B / Mistral-7B)",
        f"{SMALL}; {STSB}; the paper does not say how its concatenation was trained: this project trains the "
        "decoder's LoRA on its EOS state next to the encoder's vector"),
    "c2v-encoder": Source(
        "These findings suggest that the performance ceiling of our architecture is primarily determined by the LLM "
        "itself rather than the additional bidirectional encoder.",
        "§4.4 Impact of Different Bidirectional Encoders; Table 6; Table 1",
        "§4.4: E5-base-v2 alone 60.97 on MTEB; Table 1: Causal2Vec on S-LLaMA-1.3B 62.63 (+1.66, computed across "
        "tables; no direct comparison is stated)",
        f"{SMALL}; {STSB}; MiniLM is a strong sentence encoder at 22M, the decoder is smaller than the paper's"),
    "c2v-time": Source(
        "our Causal2Vec achieves inference speed comparable to the standard Mistral-7B using causal or bidirectional "
        "attention.",
        "§4.3 Efficiency; Fig. 4 (Mistral-7B, batch 32, A100); Appendix C.7",
        "Fig. 4: \"comparable\" to the plain model (no number in the text); against bge-en-icl (in-context examples) "
        "4.37 vs 26.09 and 6.50 vs 37.50 (up to 82% less)",
        f"{SMALL}; a 2-core CPU instead of an A100; bge-en-icl's few-shot prompt is not built here"),
    "c2v-length": Source(
        "our method requires only a single additional Contextual token compared to standard LLMs.",
        "Appendix C.7 Comparison on Required Sequence Length; Fig. 6",
        "one token more than the plain model (Mistral's \"<s>\" placeholder adds a separator too); against "
        "bge-en-icl 34.0 vs 269.0 and 62.1 vs 421.9 tokens (up to 85% less)",
        "SmolLM2's tokenizer and this project's instruction; bge-en-icl's prompt is not built here"),
    "c2v-noise": Source(
        "standard Mistral-7B with last-token pooling suffers a significant average performance drop of 6.15 points, "
        "while Causal2Vec exhibits a smaller degradation of 4.90.",
        "§4.4 (after Table 2); Table 3 (Mistral-7B)",
        "Table 3: MTEB-MINI 64.84 to 58.69 (-6.15) for the trained last-token model, 65.85 to 60.95 (-4.90) for "
        "Causal2Vec; retrieval -5.42 vs -3.25",
        f"{SMALL}; {STSB}; the paper does not give its noise text: a fixed irrelevant passage is appended here"),
    "c2v-causal-vs-bidir": Source(
        "shifting from causal to bidirectional attention consistently leads to lower performance of on MTEB-MINI, "
        "even for the Mistral-7B backbone",
        "§3.1, Fig. 3; Appendix C.6, Table 15",
        "Table 15 (MTEB-MINI), causal vs bidirectional Causal2Vec: S-LLaMA-1.3B 62.83 vs 62.52, LLaMA-2-7B 64.62 vs "
        "64.30, Mistral-7B 65.85 vs 65.77 (-0.08 to -0.32)",
        f"{SMALL}; {STSB}"),
    "c2v-ctx-position": Source(
        "As shown in Table 14, \"after instruction\" consistently yields better results.",
        "Appendix C.5; Table 14",
        "Table 14: after vs before the instruction: S-LLaMA-1.3B 62.83 vs 62.69 (+0.14), Mistral-7B 65.85 vs 65.55 "
        "(+0.30)",
        f"{SMALL}; {STSB}"),
    "c2v-vs-tp": Source(
        "Our method substantially outperforms TP, demonstrating that compared to repeatedly using EOS token within the "
        "LLM, our Contextual token generated by the additional encoder is a more effective solution",
        "§4.4 (last paragraph); Table 6, row TP (Fu et al., 2025)",
        "Table 6 (MTEB-MINI): Causal2Vec 62.83 / 65.85 vs TP 61.66 / 64.93 (+1.17 / +0.92, S-LLaMA-1.3B / "
        "Mistral-7B)",
        f"{SMALL}; {STSB}; TP here is training-free on the frozen model (the paper's TP rows sit with trained "
        "models; not stated)"),
    "c2v-mteb-sota": Source(
        "Causal2Vec achieves a new state-of-the-art performance on the MTEB benchmark among models trained solely on "
        "publicly available retrieval datasets.",
        "abstract; §4.2; Table 1",
        "Table 1 (MTEB, 56 datasets): Mistral-7B Causal2Vec 66.10 vs bge-en-icl 66.08; above Echo by 1.42 "
        "(Mistral-7B) and 0.62 (S-LLaMA-1.3B)",
        "1.3B-7B backbones, 1.5M public retrieval pairs and the whole MTEB (56 datasets)"),
    "c2v-e5-mistral": Source(
        "As shown in Table 11, Causal2Vec remains effective when applied to e5-mistral-7b-instruct",
        "Appendix C.3; Table 11",
        "Table 11: Causal2Vec on e5-mistral-7b-instruct +0.84 on MTEB-MINI, +2.12 on retrieval",
        "e5-mistral-7b-instruct (7B)"),
}

COVERAGE = Coverage((
    Headline("state of the art on MTEB among public-data models (Table 1)", (),
             "needs 1.3B-7B backbones, 1.5M pairs and the whole MTEB: c2v-mteb-sota"),
    Headline("the Contextual token helps (Table 2)", ("c2v-contextual-token",)),
    Headline("concat readout beats last-token (Table 12)", ("c2v-readouts",)),
    Headline("more robust to appended noise (Table 3)", ("c2v-noise",)),
    Headline("not just embedding concatenation (Table 4)", ("c2v-plain-concat",)),
    Headline("the LLM sets the ceiling, not the encoder (Table 6)", ("c2v-encoder",)),
    Headline("beats Token Prepending (Table 6)", ("c2v-vs-tp",)),
    Headline("causal beats bidirectional attention (Table 15)", ("c2v-causal-vs-bidir",)),
    Headline("the Contextual token after the instruction (Table 14)", ("c2v-ctx-position",)),
    Headline("as fast as the plain model, one token longer (Fig. 4, Fig. 6)", ("c2v-time", "c2v-length"),
             "the 82%/85% against bge-en-icl needs its few-shot prompt"),
    Headline("one Contextual token is enough; encoder LoRA by scale (Tables 5, 10)", (),
             "each needs training variants not built here"),
    Headline("works on e5-mistral (Table 11)", (), "needs e5-mistral-7b-instruct: c2v-e5-mistral"),
))
