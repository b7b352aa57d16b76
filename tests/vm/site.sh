#!/usr/bin/env bash
# Writes what the suite and an operator need to reach the three VMs, whoever booted them
# (scripts/vm-test.sh, vagrant/local/run.sh): a key pair (the one ssh-copy-id installs), the
# password of the `copctl` user (for ssh-copy-id and sudo), an ssh_config, an inventory.ini and
# an env.yaml. SSH goes to 127.0.0.1, ports PORT0, PORT0+1, PORT0+2.
# Usage: tests/vm/site.sh RUN_DIR PORT0
set -euo pipefail
run=${1:?RUN_DIR}; port0=${2:?PORT0}
repo=$(cd "$(dirname "$0")/../.." && pwd)
names=(cop-master-1 cop-worker-1 cop-gpu-1)
[ -e "$run/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C copctl-vm-test -f "$run/id_ed25519"
printf 'copctl\n' > "$run/password"; chmod 600 "$run/password"
: > "$run/ssh_config"
i=0
for n in "${names[@]}"; do
  cat >> "$run/ssh_config" <<EOC
Host $n
  HostName 127.0.0.1
  Port $((port0 + i))
  User copctl
  IdentityFile $run/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $run/known_hosts.ssh
  StrictHostKeyChecking accept-new
  ConnectTimeout 10
  ServerAliveInterval 5
  ServerAliveCountMax 3
  LogLevel ERROR

EOC
  i=$((i + 1))
done
cat > "$run/inventory.ini" <<EOC
# The suite's VMs: SSH forwarded on 127.0.0.1 (QEMU user-mode networking).
[masters]
cop-master-1 ansible_host=127.0.0.1 ansible_port=$port0

[workers]
cop-worker-1 ansible_host=127.0.0.1 ansible_port=$((port0 + 1))

[gpu]
cop-gpu-1 ansible_host=127.0.0.1 ansible_port=$((port0 + 2))

[cluster:children]
masters
workers
gpu

[cluster:vars]
ansible_user=copctl
ansible_ssh_private_key_file=$run/id_ed25519
ansible_become=true

[masters:vars]
rke2_type=server
node_role=master

[workers:vars]
rke2_type=agent
node_role=worker
# The VMs cannot reach each other (user-mode networking, loopback only): a worker cannot follow
# the server's clock here, so only the server's is read back; the workers' chrony.conf is checked.
clock_check=false

[gpu:vars]
rke2_type=agent
node_role=gpu
gpu_node=true
clock_check=false
EOC
# The example site's settings, with loopback for every address the playbooks write.
sed -e 's/^ingress_ip:.*/ingress_ip: 127.0.0.1/' -e 's/^dns_servers:.*/dns_servers: [127.0.0.1]/' \
  -e 's/^registry_ca_file:.*/registry_ca_file: ""/' "$repo/inventory/env.yaml" > "$run/env.yaml"
