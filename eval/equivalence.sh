#!/usr/bin/env bash
# Did a change move any figure? Builds every evaluation store of EVALUATION.md
# with each of two kgfuse binaries, then compares, side by side:
#
# - the stores' quads (`kgfuse dump`, sorted) and the leave-one-out question
#   sets each binary wrote;
# - `kgfuse eval --format json` on every set with every strategy, latencies
#   left out;
# - the text-to-SPARQL development sets' per-question answers
#   (eval/text2sparql/evaluate.py, offline planner).
#
#   eval/equivalence.sh OLD_KGFUSE NEW_KGFUSE [OUT_DIR]
#
# Prints one line per comparison (EQUAL or DIFFERENT, with the first lines of a
# difference) and exits 1 when anything differs. A refactoring must leave
# every line EQUAL. Dev binaries take about 40 minutes for both sides on two
# cores; run it in the background.
set -euo pipefail

OLD="$(realpath "$1")"
NEW="$(realpath "$2")"
OUT="${3:-${CARGO_TARGET_DIR:-$HOME/.cache/kgfuse-target}/equivalence}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

# Builds and evaluates every store with one binary into $OUT/$side; a side
# already finished by the same binary (its checksum in .done) is kept.
side() {
  local side="$1" bin="$2" dir="$OUT/$1" sum
  sum="$(sha256sum < "$bin")"
  if [ "$(cat "$dir/.done" 2>/dev/null)" = "$sum" ]; then
    echo "$side: kept from an earlier run of the same binary" >&2
    return
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  KGFUSE="$bin" "$ROOT/eval/make-sets.sh" hash "$dir" 2>"$dir/make-sets.log"
  for set in policy support; do
    "$bin" --data "$dir/$set" init --embedder hash --dimension 384 >/dev/null
  done
  "$bin" --data "$dir/policy" load "$ROOT/ontology/kgfuse.ttl" \
    "$ROOT/fixtures/policy/policy.ttl" >/dev/null
  "$bin" --data "$dir/support" load "$ROOT/ontology/kgfuse.ttl" \
    "$ROOT/ontology/examples/support.ttl" "$ROOT/fixtures/support/support.ttl" >/dev/null
  for store in stdlib sgkr email lubm1 policy support; do
    "$bin" --data "$dir/$store" dump | sort > "$dir/$store.nq"
  done
  evaluate "$bin" "$dir/stdlib" "$dir/stdlib-loo.jsonl" 5 > "$dir/stdlib.eval.json"
  evaluate "$bin" "$dir/sgkr" "$dir/sgkr-loo.jsonl" 5 > "$dir/sgkr.eval.json"
  evaluate "$bin" "$dir/email" "$dir/email-loo.jsonl" 5 > "$dir/email.eval.json"
  evaluate "$bin" "$dir/policy" "$ROOT/eval/policy.jsonl" 5 > "$dir/policy.eval.json"
  evaluate "$bin" "$dir/support" "$ROOT/eval/support.jsonl" 5 > "$dir/support.eval.json"
  evaluate "$bin" "$dir/lubm1" "$ROOT/eval/lubm/lubm1.jsonl" 8 > "$dir/lubm1.eval.json"
  KGFUSE="$bin" python3 "$ROOT/eval/text2sparql/evaluate.py" --out "$dir/text2sparql" \
    > "$dir/text2sparql.log" 2>&1
  echo "$sum" > "$dir/.done"
}

evaluate() {
  "$1" --data "$2" eval "$3" --k "$4" --format json 2>/dev/null
}

# Compares two files; JSON files without their timing fields.
compare() {
  python3 - "$1" "$2" "$OUT" <<'PY'
import difflib, json, sys

TIMING = ("ms", "latency", "second", "time", "elapsed")

def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if not any(t in k for t in TIMING)}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value

def read(path):
    # Each side's stores hold its own scratch paths (LUBM's extracted files).
    text = open(path).read()
    for side in ("old", "new"):
        text = text.replace(f"{sys.argv[3]}/{side}/", "SIDE/")
    if path.endswith(".json"):
        return json.dumps(strip(json.loads(text)), indent=1, sort_keys=True)
    if path.endswith(".jsonl"):
        rows = [strip(json.loads(line)) for line in text.splitlines() if line.strip()]
        return "\n".join(json.dumps(row, sort_keys=True) for row in rows)
    return text

old, new = read(sys.argv[1]), read(sys.argv[2])
name = sys.argv[2].split("/new/", 1)[-1]
if old == new:
    print(f"EQUAL      {name}")
    sys.exit(0)
print(f"DIFFERENT  {name}")
diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=1)
for line in list(diff)[2:30]:
    print("    " + line)
sys.exit(1)
PY
}

side old "$OLD" &
old=$!
side new "$NEW" &
new=$!
wait $old && wait $new

status=0
for file in stdlib-loo.jsonl sgkr-loo.jsonl email-loo.jsonl \
  stdlib.nq sgkr.nq email.nq lubm1.nq policy.nq support.nq \
  stdlib.eval.json sgkr.eval.json email.eval.json policy.eval.json \
  support.eval.json lubm1.eval.json; do
  compare "$OUT/old/$file" "$OUT/new/$file" || status=1
done
for file in "$OUT"/old/text2sparql/*.jsonl; do
  compare "$file" "$OUT/new/text2sparql/$(basename "$file")" || status=1
done
exit $status
