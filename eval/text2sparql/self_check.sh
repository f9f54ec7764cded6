#!/usr/bin/env bash
# Proves that SET/questions.yaml and SET/gold.json are in the form the official client
# reads, by running the client itself:
#
#     eval/text2sparql/self_check.sh [SET...]        # lubm1 payments by default
#
# For each set it starts rdflib_endpoint.py on a free loopback port (a SPARQL endpoint
# at /sparql and a TEXT2SPARQL "oracle" at / that answers each question with its gold
# query) and then
#  1. `text2sparql query SET/questions.yaml -e SPARQL_URL` (the true result set, as the
#     challenge computes it from an endpoint) must equal the committed gold.json;
#  2. `text2sparql ask SET/questions.yaml ORACLE_URL` collects the answers of a perfect
#     system, `text2sparql query -a ANSWERS` turns them into the predicted result set,
#     which must equal gold.json without its order_required list, and
#  3. `text2sparql evaluate gold SET/gold.json PRED` must score set_F 1.0 on every
#     question but the ASK questions whose answer is false: the client's metric
#     (trec_eval's set_F over the key "true" with relevance 0) scores those 0.0 for any
#     answer, the right one included. (Evaluating gold.json against itself directly
#     fails inside the client: it treats the order_required list as a question.)
# Uses the venv of install_client.sh (VENV, default ~/.cache/kgfuse/text2sparql-venv).
# Work files go to a temporary directory (kept with KEEP=1); exits 1 on any mismatch.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${VENV:-$HOME/.cache/kgfuse/text2sparql-venv}
PY="$VENV/bin/python"
T2S="$VENV/bin/text2sparql"
[ -x "$T2S" ] || { echo "no text2sparql in $VENV: run eval/text2sparql/install_client.sh" >&2; exit 1; }
SETS=("$@")
[ ${#SETS[@]} -gt 0 ] || SETS=(lubm1 payments)

WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    if [ "${KEEP:-0}" = 1 ]; then echo "work files kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

for SET in "${SETS[@]}"; do
    echo "== $SET"
    "$PY" "$HERE/rdflib_endpoint.py" "$SET" --port 0 ${LUBM:+--lubm "$LUBM"} >"$WORK/$SET-endpoint.out" 2>&1 &
    SERVER_PID=$!
    URL=
    for _ in $(seq 1 600); do
        URL=$(sed -n 's/^ready //p' "$WORK/$SET-endpoint.out")
        [ -n "$URL" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/$SET-endpoint.out" >&2; exit 1; }
        sleep 0.5
    done
    [ -n "$URL" ] || { echo "the endpoint did not start" >&2; exit 1; }
    echo "endpoint $URL"

    set -x
    "$T2S" query "$HERE/$SET/questions.yaml" -e "$URL" -o "$WORK/$SET-true.json"
    "$T2S" ask "$HERE/$SET/questions.yaml" "${URL%/sparql}/" --answers-db "$WORK/$SET-responses.db" \
        --retries-log "$WORK/$SET-retries.log" --retries 0 -o "$WORK/$SET-answers.json"
    "$T2S" query "$HERE/$SET/questions.yaml" -a "$WORK/$SET-answers.json" -e "$URL" -o "$WORK/$SET-pred.json"
    "$T2S" evaluate gold "$HERE/$SET/gold.json" "$WORK/$SET-pred.json" -o "$WORK/$SET-metrics.json"
    { set +x; } 2>/dev/null

    kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=

    "$PY" - "$HERE/$SET/gold.json" "$WORK/$SET-true.json" "$WORK/$SET-pred.json" "$WORK/$SET-metrics.json" <<'PYEOF'
import json, sys
gold, true, pred, metrics = (json.load(open(p)) for p in sys.argv[1:5])
def differ(a, b):
    return [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
if gold != true:
    sys.exit(f"text2sparql query's true result set differs from gold.json at {differ(gold, true)[:10]}")
print(f"text2sparql query -e rdflib endpoint == gold.json ({len(gold) - ('order_required' in gold)} questions)")
bare = {k: v for k, v in gold.items() if k != "order_required"}
if pred != bare:
    sys.exit(f"the predicted result set of a perfect system differs from gold.json at {differ(bare, pred)[:10]}")
print("text2sparql ask (oracle) + query -a == gold.json without order_required")
false_asks = {k for k, v in gold.items() if k != "order_required" and v == {"true": 0}}
wrong = []
for k, v in metrics.items():
    if k == "average":
        continue
    want = 0.0 if k in false_asks else 1.0
    if v["set_F"] != want or ("ndcg" in v and v["ndcg"] != 1.0):
        wrong.append((k, v))
if wrong:
    sys.exit(f"unexpected scores: {wrong}")
missing = set(gold) - {"order_required"} - set(metrics)
if missing:
    sys.exit(f"not evaluated: {sorted(missing)}")
avg = metrics["average"]
n = len(metrics) - 1
print(f"text2sparql evaluate: set_F 1.0 on {n - len(false_asks)} of {n} questions, "
      f"0.0 on the {len(false_asks)} false ASK questions ({', '.join(sorted(false_asks))}); "
      + "average " + ", ".join(f"{m} {avg[m]:.4f}" for m in sorted(avg)))
PYEOF
done
