#!/usr/bin/env bash
# Installs the peers copctl is compared with (ansible-core, from PyPI) into .peers/venv.
# Idempotent: does nothing when the venv already answers.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.peers/venv
if [ -x "$venv/bin/ansible-inventory" ] && "$venv/bin/ansible-inventory" --version >/dev/null 2>&1; then
  exit 0
fi
python=${PEERS_PYTHON:-python3}
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check 'ansible-core>=2.19,<2.22'
"$venv/bin/ansible" --version | head -1
