#!/usr/bin/env bash
# The main job: build coder and run one agent task in this repository.
#
#   bash scripts/run.sh ["prompt"]
#
# With a provider configured (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, or the
# user-level config file; a workspace .coder/config.json names no provider until the folder
# is trusted), `coder exec` talks to it. Without one, a real local model is set up
# once (llama.cpp's OpenAI-compatible server with SmolLM2-135M-Instruct, cached in
# ${CODER_CACHE_DIR:-~/.cache/coder}), started on 127.0.0.1, and used for the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

prompt="${1:-Read README.md and say in two sentences what this project is.}"

cargo build --release --locked -p coder >&2
coder="${CARGO_TARGET_DIR:-$PWD/target}/release/coder"

if [ -n "${OPENAI_API_KEY:-}${OPENAI_BASE_URL:-}${ANTHROPIC_API_KEY:-}${ANTHROPIC_BASE_URL:-}" ] \
    || [ -f "${CODER_HOME:-${XDG_CONFIG_HOME:-$HOME/.config}/coder}/config.json" ]; then
    exec "$coder" exec "$prompt"
fi
echo "no model provider configured: using the local SmolLM2 model (the first run builds llama.cpp: about 10 minutes on 2 cores)" >&2
exec bash scripts/with-local-model.sh "$coder" exec "$prompt"
