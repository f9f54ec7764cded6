#!/bin/sh
# `kgfuse index cases` on a fresh copy of a store, for timing whole runs:
#     farm-bench -n 3 --vs "bench/case_base_fresh.sh OLD-KGFUSE STORE /tmp/b" -- bench/case_base_fresh.sh NEW-KGFUSE STORE /tmp/a
# usage: bench/case_base_fresh.sh KGFUSE-BINARY STORE-DIR COPY-DIR   (COPY-DIR is replaced by a copy of STORE-DIR first)
set -eu
[ $# -eq 3 ] || { sed -n '2,4p' "$0" >&2; exit 2; }
rm -rf "$3"
cp -a "$2" "$3"
exec "$1" --data "$3" index cases
