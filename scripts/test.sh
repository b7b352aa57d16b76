#!/usr/bin/env bash
# The test suite: installs the lab's prerequisites (sshd, iproute2...) and the peers copctl is
# compared with (ansible-core in .peers/venv), then runs every test. Works on a fresh machine with
# Rust and Python 3, as root or as a user with sudo: the SSH tests start real OpenSSH servers in
# namespaces, so for a user the test binaries (not cargo) run through sudo.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/as-root.sh
as_root scripts/lab-prereqs.sh
scripts/peers-setup.sh
if [ "$(id -u)" != 0 ]; then
  host=$(rustc -vV | sed -n 's/^host: //p' | tr 'a-z-' 'A-Z_')
  export "CARGO_TARGET_${host}_RUNNER=sudo --preserve-env"
fi
# The whole suite (no arguments) through cargo-nextest where it is installed: every test of every
# binary in one pool, as many at a time as cargo test runs (one per core), without waiting for a
# binary's slowest test before the next binary starts (about a sixth less time on 2 cores).
# Arguments are cargo test's, as before.
if [ $# -eq 0 ] && cargo nextest --version >/dev/null 2>&1; then
  exec cargo nextest run --locked --no-fail-fast
fi
cargo test --locked "$@"
