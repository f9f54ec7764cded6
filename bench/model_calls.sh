#!/usr/bin/env bash
# Chat requests per question, counted at a stand-in OpenAI-compatible server
# (eval/tasks/fake_model.py, which logs each request) that gives every request
# the same reply: `kgfuse retrieve` under each strategy, then `kgfuse ask`.
#
#   bench/model_calls.sh KGFUSE REPLY-FILE [QUESTION]
#
# The store is the fixtures' org graph, policies and the payment-fees package
# (hash embedder), built fresh in a scratch directory. Prints one line per
# command: `strategy requests`. Run it with two binaries to compare them; the
# reply `{}` plays a model that replies with garbage.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
KGFUSE="$(realpath "$1")"
REPLY="$(realpath "$2")"
QUESTION="${3:-Which vendors in Norway sell pumps?}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SCRATCH="$(mktemp -d)"
trap 'kill "${SERVER:-0}" 2>/dev/null || true; rm -rf "$SCRATCH"' EXIT

DATA="$SCRATCH/data"
"$KGFUSE" --data "$DATA" init --embedder hash --dimension 128 >/dev/null
"$KGFUSE" --data "$DATA" load "$ROOT/ontology/kgfuse.ttl" "$ROOT/fixtures/org/org.ttl" \
  "$ROOT/fixtures/policy/policy.ttl" >/dev/null
"$KGFUSE" --data "$DATA" ingest code "$ROOT/fixtures/payment-fees" \
  --knowledge "$ROOT/fixtures/payment-fees/knowledge.toml" >/dev/null 2>&1

LOG="$SCRATCH/asked.jsonl"
python3 "$ROOT/eval/tasks/fake_model.py" --reply-file "$REPLY" --log "$LOG" > "$SCRATCH/port" &
SERVER=$!
for _ in $(seq 50); do [ -s "$SCRATCH/port" ] && break; sleep 0.1; done
export KGFUSE_LLM_BASE_URL="http://127.0.0.1:$(cat "$SCRATCH/port")/v1" KGFUSE_LLM_MODEL=fake

count() {
  rm -f "$LOG"
  "$KGFUSE" --data "$DATA" "$@" --format json >/dev/null 2>&1
  if [ -f "$LOG" ]; then wc -l < "$LOG"; else echo 0; fi
}
for strategy in flat bm25 hybrid paths neighborhood domain unified auto; do
  echo "$strategy $(count retrieve "$QUESTION" --strategy "$strategy")"
done
echo "ask $(count ask "$QUESTION")"
