#!/bin/sh
# `kgfuse index cases` on real code, each step timed with its peak memory:
# DS-1000's five libraries, a case base, then the Python installation beside
# them, the case base replaced, built again with the same clusters, and the next
# process to open the store.
#     python3 bench/ds1000_sources.py OUT
#     bench/case_base_real.sh KGFUSE-BINARY STORE-DIR OUT/src     (STORE-DIR is replaced)
set -eu
[ $# -eq 3 ] || { sed -n '2,8p' "$0" >&2; exit 2; }
K=$1 S=$2 SRC=$3
T="/usr/bin/time -f %e_s_%M_KB"
rm -rf "$S"
"$K" --data "$S" init --embedder hash --dimension 384 >/dev/null
for lib in numpy pandas scipy matplotlib sklearn; do $T "$K" --data "$S" ingest code "$SRC/$lib" >/dev/null; done
echo "== index cases, the libraries"; $T "$K" --data "$S" index cases
echo "== ingest code, the installation"
$T "$K" --data "$S" ingest code "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')" >/dev/null
echo "== index cases, everything"; $T "$K" --data "$S" index cases
echo "== index cases, again"; $T "$K" --data "$S" index cases
echo "== the next process"; $T "$K" --data "$S" stats >/dev/null
du -sh "$S/graph" "$S/vectors"
