#!/usr/bin/env bash
# The test suite: installs the peers copctl is compared with (ansible-core in .peers/venv),
# then runs every test. Works on a fresh machine with Rust and Python 3.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/peers-setup.sh
cargo test --locked
