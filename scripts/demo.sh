#!/usr/bin/env bash
# copctl's main job on a lab cluster: installs the lab's prerequisites if missing, builds copctl,
# starts 7 isolated SSH hosts named like a COP cluster (test doubles stand in for RKE2, kubectl,
# systemd and the NVIDIA driver), installs the cluster without cop-worker-3, then runs
# `copctl node add cop-worker-3` with its live progress and recap. `--keep` keeps the hosts up.
# Run it as root, or as a user with sudo (the build runs as you; the lab needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/as-root.sh
as_root scripts/lab-prereqs.sh
cargo build --release --quiet --bins
as_root target/release/copctl-lab demo "$@"
