#!/usr/bin/env bash
# `make llm-serve`: starts llama.cpp's OpenAI-compatible server on 127.0.0.1 with one
# model (default qwen2.5-coder-1.5b), as many threads as cores are free, and prints
# the two environment variables kgfuse reads. Stop it with `kill $(cat PIDFILE)`.
#
#   KGFUSE_LLM_HOME   as for install.sh      LLM_MODEL  smollm2-135m | qwen2.5-coder-1.5b
#   LLM_PORT          default 8088           LLM_CTX    context size, default 4096
set -euo pipefail
HOME_DIR="${KGFUSE_LLM_HOME:-$HOME/.cache/kgfuse/llm}"
MODEL="${LLM_MODEL:-qwen2.5-coder-1.5b}"
PORT="${LLM_PORT:-8088}"
CTX="${LLM_CTX:-4096}"
case "$MODEL" in
  smollm2-135m) file="$HOME_DIR/models/smollm2-135m-instruct-q4_1.gguf" ;;
  qwen2.5-coder-1.5b) file="$HOME_DIR/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" ;;
  *) echo "unknown model $MODEL (smollm2-135m or qwen2.5-coder-1.5b)" >&2; exit 2 ;;
esac
[ -x "$HOME_DIR/venv/bin/python" ] && [ -f "$file" ] || { echo "run 'make llm' first" >&2; exit 1; }
# Free cores: all of them minus the tasks running right now (besides this script's
# own reading), at least one; LLM_THREADS overrides. A busy 2-core machine with 2
# threads collapses to 2-3 tokens/s.
cores="$(nproc)"
busy="$(awk '{ split($4, r, "/"); print r[1] - 1 }' /proc/loadavg)"
threads="${LLM_THREADS:-$(( cores - busy ))}"
[ "$threads" -ge 1 ] || threads=1
log="$HOME_DIR/server-$PORT.log"
pidfile="$HOME_DIR/server-$PORT.pid"
"$HOME_DIR/venv/bin/python" -m llama_cpp.server --model "$file" --model_alias "$MODEL" \
  --host 127.0.0.1 --port "$PORT" --n_threads "$threads" --n_ctx "$CTX" > "$log" 2>&1 &
echo $! > "$pidfile"
for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then
    echo "llama.cpp server for $MODEL on 127.0.0.1:$PORT ($threads threads), pid $(cat "$pidfile"), log $log" >&2
    echo "export KGFUSE_LLM_BASE_URL=http://127.0.0.1:$PORT/v1"
    echo "export KGFUSE_LLM_MODEL=$MODEL"
    exit 0
  fi
  kill -0 "$(cat "$pidfile")" 2>/dev/null || { echo "the server exited; see $log" >&2; exit 1; }
  sleep 1
done
echo "the server did not answer within 120 s; see $log" >&2
exit 1
