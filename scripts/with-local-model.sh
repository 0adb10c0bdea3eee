#!/usr/bin/env bash
# Run a command against a real local OpenAI-compatible model server.
#
#   scripts/with-local-model.sh CMD [ARGS...]
#
# Ensures the local model is installed (scripts/setup-local-model.sh), starts
# llama-cpp-python's server with SmolLM2-135M-Instruct on a free 127.0.0.1
# port, waits until it answers GET /v1/models, then runs CMD with
#
#   OPENAI_BASE_URL=http://127.0.0.1:PORT/v1
#   CODER_MODEL=smollm2
#
# and OPENAI_API_KEY / ANTHROPIC_API_KEY removed from its environment. The
# server is stopped when the script exits (normally, on error or on Ctrl-C),
# and the script exits with CMD's exit status. If the server dies while CMD
# runs, the script says how (exit status or signal) with the tail of the
# server's log, stops CMD and exits 1.
#
# Environment:
#   CODER_CACHE_DIR              cache root (see setup-local-model.sh)
#   CODER_LOCAL_MODEL_TIMEOUT    seconds to wait for readiness (default 120)
#   CODER_LOCAL_MODEL_CTX        context size in tokens (default 8192: the system prompt and
#                                the tools described in it take about 2,500)
#   CODER_LOCAL_MODEL_LOG        keep the server log at this path instead of
#                                a temp file that is deleted on exit
set -euo pipefail

if [ "$#" -eq 0 ]; then
    printf 'usage: %s CMD [ARGS...]\n' "$0" >&2
    exit 2
fi

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_DIR="${CODER_CACHE_DIR:-$HOME/.cache/coder}"
VENV_PY="$CACHE_DIR/llama-venv/bin/python"
TIMEOUT="${CODER_LOCAL_MODEL_TIMEOUT:-120}"
N_CTX="${CODER_LOCAL_MODEL_CTX:-8192}"
MODEL_ALIAS="smollm2"

log() { printf '[with-local-model] %s\n' "$*" >&2; }

# Setup prints progress on stderr and the GGUF path as its last stdout line.
GGUF="$(bash "$SCRIPT_DIR/setup-local-model.sh" | tail -n 1)"
if [ -z "$GGUF" ] || [ ! -f "$GGUF" ]; then
    log "setup did not produce a model file (got: '$GGUF')"
    exit 1
fi

server_pid=""
server_log=""
keep_log=0
if [ -n "${CODER_LOCAL_MODEL_LOG:-}" ]; then
    server_log="$CODER_LOCAL_MODEL_LOG"
    keep_log=1
    : >"$server_log"
else
    server_log="$(mktemp "${TMPDIR:-/tmp}/coder-llama-server.XXXXXX.log")"
fi

# shellcheck disable=SC2317  # invoked indirectly via the EXIT trap
stop_server() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        # Give uvicorn a moment to shut down cleanly, then force it.
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    server_pid=""
}

# shellcheck disable=SC2317  # invoked indirectly via the EXIT trap
cleanup() {
    stop_server
    if [ "$keep_log" -eq 0 ] && [ -n "$server_log" ]; then
        rm -f "$server_log"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

show_log_tail() {
    log "---- llama server log (last 40 lines of $server_log) ----"
    tail -n 40 "$server_log" >&2 || true
    log "---- end of server log ----"
}

free_port() {
    "$VENV_PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

threads="$(nproc 2>/dev/null || echo 2)"

# Runs `python -m llama_cpp.server ARGS...` after arming PR_SET_PDEATHSIG.
# argv[1] is this script's pid (to close the race where we died before prctl).
SERVER_LAUNCHER='import ctypes, os, runpy, signal, sys
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
except Exception:
    pass
if os.getppid() != int(sys.argv[1]):
    sys.exit("parent already exited")
sys.argv = ["llama_cpp.server"] + sys.argv[2:]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)'

# Start the server; retry a couple of times in case the port we picked got
# taken between probing and binding.
ready=0
for attempt in 1 2 3; do
    port="$(free_port)"
    base_url="http://127.0.0.1:$port/v1"
    log "starting llama server on 127.0.0.1:$port (attempt $attempt, log: $server_log)"
    start_ts="$(date +%s)"
    # The launcher asks the kernel to SIGTERM the server if this script dies
    # without running its trap (e.g. SIGKILL), so no server is ever leaked.
    "$VENV_PY" -c "$SERVER_LAUNCHER" "$$" \
        --model "$GGUF" \
        --model_alias "$MODEL_ALIAS" \
        --host 127.0.0.1 \
        --port "$port" \
        --n_ctx "$N_CTX" \
        --n_batch 512 \
        --n_threads "$threads" \
        --n_threads_batch "$threads" \
        --n_gpu_layers 0 \
        --verbose false \
        --interrupt_requests false \
        </dev/null >>"$server_log" 2>&1 &
    server_pid=$!

    while :; do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            wait "$server_pid" 2>/dev/null || true
            server_pid=""
            break
        fi
        if curl -sf -o /dev/null --max-time 2 "$base_url/models"; then
            ready=1
            break
        fi
        if [ $(($(date +%s) - start_ts)) -ge "$TIMEOUT" ]; then
            log "server did not become ready within ${TIMEOUT}s"
            show_log_tail
            exit 1
        fi
        sleep 0.5
    done
    [ "$ready" -eq 1 ] && break
    if grep -qi 'address already in use' "$server_log"; then
        log "port $port was taken; retrying with another port"
        continue
    fi
    break
done

if [ "$ready" -ne 1 ]; then
    log "llama server exited before becoming ready"
    show_log_tail
    exit 1
fi
log "server ready at $base_url after $(($(date +%s) - start_ts))s (pid $server_pid)"

# Run the command with the local server configured and cloud keys removed, and watch the
# server meanwhile: if it dies (a crash in llama.cpp, the OOM killer), say so with its exit
# status and the tail of its log, and stop the command, instead of leaving the command to
# retry a closed port. Not exec'd: we need to stay around to stop the server afterwards.
# The command runs in the background with this script's stdin (a background job would
# otherwise read /dev/null), so `coder exec` can still ask on the terminal.
exec 3<&0
env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY \
    OPENAI_BASE_URL="$base_url" \
    CODER_MODEL="$MODEL_ALIAS" \
    "$@" <&3 &
command_pid=$!
exec 3<&-

set +e
while :; do
    wait -n -p finished "$command_pid" "$server_pid"
    code=$?
    if [ "${finished:-}" = "$command_pid" ]; then
        status=$code
        break
    fi
    if [ "${finished:-}" = "$server_pid" ]; then
        server_pid=""
        if [ "$code" -gt 128 ]; then
            how="was killed by signal $((code - 128)) ($(kill -l "$((code - 128))" 2>/dev/null || echo '?'))"
        else
            how="exited with status $code"
        fi
        log "the local model server $how while the command was running"
        show_log_tail
        pkill -TERM -P "$command_pid" 2>/dev/null
        kill -TERM "$command_pid" 2>/dev/null
        wait "$command_pid" 2>/dev/null
        status=1
        break
    fi
    # A signal interrupted `wait` (the trap runs and exits); anything else: ask again.
done
set -e
exit "$status"
