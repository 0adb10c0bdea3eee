#!/usr/bin/env bash
# Installs OpenAI's Codex CLI (its Linux x64 native binary, from the npm registry) into a
# cache directory outside the repository (once), and prints the absolute path of the
# `codex` executable as the last line of stdout. Used by the `lsp` bench to compare cold
# starts with `codex app-server`. Progress goes to stderr.
#
# The npm package `@openai/codex` is a Node launcher; the native binary ships as the
# version tag `@openai/codex@<version>-linux-x64` of the same package, installed here
# directly so no Node launcher sits between the spawn and the binary.
#
#   CODER_CACHE_DIR   cache root (default: $HOME/.cache/coder)
set -euo pipefail

dir="${CODER_CACHE_DIR:-$HOME/.cache/coder}/codex"
version="0.169.0"
target="x86_64-unknown-linux-musl"
marker="$dir/.installed-$version"
bin="$dir/node_modules/@openai/codex/vendor/$target/bin/codex"

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    echo "setup-codex: only Linux x86_64 is supported (this is $(uname -s)-$(uname -m))" >&2
    exit 1
fi

if [ ! -f "$marker" ] || [ ! -x "$bin" ]; then
    echo "setup-codex: installing @openai/codex@$version-linux-x64 into $dir" >&2
    mkdir -p "$dir"
    rm -f "$dir"/.installed-*
    npm install --prefix "$dir" --no-audit --no-fund "@openai/codex@$version-linux-x64" >&2
    if [ ! -x "$bin" ]; then
        echo "setup-codex: the package did not contain $bin" >&2
        exit 1
    fi
    touch "$marker"
fi
echo "$bin"
