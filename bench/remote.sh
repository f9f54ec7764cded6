#!/usr/bin/env bash
# Remote engines against embedded ones (BENCHMARKS.md, "Scaling out"): starts an
# Oxigraph server, Virtuoso and a single-node Ceph RGW on 127.0.0.1 with scratch
# directories, runs `kgfuse-bench remote`, and stops them by pid.
#
#   bench/remote.sh [KGFUSE_BENCH] [FUNCTIONS] [LUBM_SIZE] [VECTOR_SIZES]
#
# Defaults: the release kgfuse-bench under $CARGO_TARGET_DIR, 10000 functions,
# LUBM-10, vector sizes 10000,100000. The servers come from `make test-deps`.
# PARTS=virtuoso-load starts Virtuoso alone and runs only its LUBM load
# (kgfuse load against Virtuoso's own Graph Store POST).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$HOME/.cache/kgfuse-target}
bench=${1:-$target/release/kgfuse-bench}
functions=${2:-10000}
lubm=${3:-10}
vector_sizes=${4:-10000,100000}
oxigraph=${KGFUSE_OXIGRAPH:-$HOME/.cache/kgfuse/servers/venv/bin/oxigraph}
scratch=$target/kgfuse-bench-servers
rm -rf "$scratch"
mkdir -p "$scratch"
pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for file in "$scratch"/ceph/run/*.pid; do
    [ -e "$file" ] && kill "$(cat "$file")" 2>/dev/null || true
  done
  rm -rf "$scratch"
}
trap stop EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 1 240); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $1), 1)" 2>/dev/null; then return 0; fi
    sleep 0.25
  done
  echo "nothing listens on port $1" >&2
  return 1
}

parts=${PARTS:-all}
if [ "$parts" != all ] && [ "$parts" != virtuoso-load ]; then
  echo "PARTS is all or virtuoso-load, not $parts" >&2
  exit 2
fi
ox_port=$(free_port)
if [ "$parts" = all ]; then
  "$oxigraph" serve --location "$scratch/oxigraph" --bind "127.0.0.1:$ox_port" --timeout-s 60 >"$scratch/oxigraph.log" 2>&1 &
  pids+=($!)
fi

sql_port=$(free_port)
http_port=$(free_port)
mkdir -p "$scratch/virtuoso"
cat >"$scratch/virtuoso/virtuoso.ini" <<INI
[Database]
DatabaseFile = $scratch/virtuoso/virtuoso.db
ErrorLogFile = $scratch/virtuoso/virtuoso.log
LockFile = $scratch/virtuoso/virtuoso.lck
TransactionFile = $scratch/virtuoso/virtuoso.trx
xa_persistent_file = $scratch/virtuoso/virtuoso.pxa
Striping = 0
TempStorage = TempDatabase
[TempDatabase]
DatabaseFile = $scratch/virtuoso/virtuoso-temp.db
TransactionFile = $scratch/virtuoso/virtuoso-temp.trx
Striping = 0
[Parameters]
ServerPort = 127.0.0.1:$sql_port
DisableUnixSocket = 1
CaseMode = 2
DirsAllowed = ., $scratch/virtuoso
NumberOfBuffers = 100000
MaxDirtyBuffers = 60000
ThreadsPerQuery = 2
[HTTPServer]
ServerPort = 127.0.0.1:$http_port
ServerRoot = /var/lib/virtuoso-opensource-7/vsp
ServerThreads = 10
Charset = UTF-8
[SPARQL]
ResultSetMaxRows = 10000
MaxQueryExecutionTime = 120
INI
(cd "$scratch/virtuoso" && exec virtuoso-t +foreground +configfile "$scratch/virtuoso/virtuoso.ini" >"$scratch/virtuoso/server.log" 2>&1) &
pids+=($!)
wait_port "$sql_port"
wait_port "$http_port"
isql-vt "127.0.0.1:$sql_port" dba dba 'exec=GRANT SPARQL_UPDATE TO "SPARQL";' >/dev/null

if [ "$parts" = virtuoso-load ]; then
  "$bench" --remote 0 \
    --graph-server "virtuoso=http://127.0.0.1:$http_port/sparql,,http://127.0.0.1:$http_port/sparql-graph-crud" \
    --remote-lubm "$lubm" --lubm "$root/../shared/data/lubm" --scratch "$scratch/bench"
  exit 0
fi

access=kgfuse-bench-access
secret=kgfuse-bench-secret
rgw_port=$(free_port)
"$root/tests/servers/ceph-rgw.sh" "$scratch/ceph" "$(free_port)" "$rgw_port" "$access" "$secret" kgfuse-bench
wait_port "$ox_port"

AWS_ACCESS_KEY_ID=$access AWS_SECRET_ACCESS_KEY=$secret "$bench" \
  remote "$functions" \
  --graph-server "oxigraph=http://127.0.0.1:$ox_port/query,http://127.0.0.1:$ox_port/update,http://127.0.0.1:$ox_port/store" \
  --graph-server "virtuoso=http://127.0.0.1:$http_port/sparql,,http://127.0.0.1:$http_port/sparql-graph-crud" \
  --remote-lubm "$lubm" --lubm "$root/../shared/data/lubm" \
  --vectors-s3 s3://kgfuse-bench/vectors \
  --vectors-option "aws_endpoint=http://127.0.0.1:$rgw_port" \
  --vectors-option aws_region=us-east-1 --vectors-option allow_http=true \
  --vector-sizes "$vector_sizes" \
  --scratch "$scratch/bench"
