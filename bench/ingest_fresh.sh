#!/bin/sh
# One code ingest into a fresh store (hash embedder), for timing whole runs:
#     farm-bench -n 3 --vs "bench/ingest_fresh.sh OLD-KGFUSE /tmp/b PKG" -- bench/ingest_fresh.sh NEW-KGFUSE /tmp/a PKG
# usage: bench/ingest_fresh.sh KGFUSE-BINARY STORE-DIR PACKAGE-DIR   (STORE-DIR is deleted first)
set -eu
[ $# -eq 3 ] || { sed -n '2,4p' "$0" >&2; exit 2; }
rm -rf "$2"
"$1" --data "$2" init --embedder hash >/dev/null
exec "$1" --data "$2" ingest code "$3"
