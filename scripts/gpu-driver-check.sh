#!/usr/bin/env bash
# copctl's nvidia-smi parsing and the read-only GPU checks against the real NVIDIA driver of the
# machine this runs on (tests/gpu_driver.rs): what nvidia-smi prints, then the test's reading of
# it. Needs nvidia-smi and a built tree (cargo); changes nothing on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi on this machine: nothing to check against" >&2; exit 2; }
echo "--- nvidia-smi -L"; nvidia-smi -L
echo "--- nvidia-smi --query-gpu=uuid,name,driver_version,memory.total,mig.mode.current --format=csv,noheader"
nvidia-smi --query-gpu=uuid,name,driver_version,memory.total,mig.mode.current --format=csv,noheader
echo "--- copctl"
COPCTL_REAL_GPU=1 exec cargo test --locked --test gpu_driver -- --nocapture
