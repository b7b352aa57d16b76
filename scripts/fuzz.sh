#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets) for a set time each: `scripts/fuzz.sh [SECONDS]`
# (default 60). Needs a nightly toolchain (`rustup toolchain install nightly`) and cargo-fuzz
# (installed here from crates.io when missing). New inputs go to fuzz/work/<target> (seeded from
# fuzz/corpus/<target>); a crash or a hang (an input taking over 10 s) stops the script with the
# input saved under fuzz/artifacts/<target>/: turn it into a regression test in tests/robustness.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
targets=$(sed -n 's/^name = "\(.*\)"/\1/p' fuzz/Cargo.toml | grep -v copctl-fuzz)
summary=""
for t in $targets; do
  mkdir -p "fuzz/work/$t"
  log="fuzz/work/$t.log"
  echo "== $t: ${secs}s"
  # No sanitizer: copctl has no unsafe code in its parsers; panics and hangs are what is sought.
  cargo +nightly fuzz run --sanitizer none --fuzz-dir fuzz "$t" "fuzz/work/$t" "fuzz/corpus/$t" -- \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1 || {
      tail -40 "$log"; echo "fuzz target $t failed: see $log and fuzz/artifacts/$t/"; exit 1; }
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  summary+="$t: ${runs:-?} executions in ${secs}s, 0 crashes, 0 hangs"$'\n'
done
printf '\n%s' "$summary"
