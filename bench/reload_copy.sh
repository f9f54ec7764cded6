#!/bin/sh
# One `kgfuse load` into a copy of a prepared store, so every run starts from the
# same state (a load that replaces graphs or records new hashes changes it):
#     /usr/bin/time -v bench/reload_copy.sh NEW-KGFUSE /tmp/new-store /tmp/a ARGS...
# usage: bench/reload_copy.sh KGFUSE-BINARY PREPARED-STORE STORE-DIR LOAD-ARGS...
# (STORE-DIR is deleted, then copied from PREPARED-STORE; time the copy alone with
# `cp -a` to subtract it.)
set -eu
[ $# -ge 4 ] || { sed -n '2,7p' "$0" >&2; exit 2; }
kgfuse=$1 prepared=$2 store=$3
shift 3
rm -rf "$store"
cp -a "$prepared" "$store"
exec "$kgfuse" --data "$store" load "$@" >/dev/null
