#!/usr/bin/env bash
# The golden suite: what kgfuse makes of every development question, offline,
# checked in under eval/golden/ so that a change to understanding shows as a
# diff of these files in review.
#
#   eval/golden.sh [KGFUSE]      # rewrites eval/golden/*.jsonl; then: git diff eval/golden
#
# Per question of the text-to-SPARQL development sets (eval/text2sparql: LUBM-1
# and payments), one line per system: `planner` (the answer set's query, as
# GET /text2sparql returns it: the understanding's plan, or a lookup's best query
# graph) and `query graphs` (the best query graph alone), each with the query,
# its values (count and the first 20, sorted) and its set precision, recall and
# F against the true result set. Timings are left out. KGFUSE (or the first
# argument) names the binary; a dev build takes about 10 minutes.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KGFUSE="$(realpath "${1:-${KGFUSE:-$(command -v kgfuse)}}")"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
KGFUSE="$KGFUSE" python3 "$ROOT/eval/text2sparql/evaluate.py" --out "$SCRATCH" > "$SCRATCH/summary.txt"
mkdir -p "$ROOT/eval/golden"
for file in "$SCRATCH"/*.jsonl; do
  python3 - "$file" "$ROOT/eval/golden/$(basename "$file")" <<'PY'
import json, sys
with open(sys.argv[1]) as lines, open(sys.argv[2], "w") as out:
    for line in lines:
        row = json.loads(line)
        row.pop("seconds", None)
        out.write(json.dumps(row, sort_keys=True) + "\n")
PY
done
cat "$SCRATCH/summary.txt"
echo "golden files in $ROOT/eval/golden; git diff eval/golden shows what changed" >&2
