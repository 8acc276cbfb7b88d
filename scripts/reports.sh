#!/usr/bin/env bash
# Regenerate the model reports of both built-in models under docs/reports/ (issue 27): <model>.html (figures
# interactive offline, about 0.1 MB each: both load plotly.js from the one plotly.gz.js beside them, 1.9 MB) and
# <model>.json (every number). The pairs are STS-B dev's report part (no trainer selected its checkpoint on them).
#
#   bash scripts/reports.sh                       # 500 report-part pairs stratified by genre, seed 0, 120 min each
#   SAMPLE=200 BUDGET=45 bash scripts/reports.sh  # a quicker look
#   bash scripts/reports.sh --executor ray        # extra flags go to every `python -m analysis report`
#
# Long. Estimates printed by the command itself here (a 2-core CPU shared with a training run), 500 pairs = 993 texts:
# SmolLM2 0.06 s per text forward, quality table (ten methods, two of them trained; and the polarity probe's 200
# texts) 23 min, cost 1 min, mechanism 1 min, layer map of 84 cells 56 min: about 1 h 20 min; Gemma 3 270M 0.07 s per
# text, quality (eight methods, no trained weights for it) 20 min, cost 1 min, layer map of 51 cells 40 min: about 1
# h. Under heavier load a forward took up to 0.16 s: the layer map is then planned smaller so the whole fits the
# budget (the budget is planned before each run, not enforced inside a section). --no-budgets: the app's per-request
# limits (64 map cells) are for interactive use, not for this. Stopped (Ctrl-C, a lost session)? Run it again: every
# finished embedding and layer-map cell comes from the cache. STS-B must be present: `python -m analysis data fetch
# stsb`.
set -euo pipefail
cd "$(dirname "$0")/.."
SAMPLE=${SAMPLE:-500}
BUDGET=${BUDGET:-120}
mkdir -p docs/reports
for model in smollm2-135m gemma3-270m; do
    python -m analysis report --model "$model" --data stsb-dev-report --sample "$SAMPLE" --seed 0 \
        --budget-minutes "$BUDGET" --no-budgets --shared-plotly --out "docs/reports/$model.html" "$@"
done
