#!/usr/bin/env bash
# Builds the evaluation stores and question sets of EVALUATION.md from real data.
#
#   eval/make-sets.sh [hash|static|minilm] [OUT_DIR]
#
# EMBED_CODE=1 adds kgfuse:code (function and case bodies) to every store's embedded
# text predicates, EMBED_CODE=0 removes it; unset keeps `kgfuse init`'s default.
#
# - stdlib: CPython's json, csv, textwrap, statistics and pathlib with their tests,
#   leave-one-out over the test cases (`kgfuse eval make-loo`);
# - sgkr:   the payment-fees fixture, leave-one-out over its solved examples;
# - email:  CPython's email package alone; the questions come from its tests
#           (leave-one-out in a second store that holds them), but the store that is
#           evaluated never saw the tests: function retrieval on an unseen package;
# - lubm:   LUBM-1 (../shared/data/lubm) loaded as it comes, for eval/lubm/lubm1.jsonl.
# Needs the `kgfuse` binary on PATH (or KGFUSE=path) and python3 for the stdlib path.
set -euo pipefail

EMBEDDER="${1:-hash}"
OUT="${2:-${CARGO_TARGET_DIR:-$HOME/.cache/kgfuse-target}/eval-$EMBEDDER}"
KGFUSE="${KGFUSE:-kgfuse}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LIB="$(python3 -c 'import os, json; print(os.path.dirname(os.path.dirname(json.__file__)))')"

init() {
  rm -rf "$1"
  if [ "$EMBEDDER" = minilm ] || [ "$EMBEDDER" = static ]; then
    "$KGFUSE" --data "$1" init --embedder "$EMBEDDER" >/dev/null
  else
    "$KGFUSE" --data "$1" init --embedder hash --dimension 384 >/dev/null
  fi
  if [ -n "${EMBED_CODE:-}" ]; then
    embed_code "$1/kgfuse.toml" "$EMBED_CODE"
  fi
}

# Adds (1) or removes (0) kgfuse:code in a fresh store's text_predicates.
embed_code() {
  python3 - "$1" "$2" <<'PY'
import sys
path, wanted = sys.argv[1], sys.argv[2] == "1"
code = '    "https://w3id.org/kgfuse/ontology#code",\n'
lines = [l for l in open(path) if l != code]
if wanted:
    # Last: the lowest priority, where `kgfuse init` puts it.
    lines.insert(lines.index("]\n", lines.index("text_predicates = [\n")), code)
open(path, "w").writelines(lines)
PY
}

mkdir -p "$OUT"

echo "== stdlib store ($EMBEDDER) in $OUT/stdlib" >&2
init "$OUT/stdlib"
"$KGFUSE" --data "$OUT/stdlib" ingest code "$LIB/json" >&2
for module in csv textwrap statistics pathlib; do
  "$KGFUSE" --data "$OUT/stdlib" ingest code "$LIB/$module.py" >&2
done
"$KGFUSE" --data "$OUT/stdlib" ingest code "$LIB/test/test_json" >&2
for module in csv textwrap statistics pathlib; do
  "$KGFUSE" --data "$OUT/stdlib" ingest code "$LIB/test/test_$module.py" >&2
done
"$KGFUSE" --data "$OUT/stdlib" index cases >&2
: > "$OUT/stdlib-loo.jsonl"
"$KGFUSE" --data "$OUT/stdlib" eval make-loo --package json --tests "$LIB/test/test_json" \
  >> "$OUT/stdlib-loo.jsonl"
for module in csv textwrap statistics pathlib; do
  "$KGFUSE" --data "$OUT/stdlib" eval make-loo --package "$module" \
    --tests "$LIB/test/test_$module.py" >> "$OUT/stdlib-loo.jsonl"
done

echo "== sgkr store ($EMBEDDER) in $OUT/sgkr" >&2
init "$OUT/sgkr"
"$KGFUSE" --data "$OUT/sgkr" ingest code "$ROOT/fixtures/payment-fees" \
  --knowledge "$ROOT/fixtures/payment-fees/knowledge.toml" >&2
"$KGFUSE" --data "$OUT/sgkr" index cases >&2
"$KGFUSE" --data "$OUT/sgkr" eval make-loo --package payment_fees \
  --tests "$ROOT/fixtures/payment-fees/examples" > "$OUT/sgkr-loo.jsonl"

echo "== email store ($EMBEDDER) in $OUT/email, questions from its tests" >&2
init "$OUT/email-tests"
"$KGFUSE" --data "$OUT/email-tests" ingest code "$LIB/email" >&2
"$KGFUSE" --data "$OUT/email-tests" ingest code "$LIB/test/test_email" >&2
"$KGFUSE" --data "$OUT/email-tests" eval make-loo --package email \
  --tests "$LIB/test/test_email" > "$OUT/email-loo.jsonl"
rm -rf "$OUT/email-tests"
init "$OUT/email"
"$KGFUSE" --data "$OUT/email" ingest code "$LIB/email" >&2
"$KGFUSE" --data "$OUT/email" index cases >&2

LUBM="${LUBM:-$ROOT/../shared/data/lubm/lubm1.tar.gz}"
if [ -f "$LUBM" ]; then
  echo "== lubm store ($EMBEDDER) in $OUT/lubm1" >&2
  rm -rf "$OUT/lubm1-files" && mkdir -p "$OUT/lubm1-files"
  tar xzf "$LUBM" -C "$OUT/lubm1-files" --wildcards '*.owl'
  init "$OUT/lubm1"
  find "$OUT/lubm1-files" -name '*.owl' -print0 | sort -z \
    | xargs -0 "$KGFUSE" --data "$OUT/lubm1" load >&2
else
  echo "== no LUBM archive at $LUBM: lubm store skipped" >&2
fi

wc -l "$OUT"/*.jsonl >&2
