#!/usr/bin/env bash
# One MiniLM ingestion with a chosen backend, timed from outside (BENCHMARKS.md,
# "The MiniLM encoder"): a fresh store with `--embedder minilm`, its backend set in
# kgfuse.toml, then `kgfuse load FILES...` (or, with `code DIR`, `kgfuse ingest code DIR`).
#
#   bench/minilm-backend-load.sh packed|candle FILES...
#   bench/minilm-backend-load.sh packed|candle code DIR
#
# KGFUSE (default: the dev binary under $CARGO_TARGET_DIR) and the store directory
# ($CARGO_TARGET_DIR/minilm-backend-<backend>) can be changed by the environment.
set -euo pipefail
backend=$1
shift
target=${CARGO_TARGET_DIR:-$HOME/.cache/kgfuse-target}
kgfuse=${KGFUSE:-$target/debug/kgfuse}
store=${STORE:-$target/minilm-backend-$backend}
rm -rf "$store"
"$kgfuse" --data "$store" init --embedder minilm >/dev/null
sed -i "s/^kind = \"minilm\"/kind = \"minilm\"\nbackend = \"$backend\"/" "$store/kgfuse.toml"
if [ "${1:-}" = code ]; then
  exec "$kgfuse" --data "$store" ingest code "$2" >/dev/null
fi
exec "$kgfuse" --data "$store" load "$@" >/dev/null
