"""HTP's ablations and comparisons as claims (issue 49): local-only and global-only summaries (Table 4), block size
(Fig. 6, Table 16), sentence against fixed-length blocks (Fig. 8), the exit layer (Tables 5-6), HTP against Echo and
Token Prepending on SciFact (Table 1) and on clustering (Table 3); and the claims this machine cannot test (LongEmbed
at 8K-16K tokens, a fine-tuned 7B embedder), with what they need. Every retrieval comparison is paired over the
board's SciFact queries (nDCG@10).

Sources checked (November 2026): the paper's full text (../shared/papers/htp.txt); quotes and numbers in
`papers.htp`.
"""

from __future__ import annotations

from analysis.experiments.claims import Claim, Evidence, Outcome, refuse, tasks
from analysis.experiments.claims.context import configured
from analysis.experiments.machinery import verdicts

HERE = "measured here"
DEVIATIONS = ("method:htp",)
RETRIEVAL = Evidence("Benchmark: retrieval", "benchmark", {"family": "retrieval"})
EXIT_TIE = 0.01  # nDCG@10: Table 6's default exit is 1 point (0.01) above no early exit, "modest"
HOW = "The board's SciFact set (100 seeded report-part claims, their abstracts, 150 seeded others), nDCG@10 per query"


def _work(family: str, *configs):
    def work(ctx):
        return [tasks.unit(ctx, family, c) for c in configs]
    return work


def _against(family: str, a: tuple, others: dict, *, margins: dict | None = None):
    """A judge: method `a` (label, name, params) against each of `others` {label: (name, params)} on the family,
    all of them > 0 (or not worse than a margin, `margins` {label: margin})."""
    def judge(ctx) -> Outcome:
        label_a, name, params = a
        first = ctx.method(name, **params)
        methods = {label: ctx.method(n, **p) for label, (n, p) in others.items()}
        parts = [tasks.compared(ctx, family, first, m, margin=(margins or {}).get(label))
                 for label, m in methods.items()]
        labels = [f"{label_a} minus {label}" + (" (not worse)" if label in (margins or {}) else "")
                  for label in methods]
        return Outcome(verdicts.all_of(parts, labels), HERE,
                       tasks.values(ctx, family, {label_a: first, **methods}))
    return judge


HTP = ("HTP", "htp", {})
LOCAL_GLOBAL = {"local only": ("htp", {"summary": "local"}), "global only": ("htp", {"summary": "global"})}
BLOCKS = {"K=8": ("htp", {"k": 8})}
FIXED = {"fixed-length blocks": ("htp", {"partition": "matched"})}
EXIT = {"no early exit (final layer)": ("htp", {"layer": -1}), "vanilla mean at the same layer": ("mean",
                                                                                                   {"layer": -2})}
TP_ECHO = {"Echo": ("echo", {}), "TP w. PromptEOL": ("token_prepending", {}),
           "TP w. Mean": ("token_prepending", {"pooling": "mean"})}
CLUSTER = {"PromptEOL": ("prompteol", {}), "TP w. PromptEOL": ("token_prepending", {})}


def _configs(names: dict) -> list:
    return [configured("htp"), *(configured(n, **p) for n, p in names.values())]


CLAIMS = [
    Claim("htp-local-global", "htp", "HTP with both summaries beats local-only and global-only summaries.",
          f"{HOW}: HTP against the same with only its local (per-sentence) summaries and with only its global ones.",
          "all of: paired HTP minus each ablation > 0", _against("retrieval", HTP, LOCAL_GLOBAL),
          _work("retrieval", *_configs(LOCAL_GLOBAL)), DEVIATIONS, (RETRIEVAL,)),
    Claim("htp-block-size", "htp", "On short documents one sentence per block beats coarser blocks (K = 8).",
          f"{HOW}: HTP with K = 1 sentence per block (its default) against K = 8.",
          "paired: K=1 minus K=8 > 0", _against("retrieval", ("HTP K=1", "htp", {}), BLOCKS),
          _work("retrieval", *_configs(BLOCKS)), DEVIATIONS, (RETRIEVAL,)),
    Claim("htp-sentence-blocks", "htp", "Sentence blocks beat fixed-length blocks with as many blocks.",
          f"{HOW}: HTP's sentence blocks against blocks of floor(tokens / sentences) tokens per text (partition="
          "matched, Fig. 8's baseline).", "paired: sentence blocks minus fixed-length blocks > 0",
          _against("retrieval", ("HTP, sentence blocks", "htp", {}), FIXED), _work("retrieval", *_configs(FIXED)),
          DEVIATIONS, (RETRIEVAL,)),
    Claim("htp-exit-layer", "htp", "HTP's early readout is not worse than reading the final layer, and HTP beats "
          "mean pooling read at the same layer.",
          f"{HOW}: HTP at its default readout (the second-to-last layer) against the final layer, and against mean "
          "pooling of the plain forward at the second-to-last layer (Table 5's Mean w. E.R.).",
          f"all of: HTP minus final-layer HTP not below -{EXIT_TIE}; HTP minus mean at its layer > 0",
          _against("retrieval", HTP, EXIT, margins={"no early exit (final layer)": EXIT_TIE}),
          _work("retrieval", *_configs(EXIT)), DEVIATIONS + ("method:mean",), (RETRIEVAL,)),
    Claim("htp-scifact-tp-echo", "htp", "On SciFact HTP beats Echo and Token Prepending with PromptEOL or mean "
          "pooling.", f"{HOW}: HTP against Echo (mean over the second copy), TP with its PromptEOL prompt and TP with "
          "mean pooling.", "all of: paired HTP minus each > 0", _against("retrieval", HTP, TP_ECHO),
          _work("retrieval", *_configs(TP_ECHO)), DEVIATIONS + ("method:echo", "method:token_prepending"),
          (RETRIEVAL,)),
    Claim("htp-clustering", "htp", "On clustering HTP beats PromptEOL and TP with PromptEOL.",
          "Banking77 clustering, MTEB's protocol (the task_families record's: 2,048 texts, 10 k-means fits), "
          "V-measure per fit.", "all of: paired HTP minus each > 0", _against("clustering", HTP, CLUSTER),
          _work("clustering", *_configs(CLUSTER)), DEVIATIONS + ("method:prompteol", "method:token_prepending"),
          (Evidence("Benchmark: clustering", "benchmark", {"family": "clustering"}),)),
    Claim("htp-longembed", "htp", "HTP leads on LongEmbed's real tasks at 8,192 and 16,384 tokens.",
          "Not run: the board tests long inputs on concatenated STS-B (htp-long-mean, htp-long-gap).",
          "cannot run here", refuse("LongEmbed's four real tasks (QMSum, 2WikiMQA, SummScreenFD, NarrativeQA) and "
                                    "8K-16K-token forwards of 7B-9B models"),
          refuse("LongEmbed's four real tasks and 8K-16K-token forwards of 7B-9B models"), DEVIATIONS, (RETRIEVAL,)),
    Claim("htp-finetuned", "htp", "HTP helps a fine-tuned embedder (NV-Embed-v2).",
          "Not run: needs NV-Embed-v2.", "cannot run here",
          refuse("NV-Embed-v2, a 7B fine-tuned embedder"), refuse("NV-Embed-v2, a 7B fine-tuned embedder"),
          DEVIATIONS, (RETRIEVAL,)),
]
