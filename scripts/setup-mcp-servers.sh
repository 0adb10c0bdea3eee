#!/usr/bin/env bash
# Installs the reference MCP servers used by the tests into a cache directory outside the
# repository (once), and prints that directory. They are run as `node .../dist/index.js`,
# never through npx at test time.
#
#   CODER_CACHE_DIR   cache root (default: $HOME/.cache/coder)
set -euo pipefail

dir="${CODER_CACHE_DIR:-$HOME/.cache/coder}/mcp-servers"
version="2026.8.31"
marker="$dir/.installed-$version"
if [ ! -f "$marker" ]; then
    mkdir -p "$dir"
    cd "$dir"
    [ -f package.json ] || npm init -y >/dev/null
    npm install --no-audit --no-fund \
        "@modelcontextprotocol/server-everything@$version" \
        "@modelcontextprotocol/server-filesystem@$version" >&2
    touch "$marker"
fi
echo "$dir"
