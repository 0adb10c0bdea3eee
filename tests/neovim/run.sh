#!/usr/bin/env bash
# Runs lsp_test.lua in headless Neovim against the mock model: `coder lsp` under Neovim's
# stock LSP client and transport, with no plugin (the plugin in editors/neovim brings its
# own transport). NVIM names the Neovim to use (default: `nvim` in PATH).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="${CARGO_TARGET_DIR:-$here/../../target}"
workspace="$(mktemp -d)"
script="$workspace/script.json"
printf '%s' '[{"kind":"stream","chunks":[{"type":"text","text":"Hello "},{"type":"text","text":"from Neovim."}]}]' > "$script"
"$target/debug/coder-mock-model" --script "$script" > "$workspace/mock.url" &
mock=$!
trap 'kill $mock 2>/dev/null || true; rm -rf "$workspace"' EXIT
for _ in $(seq 1 100); do
    [ -s "$workspace/mock.url" ] && break
    sleep 0.05
done
url="$(head -n 1 "$workspace/mock.url")"
mkdir -p "$workspace/.coder"
cd "$here"
CODER_BIN="$target/debug/coder" CODER_WORKSPACE="$workspace" HOME="$workspace" TMPDIR="$workspace" \
    OPENAI_BASE_URL="$url/v1" OPENAI_API_KEY=k \
    timeout 60 "${NVIM:-nvim}" --headless -u NONE -i NONE -c "luafile lsp_test.lua"
