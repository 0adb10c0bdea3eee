#!/usr/bin/env bash
# Installs coder as the README says (`cargo install --path server/cli`) into a temporary
# root, then runs the installed binary: `coder --version` and one `coder exec` against the
# scripted mock model (`coder-mock-model`). It reuses the build's target directory, so it
# costs a link, not a build.
#
#   bash scripts/check-install.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
root="$(mktemp -d)"
mock=""
cleanup() {
    if [ -n "$mock" ]; then kill "$mock" 2>/dev/null || true; fi
    rm -rf "$root"
}
trap cleanup EXIT

cargo install --debug --locked --quiet --path server/cli --root "$root" --target-dir "$target"
coder="$root/bin/coder"
"$coder" --version

cargo build --locked --quiet -p coder-testkit
printf '%s' '[{"kind":"stream","chunks":[{"type":"text","text":"installed and working"}]}]' \
    > "$root/script.json"
"$target/debug/coder-mock-model" --script "$root/script.json" > "$root/mock.url" &
mock=$!
for _ in $(seq 1 100); do
    [ -s "$root/mock.url" ] && break
    sleep 0.05
done
mkdir "$root/work"
reply="$(cd "$root/work" && env -i PATH="$PATH" HOME="$root" \
    OPENAI_BASE_URL="$(head -n 1 "$root/mock.url")/v1" "$coder" exec "say it")"
if [ "$reply" != "installed and working" ]; then
    printf 'error: the installed coder replied %q\n' "$reply" >&2
    exit 1
fi
echo "the installed coder works"
