#!/usr/bin/env bash
# The real-machine suite: copctl against the three Debian VMs scripts/vm-test.sh booted (what the
# lab's doubles cannot prove: real systemd, sudo, kernel modules, sysctl, initramfs, reboots).
# Every check logs in and reads the machine's real state; a line `ok - ...` or `not ok - ...`
# each (vm-test.sh counts them), then `suite finished`.
# Usage: tests/vm/suite.sh RUN_DIR COPCTL [--smoke]   (RUN_DIR: vm-test.sh's, with ssh_config,
# inventory.ini, env.yaml, id_ed25519, password)
set -uo pipefail
run=${1:?RUN_DIR}; copctl=${2:?COPCTL}; smoke=0; [ "${3:-}" = --smoke ] && smoke=1
repo=$(cd "$(dirname "$0")/../.." && pwd)
names=(cop-master-1 cop-worker-1 cop-gpu-1)
cfg=$run/ssh_config
t0=$(date +%s)
pass() { echo "ok - $*"; }
fail() { echo "not ok - $*"; }
note() { printf '# [%4ss] %s\n' $(($(date +%s) - t0)) "$*"; }
# A command on a VM as root, through the copctl user's real sudo (password on stdin).
vm() { local n=$1; shift; printf 'copctl\n' | timeout 120 ssh -F "$cfg" -o BatchMode=yes "$n" "sudo -S -p '' bash -c $(printf %q "$*")"; }
# A command on a VM as the copctl user.
vmu() { local n=$1; shift; timeout 120 ssh -F "$cfg" -o BatchMode=yes "$n" "$*" < /dev/null; }
boot_id() { vmu "$1" cat /proc/sys/kernel/random/boot_id 2>/dev/null; }
# copctl with the VMs' site; the repository's playbooks and templates (this tree's, not the
# built-in copy), become through sudo with the password from a file.
cop() {
  timeout 1800 "$copctl" -i "$run/inventory.ini" --env "$run/env.yaml" --known-hosts "$run/known_hosts" \
    --playbook-dir "$repo/playbooks" --template-dir "$repo/templates" "$@"
}
copb() { cop "$1" --become-password-file "$run/password" "${@:2}"; }
# check NAME COMMAND...: ok when the command succeeds; its output goes to the log either way.
check() {
  local name=$1; shift
  local out; out=$("$@" 2>&1); local rc=$?
  if [ $rc = 0 ]; then pass "$name"; else fail "$name"; printf '%s\n' "$out" | tail -15 | sed 's/^/#   /'; fi
  return $rc
}
timed() { local s; s=$(date +%s); "$@"; local rc=$?; note "$1 ${2:-} ${3:-}: $(($(date +%s) - s)) s, exit $rc"; return $rc; }

# --- ssh-copy-id with a password on fresh machines (no key there yet) ---
for n in "${names[@]}"; do
  check "$n: no key login before ssh-copy-id" bash -c "! timeout 60 ssh -F '$cfg' -o BatchMode=yes $n true 2>/dev/null"
done
out=$(COPCTL_SSH_PASSWORD=copctl timed cop ssh-copy-id --all --key "$run/id_ed25519.pub" 2>&1); rc=$?
printf '%s\n' "$out" | sed 's/^/#   /'
check "ssh-copy-id --all with a password: exit 0, key installed on 3 hosts" \
  test "$rc:$(grep -c 'installed .* key authentication works' <<< "$out")" = 0:3
for n in "${names[@]}"; do
  check "$n: key login works after ssh-copy-id" vmu "$n" true
done

# --- a non-root login with real sudo ---
check "login is copctl, not root" test "$(vmu cop-master-1 id -un)" = copctl
check "sudo without the password is refused" bash -c "! timeout 60 ssh -F '$cfg' -o BatchMode=yes cop-master-1 'sudo -n true' 2>/dev/null"
out=$(copb exec cluster -b -- 'id -u; echo "$SUDO_USER"' 2>&1); rc=$?
printf '%s\n' "$out" | sed 's/^/#   /'
check "copctl exec -b: root through sudo on 3 hosts" test "$rc:$(grep -cx '0' <<< "$out"):$(grep -cx 'copctl' <<< "$out")" = 0:3:3

# --- system-setup, system-dns ---
# A real firewall: ufw active on cop-worker-1 (SSH allowed), which system-setup must turn off.
check "cop-worker-1: ufw turned on (SSH allowed)" vm cop-worker-1 'ufw allow 22/tcp >/dev/null && ufw --force enable >/dev/null && ufw status | grep -q "Status: active"'
check "swap is on before system-setup" vm cop-master-1 'test -n "$(swapon --noheadings --show)"'
out=$(timed copb run system-setup system-dns 2>&1); rc=$?
printf '%s\n' "$out" | tail -25 | sed 's/^/#   /'
check "run system-setup system-dns: exit 0" test $rc = 0
# What system-setup and system-dns leave, read on the machine in one login (each check a line).
setup_state() {
  local n=$1 out
  out=$(vm "$n" "n=$n; $(cat <<'EOS'
c() { local name=$1; shift; if out=$(eval "$*" 2>&1); then echo "ok - $n: $name"; else echo "not ok - $n: $name"; printf '%s\n' "$out" | tail -5 | sed 's/^/#   /'; fi; }
c "hostname is $n" 'test "$(hostname)" = "$n"'
c "hostnamectl's static hostname is $n" 'test "$(hostnamectl --static)" = "$n" && grep -qx "$n" /etc/hostname'
c "no swap in use, none in fstab" 'test -z "$(swapon --noheadings --show)" && test "$(wc -l < /proc/swaps)" = 1 && ! grep -Eq "^[^#]\S*\s+\S+\s+swap\s" /etc/fstab'
c "overlay and br_netfilter loaded" 'grep -q "^overlay " /proc/modules && grep -q "^br_netfilter " /proc/modules'
c "overlay and br_netfilter in modules-load.d" 'grep -qx overlay /etc/modules-load.d/rke2.conf && grep -qx br_netfilter /etc/modules-load.d/rke2.conf'
c "sysctl values in /proc" 'test "$(cat /proc/sys/net/ipv4/ip_forward)" = 1 && test "$(cat /proc/sys/net/bridge/bridge-nf-call-iptables)" = 1 && test "$(cat /proc/sys/net/bridge/bridge-nf-call-ip6tables)" = 1 && test "$(cat /proc/sys/fs/inotify/max_user_instances)" = 8192 && test "$(cat /proc/sys/fs/inotify/max_user_watches)" = 524288'
c "chrony installed, enabled, running with copctl's configuration" 'dpkg-query -W -f="\${Status}" chrony | grep -q "ok installed" && systemctl is-enabled -q chrony && systemctl is-active -q chrony && if [ "$n" = cop-master-1 ]; then grep -qx "local stratum 10 orphan" /etc/chrony/chrony.conf && chronyc -n tracking | grep -q "^Leap status *: Normal"; else grep -qx "server 127.0.0.1 iburst" /etc/chrony/chrony.conf && ! grep -q "^local stratum" /etc/chrony/chrony.conf && chronyc -n tracking; fi'
c "systemd-timesyncd not running" '! systemctl is-active -q systemd-timesyncd'
c "no firewall active" '! systemctl is-active -q firewalld && ! ufw status | grep -q "Status: active"'
c "/etc/hosts block with the nodes and platform names" 'grep -q "^# BEGIN OPENMARU COP HOSTS (copctl)" /etc/hosts && grep -q "^127.0.0.1 cop-gpu-1$" /etc/hosts && grep -q "^127.0.0.1 console.cop.example.com$" /etc/hosts && getent hosts registry.cop.example.com | grep -q 127.0.0.1'
c "systemd-resolved uses the site's resolver" 'grep -qx "DNS=127.0.0.1" /etc/systemd/resolved.conf.d/openmaru-cop.conf && systemctl is-active -q systemd-resolved && resolvectl dns | grep -q 127.0.0.1 && resolvectl domain | grep -q cop.example.com'
EOS
)" 2>&1)
  if grep -q '^ok - ' <<< "$out"; then printf '%s\n' "$out"; else fail "$n: state read after setup (login failed)"; printf '%s\n' "$out" | tail -5 | sed 's/^/#   /'; fi
}
for n in "${names[@]}"; do setup_state "$n"; done

# --- the GPU pre-install: nouveau blacklisted, initramfs rebuilt, a real reboot ---
# No NVIDIA device in a VM: nouveau is loaded by hand, as the kernel would load it for a GPU.
check "cop-gpu-1: nouveau loaded before gpu-preinstall" vm cop-gpu-1 'modprobe nouveau && grep -q "^nouveau " /proc/modules'
before=$(boot_id cop-gpu-1)
initrd_before=$(vm cop-gpu-1 'stat -c %Y /boot/initrd.img-$(uname -r)')
out=$(timed copb run gpu-preinstall 2>&1); rc=$?
printf '%s\n' "$out" | tail -20 | sed 's/^/#   /'
check "run gpu-preinstall: exit 0" test $rc = 0
check "gpu-preinstall rebooted cop-gpu-1 (reboot step changed)" grep -q 'reboot without nouveau' <<< "$out"
after=$(boot_id cop-gpu-1)
check "cop-gpu-1: new boot id after gpu-preinstall" test -n "$after" -a -n "$before" -a "$after" != "$before"
check "cop-gpu-1: nouveau blacklisted, not loaded after the reboot" vm cop-gpu-1 'grep -qx "blacklist nouveau" /etc/modprobe.d/blacklist-nouveau.conf && ! grep -q "^nouveau " /proc/modules'
check "cop-gpu-1: initramfs rebuilt with the blacklist" vm cop-gpu-1 "test \$(stat -c %Y /boot/initrd.img-\$(uname -r)) -gt ${initrd_before:-0} && lsinitramfs /boot/initrd.img-\$(uname -r) | grep -q 'etc/modprobe.d/blacklist-nouveau.conf'"
check "cop-gpu-1: kernel headers of the running kernel installed" vm cop-gpu-1 'dpkg-query -W -f="\${Status}" linux-headers-$(uname -r) | grep -q "ok installed"'
check "cop-master-1: untouched by gpu-preinstall (not a GPU node)" vm cop-master-1 '! test -e /etc/modprobe.d/blacklist-nouveau.conf'
# What system-setup did survives a real reboot: modules from modules-load.d, sysctl.d, fstab.
setup_state cop-gpu-1

# --- a re-run changes nothing ---
out=$(timed copb run system-setup system-dns gpu-preinstall 2>&1); rc=$?
printf '%s\n' "$out" | tail -6 | sed 's/^/#   /'
check "re-run of system-setup system-dns gpu-preinstall: exit 0, nothing changed" test "$rc:$(grep -c 'ok: nothing changed' <<< "$out")" = 0:1
out=$(COPCTL_SSH_PASSWORD=wrong cop ssh-copy-id --all --key "$run/id_ed25519.pub" 2>&1); rc=$?
check "re-run of ssh-copy-id: nothing changed on 3 hosts" test "$rc:$(grep -c 'nothing changed' <<< "$out")" = 0:3

if [ $smoke = 1 ]; then
  note "smoke: rolling-reboot skipped"
  echo "suite finished"; exit 0
fi

# --- rolling-reboot: real reboots, one node at a time ---
# kubectl cannot be fetched here: the lab's kubectl double (tests/doubles/kubectl) answers on
# cop-master-1 (the playbook's kube_host) over a cluster state seeded with the 3 nodes Ready;
# that the machines really went down one at a time is watched from outside (below).
timeout 60 ssh -F "$cfg" -o BatchMode=yes cop-master-1 'cat > /tmp/kubectl' < "$repo/tests/doubles/kubectl"
check "cop-master-1: kubectl double installed, cluster state seeded" vm cop-master-1 '
  install -m 0755 /tmp/kubectl /usr/local/bin/kubectl
  c=/var/lib/copctl-cluster; mkdir -p $c/etcd/members
  for n in cop-master-1:server cop-worker-1:agent cop-gpu-1:agent; do
    mkdir -p $c/nodes/${n%%:*}; echo True > $c/nodes/${n%%:*}/ready; echo ${n#*:} > $c/nodes/${n%%:*}/role; echo false > $c/nodes/${n%%:*}/unschedulable
  done
  echo 1 > $c/etcd/members/cop-master-1-00000001
  touch /var/log/copctl-doubles.log; kubectl get --raw /readyz/etcd | grep -qx ok'
# Each machine watched from the host: a login held open until the machine drops it (down), then
# tried again every 2 s until it answers with a boot id (up). Host clock throughout.
mon() {
  local n=$1 id
  while :; do
    if id=$(timeout 15 ssh -F "$cfg" -o BatchMode=yes -o ConnectTimeout=5 "$n" cat /proc/sys/kernel/random/boot_id 2>/dev/null) && [ -n "$id" ]; then
      echo "$(date +%s.%N) up $id" >> "$run/mon.$n"
      ssh -F "$cfg" -o BatchMode=yes -o ServerAliveInterval=2 -o ServerAliveCountMax=2 "$n" 'exec sleep 86400' >/dev/null 2>&1 < /dev/null
      echo "$(date +%s.%N) down" >> "$run/mon.$n"
    else
      sleep 2
    fi
  done
}
declare -A ids
mons=()
for n in "${names[@]}"; do
  ids[$n]=$(boot_id "$n"); rm -f "$run/mon.$n"
  setsid bash -c "$(declare -f mon); run=$(printf %q "$run") cfg=$(printf %q "$cfg"); mon $n" > /dev/null 2>&1 &
  mons+=($!)
done
sleep 5
out=$(timed copb run rolling-reboot 2>&1); rc=$?
sleep 3
for p in "${mons[@]}"; do kill -- -"$p" 2>/dev/null || kill "$p" 2>/dev/null; done
printf '%s\n' "$out" | tail -20 | sed 's/^/#   /'
check "run rolling-reboot: exit 0" test $rc = 0
for n in "${names[@]}"; do
  new=$(boot_id "$n")
  check "$n: back with a new boot id" test -n "$new" -a -n "${ids[$n]}" -a "$new" != "${ids[$n]}"
  check "$n: went down exactly once" test "$(grep -c ' down$' "$run/mon.$n" 2>/dev/null)" = 1
done
# Down intervals [down, up] on the host clock, ordered by when each went down: none overlaps the next.
intervals=$(for n in "${names[@]}"; do
  awk -v n="$n" '$2=="down"{d=$1} $2=="up"&&d{print d, $1, n; d=""}' "$run/mon.$n" 2>/dev/null
done | sort -n)
printf '%s\n' "$intervals" | awk '{printf "#   %s down %.0f s\n", $3, $2-$1}'
check "never two machines down at once; servers first" bash -c '
  printf "%s\n" "$1" | awk "NF==3{ if (NR>1 && \$1 < up) bad=1; up=\$2; order=order \$3 \" \" } END { if (bad || order != \"cop-master-1 cop-worker-1 cop-gpu-1 \") exit 1 }"' _ "$intervals"
for n in cop-master-1 cop-worker-1; do setup_state "$n"; done
check "cop-master-1: the kubectl double was asked to cordon and uncordon each node" vm cop-master-1 'for n in cop-master-1 cop-worker-1 cop-gpu-1; do grep -q "cordon $n" /var/log/copctl-doubles.log && grep -q "uncordon $n" /var/log/copctl-doubles.log || exit 1; done'
# After reboots too, system-setup and system-dns change nothing.
out=$(timed copb run system-setup system-dns gpu-preinstall 2>&1); rc=$?
printf '%s\n' "$out" | tail -4 | sed 's/^/#   /'
check "re-run after rolling-reboot: nothing changed" test "$rc:$(grep -c 'ok: nothing changed' <<< "$out")" = 0:1
note "suite done"
echo "suite finished"
