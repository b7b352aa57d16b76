#!/usr/bin/env bash
# Installs what the lab needs (root, Debian/Ubuntu): sshd and ssh/scp, iproute2 (network
# namespaces), util-linux (unshare, nsenter), openssl, Python's venv (for the peers), tar, and
# sudo (the become tests log in as a non-root user with real sudo on the lab hosts).
# A policy-rc.d keeps the package from starting a system sshd on 0.0.0.0:22, which would take
# port 22 of the lab's loopback addresses.
set -euo pipefail
need=()
command -v sshd >/dev/null || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null || need+=(openssh-client)
command -v ip >/dev/null || need+=(iproute2)
command -v nsenter >/dev/null || need+=(util-linux)
command -v openssl >/dev/null || need+=(openssl)
command -v tar >/dev/null || need+=(tar)
command -v sudo >/dev/null || need+=(sudo)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
  fi
  apt-get update -qq
  apt-get install -y -qq "${need[@]}"
fi
