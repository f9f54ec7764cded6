#!/usr/bin/env bash
# Fetches the W3C SHACL Core tests (w3c/data-shapes,
# data-shapes-test-suite/tests/core) at a pinned commit into the cache, once, and
# prints the directory. Used by `make test-shacl`; the tests are data, never
# committed here.
#
# w3c/data-shapes has no licence file at this commit (neither at its root nor in
# data-shapes-test-suite); the suite's README.md is taken along, and SOURCE says
# where the copy came from. W3C test suites are distributed under W3C's test-suite
# licences (https://www.w3.org/copyright/test-suites-licenses/).
#
#   KGFUSE_SHACL_DIR  cache root (default ~/.cache/kgfuse/w3c-data-shapes)
#   KGFUSE_SHACL_GIT  a local git directory or clone of w3c/data-shapes to read
#                     instead of downloading from GitHub (for machines without
#                     GitHub access)
set -euo pipefail

COMMIT=ff9edb9c85375498b49391fb65ef3ff6525ebe08
ROOT="${KGFUSE_SHACL_DIR:-$HOME/.cache/kgfuse/w3c-data-shapes}"
DEST="$ROOT/$COMMIT"
SUITE=data-shapes-test-suite

if [ -f "$DEST/$SUITE/tests/core/manifest.ttl" ] && [ -f "$DEST/COMMIT" ]; then
  echo "$DEST"
  exit 0
fi

mkdir -p "$ROOT"
tmp="$(mktemp -d "$ROOT/.fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
if [ -n "${KGFUSE_SHACL_GIT:-}" ]; then
  echo "reading w3c/data-shapes $COMMIT from $KGFUSE_SHACL_GIT" >&2
  git --git-dir="$KGFUSE_SHACL_GIT" archive "$COMMIT" "$SUITE/tests/core" "$SUITE/README.md" | tar -x -C "$tmp"
else
  url="https://codeload.github.com/w3c/data-shapes/tar.gz/$COMMIT"
  echo "downloading $url" >&2
  curl -fsSL "$url" | tar -xz -C "$tmp" --strip-components=1 \
    "data-shapes-$COMMIT/$SUITE/tests/core" "data-shapes-$COMMIT/$SUITE/README.md"
fi
test -f "$tmp/$SUITE/tests/core/manifest.ttl" || { echo "fetch-shacl.sh: no $SUITE/tests/core in the archive" >&2; exit 1; }
test -f "$tmp/$SUITE/README.md" || { echo "fetch-shacl.sh: no $SUITE/README.md in the archive" >&2; exit 1; }
cat > "$tmp/SOURCE" <<EOF
https://github.com/w3c/data-shapes at commit $COMMIT: $SUITE/tests/core and $SUITE/README.md.
The repository has no licence file at this commit. W3C test suites are distributed
under W3C's test-suite licences: https://www.w3.org/copyright/test-suites-licenses/
EOF
echo "$COMMIT" > "$tmp/COMMIT"
rm -rf "$DEST"
mv "$tmp" "$DEST"
trap - EXIT
echo "$DEST"
