#!/usr/bin/env bash
# The book (docs/): built with mdBook 0.5.4 into docs/book/ (not committed). mdBook comes from
# PyPI's package of it, pinned by hash (docs/mdbook-requirements.txt): it installs in seconds,
# where compiling mdBook from crates.io costs minutes of CI's two cores. A warning or error from
# mdBook fails the build.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.peers/mdbook
if ! "$venv/bin/mdbook" --version 2>/dev/null | grep -q 'v0.5.4'; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --require-hashes -r docs/mdbook-requirements.txt
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$venv/bin/mdbook" build docs >"$log" 2>&1 || { cat "$log"; exit 1; }
if grep -E 'WARN|ERROR' "$log"; then
  echo "book: mdBook warned (above)" >&2
  exit 1
fi
echo "book: $(find docs/book -name '*.html' | wc -l) pages in docs/book/"
