#!/bin/sh
# One `kgfuse load` of RDF files into a fresh store (hash embedder), for timing
# whole runs, alternating two binaries:
#     /usr/bin/time -v bench/load_fresh.sh NEW-KGFUSE /tmp/a F...; /usr/bin/time -v bench/load_fresh.sh OLD-KGFUSE /tmp/b F...
# usage: bench/load_fresh.sh KGFUSE-BINARY STORE-DIR FILE...   (STORE-DIR is deleted first)
set -eu
[ $# -ge 3 ] || { sed -n '2,5p' "$0" >&2; exit 2; }
kgfuse=$1 store=$2
shift 2
rm -rf "$store"
"$kgfuse" --data "$store" init --embedder hash >/dev/null
exec "$kgfuse" --data "$store" load "$@" >/dev/null
