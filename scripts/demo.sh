#!/usr/bin/env bash
# copctl's main job on a lab cluster: installs the lab's prerequisites if missing, builds copctl,
# starts 7 isolated SSH hosts named like a COP cluster (test doubles stand in for RKE2, kubectl,
# systemd and the NVIDIA driver), installs the cluster without cop-worker-3, then runs
# `copctl node add cop-worker-3` with its live progress and recap. `--keep` keeps the hosts up.
# Run it as root, or as a user with sudo (the build runs as you; the lab needs root).
# COPCTL_PROFILE=dev uses the debug build (CI, which has already built it for the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/as-root.sh
as_root scripts/lab-prereqs.sh
profile=${COPCTL_PROFILE:-release}
case $profile in
  release) dir=release ;;
  dev) dir=debug ;;
  *) echo "COPCTL_PROFILE must be release or dev, not '$profile'" >&2; exit 1 ;;
esac
cargo build --profile "$profile" --quiet --bins
as_root "target/$dir/copctl-lab" demo "$@"
