#!/usr/bin/env bash
# Installs Anthropic's Claude Code CLI (its Linux x64 native binary, from the npm registry)
# into a cache directory outside the repository (once per version), and prints the absolute
# path of the `claude` executable as the last line of stdout. Used by the `rivals` bench to
# compare one-shot runs of `claude -p` with `coder exec`. Progress goes to stderr.
#
# The npm package `@anthropic-ai/claude-code` is a launcher whose install script picks a
# native binary among its optional dependencies; the glibc Linux x64 one is the package
# `@anthropic-ai/claude-code-linux-x64` of the same version, installed here directly so no
# launcher (and no Node) sits between the spawn and the binary.
#
#   CODER_CACHE_DIR   cache root (default: $HOME/.cache/coder)
set -euo pipefail

dir="${CODER_CACHE_DIR:-$HOME/.cache/coder}/claude-code"
version="2.1.332"
marker="$dir/.installed-$version"
bin="$dir/node_modules/@anthropic-ai/claude-code-linux-x64/claude"

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    echo "setup-claude-code: only Linux x86_64 is supported (this is $(uname -s)-$(uname -m))" >&2
    exit 1
fi

if [ ! -f "$marker" ] || [ ! -x "$bin" ]; then
    echo "setup-claude-code: installing @anthropic-ai/claude-code-linux-x64@$version into $dir" >&2
    mkdir -p "$dir"
    rm -f "$dir"/.installed-*
    npm install --prefix "$dir" --no-audit --no-fund \
        "@anthropic-ai/claude-code-linux-x64@$version" >&2
    if [ ! -x "$bin" ]; then
        echo "setup-claude-code: the package did not contain $bin" >&2
        exit 1
    fi
    touch "$marker"
fi
echo "$bin"
