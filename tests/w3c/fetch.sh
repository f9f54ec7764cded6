#!/usr/bin/env bash
# Fetches the W3C SPARQL 1.1 tests (w3c/rdf-tests, sparql/sparql11, with the
# suite's LICENSE.md) at a pinned commit into the cache, once, and prints the
# directory. Used by `make test-w3c`; the tests are data, never committed here.
#
#   KGFUSE_W3C_DIR  cache root (default ~/.cache/kgfuse/w3c-rdf-tests)
#   KGFUSE_W3C_GIT  a local git directory or clone of w3c/rdf-tests to read instead
#                   of downloading from GitHub (for machines without GitHub access)
set -euo pipefail

COMMIT=ad541a5f0479f0798608c4801369d97b8e08b36f
ROOT="${KGFUSE_W3C_DIR:-$HOME/.cache/kgfuse/w3c-rdf-tests}"
DEST="$ROOT/$COMMIT"

if [ -f "$DEST/sparql/sparql11/manifest-all.ttl" ] && [ -f "$DEST/COMMIT" ]; then
  echo "$DEST"
  exit 0
fi

mkdir -p "$ROOT"
tmp="$(mktemp -d "$ROOT/.fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
if [ -n "${KGFUSE_W3C_GIT:-}" ]; then
  echo "reading w3c/rdf-tests $COMMIT from $KGFUSE_W3C_GIT" >&2
  git --git-dir="$KGFUSE_W3C_GIT" archive "$COMMIT" sparql/sparql11 LICENSE.md | tar -x -C "$tmp"
else
  url="https://codeload.github.com/w3c/rdf-tests/tar.gz/$COMMIT"
  echo "downloading $url" >&2
  curl -fsSL "$url" | tar -xz -C "$tmp" --strip-components=1 \
    "rdf-tests-$COMMIT/sparql/sparql11" "rdf-tests-$COMMIT/LICENSE.md"
fi
test -f "$tmp/sparql/sparql11/manifest-all.ttl" || { echo "fetch.sh: no sparql/sparql11 in the archive" >&2; exit 1; }
test -f "$tmp/LICENSE.md" || { echo "fetch.sh: no LICENSE.md in the archive" >&2; exit 1; }
echo "$COMMIT" > "$tmp/COMMIT"
rm -rf "$DEST"
mv "$tmp" "$DEST"
trap - EXIT
echo "$DEST"
