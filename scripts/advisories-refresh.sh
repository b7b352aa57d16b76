#!/usr/bin/env bash
# Refreshes deny/advisory-db/ from a clone of the RustSec advisory database: the advisories of
# every crate in Cargo.lock, and the list of crates that were looked up.
set -euo pipefail
cd "$(dirname "$0")/.."
db=${1:?usage: scripts/advisories-refresh.sh PATH/TO/advisory-db}
out=deny/advisory-db
rm -rf "$out/crates"
mkdir -p "$out/crates"
grep '^name = ' Cargo.lock | cut -d'"' -f2 | sort -u > "$out/covered-crates.txt"
while read -r c; do
  if [ -d "$db/crates/$c" ]; then cp -r "$db/crates/$c" "$out/crates/"; fi
done < "$out/covered-crates.txt"
cp "$db/LICENSE.txt" "$out/LICENSE.txt"
commit=$(git -C "$db" log -1 --format='%H (%cs)')
echo "snapshot of $commit: update the commit line in $out/README.md"
