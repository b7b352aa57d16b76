#!/usr/bin/env bash
# The workstation suite against real RKE2: install -> node add -> rolling restart -> node remove
# -> node drain/uncordon -> dead-node removal and re-add -> (optional) rke2-upgrade.
# Needs: Vagrant with libvirt or VirtualBox, ~24 GiB of RAM, the RKE2 air-gap artifacts of
# rke2_version in vagrant/artifacts/rke2 (install.sh, rke2.linux-amd64.tar.gz,
# rke2-images.linux-amd64.tar.zst, sha256sum-amd64.txt, from RKE2's release page). GPU steps run
# only with COPCTL_VAGRANT_GPU=1 (a GPU passed through to cop-gpu-1, its driver runfile in
# vagrant/artifacts/nvidia).
set -euo pipefail
cd "$(dirname "$0")"
for f in install.sh rke2.linux-amd64.tar.gz rke2-images.linux-amd64.tar.zst sha256sum-amd64.txt; do
  [ -f "artifacts/rke2/$f" ] || { echo "missing vagrant/artifacts/rke2/$f (see vagrant/README.md)" >&2; exit 1; }
done
mkdir -p .keys
[ -f .keys/id_ed25519 ] || ssh-keygen -q -t ed25519 -N '' -C copctl-vagrant -f .keys/id_ed25519
(cd .. && cargo build --release --bin copctl)
vagrant up
on_bastion() { vagrant ssh bastion -c "sudo sh -c 'cd /copctl/vagrant && $*'"; }
kubectl_nodes() { on_bastion "ssh -o BatchMode=yes root@192.168.56.11 /var/lib/rancher/rke2/bin/kubectl --kubeconfig /etc/rancher/rke2/rke2.yaml get nodes"; }
env_file=/copctl/vagrant/env.yaml
on_bastion "sed 's#^rke2_artifact_dir:.*#rke2_artifact_dir: /copctl/vagrant/artifacts/rke2#; s#^gpu_driver_artifact_dir:.*#gpu_driver_artifact_dir: /copctl/vagrant/artifacts/nvidia#' /copctl/inventory/env.yaml > $env_file"
copctl="copctl -i inventory.ini --env $env_file"

echo "== 1. the cluster without cop-worker-2"
on_bastion "$copctl run system-setup system-dns rke2-install rke2-post-install --limit '!cop-worker-2'"
on_bastion "$copctl run rke2-install rke2-post-install --limit '!cop-worker-2'" | tee /tmp/copctl-rerun.log
grep -q 'nothing changed' /tmp/copctl-rerun.log || { echo "the re-run changed something" >&2; exit 1; }
if [ "${COPCTL_VAGRANT_GPU:-0}" = 1 ]; then
  on_bastion "$copctl run gpu-preinstall gpu-install gpu-operator"
fi

echo "== 2. node add cop-worker-2"
on_bastion "$copctl node add cop-worker-2"
kubectl_nodes | grep -q '^cop-worker-2 *Ready' || { echo "cop-worker-2 is not Ready" >&2; exit 1; }

echo "== 3. rolling restart of the workers (cordon, drain)"
on_bastion "$copctl run rolling-restart -e target_group=workers -e cordon_nodes=true -e drain_nodes=true"
kubectl_nodes | grep -q SchedulingDisabled && { echo "a node was left cordoned" >&2; exit 1; }

echo "== 4. node remove cop-worker-2"
on_bastion "$copctl node remove cop-worker-2 --yes"
kubectl_nodes | grep -q '^cop-worker-2 ' && { echo "cop-worker-2 is still in the cluster" >&2; exit 1; }

echo "== 5. node drain / node uncordon cop-worker-1 (the manual's graceful shutdown)"
on_bastion "$copctl node drain cop-worker-1 --yes"
kubectl_nodes | grep -q '^cop-worker-1 .*SchedulingDisabled' || { echo "cop-worker-1 is not cordoned after node drain" >&2; exit 1; }
on_bastion "$copctl node uncordon cop-worker-1"
kubectl_nodes | grep -q '^cop-worker-1 .*SchedulingDisabled' && { echo "cop-worker-1 is still cordoned" >&2; exit 1; }

echo "== 6. a dead node: cop-worker-2 added, powered off, removed; the same name added again"
on_bastion "$copctl node add cop-worker-2"
vagrant halt --force cop-worker-2
for _ in $(seq 60); do kubectl_nodes | grep -q '^cop-worker-2 *NotReady' && break; sleep 5; done
kubectl_nodes | grep -q '^cop-worker-2 *NotReady' || { echo "cop-worker-2 never went NotReady" >&2; exit 1; }
on_bastion "$copctl node remove cop-worker-2 --yes -e drain_timeout=60" | tee /tmp/copctl-dead.log
grep -q 'is unreachable' /tmp/copctl-dead.log || { echo "node remove did not see a dead node" >&2; exit 1; }
kubectl_nodes | grep -q '^cop-worker-2 ' && { echo "the dead cop-worker-2 is still in the cluster" >&2; exit 1; }
vagrant up cop-worker-2
on_bastion "$copctl node add cop-worker-2"
kubectl_nodes | grep -q '^cop-worker-2 *Ready' || { echo "cop-worker-2 did not join again under its name" >&2; exit 1; }

# The upgrade needs the artifacts of a newer release (vagrant/artifacts/rke2-upgrade/, the same
# four files) and its version in COPCTL_VAGRANT_UPGRADE_TO, e.g. v1.34.3+rke2r1.
if [ -n "${COPCTL_VAGRANT_UPGRADE_TO:-}" ]; then
  echo "== 7. rke2-upgrade to $COPCTL_VAGRANT_UPGRADE_TO"
  on_bastion "$copctl run rke2-upgrade -e rke2_version=$COPCTL_VAGRANT_UPGRADE_TO -e rke2_artifact_dir=/copctl/vagrant/artifacts/rke2-upgrade -e drain_nodes=true"
  want=${COPCTL_VAGRANT_UPGRADE_TO%%+*}
  kubectl_nodes | awk 'NR>1 {print $1, $5}' | while read -r n v; do
    [ "$v" = "$want" ] || { echo "$n runs $v, not $want" >&2; exit 1; }
  done
fi

echo "all steps passed; 'vagrant destroy -f' removes the VMs"
