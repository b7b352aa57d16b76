#!/usr/bin/env bash
# copctl's main job on a lab cluster (needs root): installs the lab's prerequisites if missing,
# builds copctl, starts 7 isolated SSH hosts named like a COP cluster (test doubles stand in for
# RKE2, kubectl, systemd and the NVIDIA driver), installs the cluster without cop-worker-3, then
# runs `copctl node add cop-worker-3` with its live progress and recap. `--keep` keeps the hosts up.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/lab-prereqs.sh
cargo build --release --quiet --bins
exec target/release/copctl-lab demo "$@"
