#!/usr/bin/env bash
# Re-ingest of one changed file with RDFS entailment on: is the derived-graph
# update proportional to the change or to the store? Two stores, one holding
# CPython's `json` package only and one holding twelve stdlib packages (json among
# them); one function is appended to json/decoder.py and `json` re-ingested, three
# times per store; the store's debug log gives the entailment step's own time.
# Then a schema change forces a full rebuild of the large store's derived graph,
# for scale.
#
#   bench/entailment/reingest.sh [WORK_DIR]    (needs `kgfuse` on PATH and python3)
set -euo pipefail
WORK="${1:-${CARGO_TARGET_DIR:-$HOME/.cache/kgfuse-target}/reingest}"
LIB="$(python3 -c 'import os, json; print(os.path.dirname(os.path.dirname(json.__file__)))')"
PACKAGES="json email asyncio xml http logging unittest concurrent importlib urllib multiprocessing tomllib"

rm -rf "$WORK" && mkdir -p "$WORK/lib" && cd "$WORK"
for p in $PACKAGES; do cp -r "$LIB/$p" lib/; done
find lib -name __pycache__ -prune -exec rm -rf {} +
cp lib/json/decoder.py decoder.orig.py

kgfuse --data small init --embedder hash >/dev/null
kgfuse --data big init --embedder hash >/dev/null
kgfuse --data small ingest code lib/json >/dev/null
for p in $PACKAGES; do kgfuse --data big ingest code "lib/$p" >/dev/null; done
for s in small big; do
  echo "$s: $(kgfuse --data $s stats | sed -n 1,2p | tr -s ' \n' ' ')"
done

for run in 1 2 3; do
  for s in small big; do
    cp decoder.orig.py lib/json/decoder.py
    printf '\n\ndef kgfuse_probe_%s_%s(text):\n    """Probe."""\n    return JSONDecoder().decode(text)\n' "$run" "$s" >> lib/json/decoder.py
    line=$(KGFUSE_LOG=kgfuse_store=debug kgfuse --data "$s" ingest code lib/json 2>&1 >/dev/null \
      | grep 'entailment recomputed' | sed 's/.*touched nodes //')
    echo "$s run $run: $line"
  done
done
cp decoder.orig.py lib/json/decoder.py

schema='GRAPH <urn:probe> { <urn:a> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <urn:b> }'
KGFUSE_LOG=kgfuse_store=debug kgfuse --data big sparql --update "INSERT DATA { $schema }" 2>&1 \
  | grep 'derived graph rebuilt' | sed 's/.*rebuilt/big full rebuild:/'
kgfuse --data big sparql --update 'DROP GRAPH <urn:probe>' >/dev/null 2>&1
