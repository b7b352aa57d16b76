#!/usr/bin/env bash
# Installs the peers copctl is compared with, from PyPI: ansible-core into .peers/venv (the
# differential tests and the benchmark) and pyinfra into .peers/pyinfra (the benchmark).
# Idempotent: does nothing for a venv that already answers.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.peers/venv
python=${PEERS_PYTHON:-python3}
if ! { [ -x "$venv/bin/ansible-inventory" ] && "$venv/bin/ansible-inventory" --version >/dev/null 2>&1; }; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'ansible-core>=2.19,<2.22'
  "$venv/bin/ansible" --version | sed -n 1p  # reads all: head would close the pipe and fail ansible (EPIPE, exit 250)
fi
# Ansible's password_hash filter needs passlib (a site that hashes passwords has it).
"$venv/bin/python" -c 'import passlib' 2>/dev/null \
  || "$venv/bin/pip" install --quiet --disable-pip-version-check 'passlib>=1.7,<2'
py=.peers/pyinfra
if ! { [ -x "$py/bin/pyinfra" ] && "$py/bin/pyinfra" --version >/dev/null 2>&1; }; then
  rm -rf "$py"
  "$python" -m venv "$py"
  "$py/bin/pip" install --quiet --disable-pip-version-check 'pyinfra>=3.1,<4'
  "$py/bin/pyinfra" --version
fi
# ansible-core's own integration targets (tests/ansible_targets.rs runs them under copctl): the
# test/ tree of the sdist of the version installed above, which the wheel does not carry.
src=.peers/ansible-core-src
ver=$("$venv/bin/python" -c 'import ansible.release as r; print(r.__version__)')
if [ ! -f "$src/$ver/test/integration/targets/lineinfile/tasks/main.yml" ]; then
  rm -rf "$src" && mkdir -p "$src/dl"
  "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    "ansible-core==$ver" -d "$src/dl"
  mkdir -p "$src/$ver"
  tar -xzf "$src/dl/ansible_core-$ver.tar.gz" -C "$src/$ver" --strip-components=1 \
    "ansible_core-$ver/test/integration/targets"
  rm -rf "$src/dl"
fi
# The collections ansible-core routes some modules to (sysctl and mount to ansible.posix,
# modprobe and pam_limits to community.general), and the public roles the differential tests run
# unchanged (community.mongodb's mongodb_linux and mongodb_repository:
# tests/ansible_public_roles.rs), taken from the
# `ansible` package's wheel on PyPI (Galaxy is not reachable from the test machines):
# .peers/collections, the lab's ansible.cfg names it.
col=.peers/collections
if [ ! -f "$col/ansible_collections/ansible/posix/plugins/modules/sysctl.py" ] \
  || [ ! -f "$col/ansible_collections/community/general/plugins/modules/modprobe.py" ] \
  || [ ! -f "$col/ansible_collections/community/mongodb/roles/mongodb_linux/tasks/main.yml" ]; then
  rm -rf "$col" && mkdir -p "$col/dl"
  "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps ansible==12.3.0 -d "$col/dl"
  "$venv/bin/python" - "$col" <<'PY'
import sys, zipfile, glob
col = sys.argv[1]
with zipfile.ZipFile(glob.glob(col + "/dl/ansible-*.whl")[0]) as z:
    z.extractall(col, [n for n in z.namelist()
                       if n.startswith(("ansible_collections/ansible/posix/", "ansible_collections/community/general/",
                                        "ansible_collections/community/mongodb/"))])
PY
  rm -rf "$col/dl"
fi
