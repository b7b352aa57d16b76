#!/usr/bin/env bash
# Supply-chain gate (deny.toml): licenses, duplicate versions, sources, and advisories
# against the RustSec advisory database: a clone named by COPCTL_ADVISORY_DB, else the snapshot
# in deny/advisory-db (CI cannot reach the database itself; the snapshot names the crates it
# covers, and this script warns about every locked crate it does not).
# Installs cargo-deny from crates.io (pinned, --locked) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.20.2
if ! cargo deny --version 2>/dev/null | grep -q " $version"; then
  cargo install --locked --quiet "cargo-deny@$version"
fi
# cargo-deny reads `cargo metadata`, which needs every locked crate, those of other platforms
# too: a build downloads only this platform's, so fetch the rest (from the registry) first.
cargo fetch --locked --quiet
cargo deny --offline check bans licenses sources
# cargo-deny reads the database as a git repository under this name (derived from its URL).
dbdir=target/advisory-dbs/advisory-db-3157b0e258782691
rm -rf "$dbdir"
mkdir -p target/advisory-dbs
if [ -n "${COPCTL_ADVISORY_DB:-}" ]; then
  ln -sfn "$(realpath "$COPCTL_ADVISORY_DB")" "$dbdir"
  echo "advisories: the database at $COPCTL_ADVISORY_DB"
else
  mkdir -p "$dbdir"
  cp -r deny/advisory-db/crates "$dbdir/"
  git -C "$dbdir" init -q
  git -C "$dbdir" -c user.name=deny -c user.email=deny@localhost add -A
  git -C "$dbdir" -c user.name=deny -c user.email=deny@localhost commit -q -m snapshot
  uncovered=$(grep '^name = ' Cargo.lock | cut -d'"' -f2 | sort -u | comm -23 - deny/advisory-db/covered-crates.txt)
  echo "advisories: the snapshot in deny/advisory-db ($(sed -n 's/.*at commit \([0-9a-f]\{7\}\).*/\1/p' deny/advisory-db/README.md), see its README)"
  if [ -n "$uncovered" ]; then
    echo "warning: crates newer than the advisory snapshot (refresh it): $(echo $uncovered)"
  fi
fi
cargo deny --offline check advisories
