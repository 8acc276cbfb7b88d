#!/usr/bin/env bash
# Regenerate the model reports of both built-in models under docs/reports/ (issue 27): <model>.html (standalone,
# figures interactive offline, about 2 MB: plotly.js embedded once, compressed) and <model>.json (every number).
#
#   bash scripts/reports.sh                       # STS-B dev, 500 pairs stratified by genre, seed 0, 120 min each
#   SAMPLE=200 BUDGET=45 bash scripts/reports.sh  # a quicker look
#   bash scripts/reports.sh --executor ray        # extra flags go to every `python -m analysis report`
#
# Long: on a 2-core CPU shared with other work, SmolLM2 takes about 0.16 s per text forward, so its quality table
# (ten methods over the sample's ~1,000 texts) is about 55 min, the cost section 3 min, the mechanism 3 min, and
# the layer map takes what is left of the budget (20 cells, about 40 min): about 1 h 40 min. Gemma 3 270M has no
# trained weights here (eight methods) but about twice the cost per forward: about the same. Each command prints
# its estimate before it starts. Stopped (Ctrl-C, a lost session)? Run it again: every finished embedding and
# layer-map cell comes from the cache. STS-B must be present: `python -m analysis data fetch stsb`.
set -euo pipefail
cd "$(dirname "$0")/.."
SAMPLE=${SAMPLE:-500}
BUDGET=${BUDGET:-120}
mkdir -p docs/reports
for model in smollm2-135m gemma3-270m; do
    python -m analysis report --model "$model" --data stsb-dev --sample "$SAMPLE" --seed 0 \
        --budget-minutes "$BUDGET" --out "docs/reports/$model.html" "$@"
done
