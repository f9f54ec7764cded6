#!/bin/sh
# One write of a one-node file, then the first `bm25` question of a fresh
# process: what a script that loads and asks pays for the lexicon after a write.
#     farm-bench -n 3 --vs "bench/lexicon_after_write.sh OLD-KGFUSE STORE-B" -- bench/lexicon_after_write.sh NEW-KGFUSE STORE-A
# usage: bench/lexicon_after_write.sh KGFUSE-BINARY STORE-DIR   (the store is written to)
set -eu
[ $# -eq 2 ] || { sed -n '2,5p' "$0" >&2; exit 2; }
node="urn:bench:node$(date +%s%N)"
file="$(mktemp --suffix=.ttl)"
trap 'rm -f "$file"' EXIT
printf '<%s> <http://www.w3.org/2000/01/rdf-schema#label> "expansion vessel %s" .\n' "$node" "$node" > "$file"
"$1" --data "$2" load "$file" >/dev/null
exec "$1" --data "$2" retrieve "expansion vessel" --strategy bm25 --format json
