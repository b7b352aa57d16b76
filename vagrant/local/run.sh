#!/usr/bin/env bash
# The real-machine suite (tests/vm/suite.sh) on the Vagrant VMs of this directory's Vagrantfile:
# box built or reused, `vagrant up`, the suite, `vagrant destroy -f` (unless --keep).
# Needs vagrant, vagrant-libvirt and a running libvirtd (Debian: apt-get install vagrant
# vagrant-libvirt libvirt-daemon-system; without systemd: `libvirtd -d; virtlogd -d`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
keep=0; smoke=(); for a in "$@"; do case $a in --keep) keep=1 ;; --smoke) smoke=(--smoke) ;; esac; done
cd "$here"
vagrant box list | grep -q '^local/copctl-bookworm ' || ./box.sh
(cd "$repo" && cargo build --locked --quiet --bin copctl)
run=${COPCTL_VM_RUN:-/tmp/copctl-vagrant}
rm -rf "$run"; mkdir -p "$run"
[ $keep = 1 ] || trap 'vagrant destroy -f >/dev/null 2>&1 || true' EXIT
t=$(date +%s)
vagrant up --provider libvirt
echo "vagrant up: $(($(date +%s) - t)) s"
"$repo/tests/vm/site.sh" "$run" "${COPCTL_VM_PORT:-22211}"
"$repo/tests/vm/suite.sh" "$run" "$repo/target/debug/copctl" "${smoke[@]}" | tee "$run/suite.log"
p=$(grep -c '^ok ' "$run/suite.log" || true); f=$(grep -c '^not ok ' "$run/suite.log" || true)
grep -q '^suite finished' "$run/suite.log" || f=$((f + 1))
echo "$p passed, $f failed"
[ "$f" = 0 ]
