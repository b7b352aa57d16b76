#!/usr/bin/env bash
# The real-machine suite on plain QEMU (no Vagrant, no libvirt): builds or reuses a Debian 12
# image (tests/vm/image.sh, cached by that script's hash), boots 3 VMs in parallel under software
# emulation (TCG: the /dev/kvm of the CI machines cannot boot them), runs tests/vm/suite.sh with
# the copctl built from this tree, and stops every QEMU it started, by PID, whatever happens.
# Networking is QEMU's user mode only: each VM's SSH forwarded on 127.0.0.1, the guests cut off
# from everything else (restrict=on); no bridge, no tap, no address outside loopback.
#
#   scripts/vm-test.sh            the whole suite (image build or reuse, boot, suite, teardown)
#   scripts/vm-test.sh --smoke    the CI subset (see tests/vm/README.md)
#   scripts/vm-test.sh --keep     leaves the VMs up; prints the paths of an ssh_config and an
#                                 inventory.ini for them
#   scripts/vm-test.sh --down     stops VMs left up by --keep
#   scripts/vm-test.sh --image    builds or reuses the image only; prints its directory
#                                 (vagrant/local/box.sh makes the Vagrant box from it)
# Environment: COPCTL_VM_CACHE (image cache; default $XDG_CACHE_HOME/copctl-vm or
# /var/cache/copctl-vm), COPCTL_VM_RUN (VM state; default /tmp/copctl-vm), COPCTL_VM_PORT (first
# forwarded port; default 22201), COPCTL_VM_MEM (MiB per guest; default 1024),
# COPCTL_VM_BOOT_TIMEOUT (seconds until SSH answers; default 900).
# The last line is `N passed, M failed`; the exit status is non-zero when something failed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
keep=0 down=0 smoke=0 image_only=0
for a in "$@"; do
  case $a in
    --image) image_only=1 ;;
    --keep) keep=1 ;;
    --down) down=1 ;;
    --smoke) smoke=1 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "vm-test.sh: unknown argument $a (--keep, --down, --smoke, --image)" >&2; exit 1 ;;
  esac
done
run=${COPCTL_VM_RUN:-/tmp/copctl-vm}
cache=${COPCTL_VM_CACHE:-${XDG_CACHE_HOME:-/var/cache}/copctl-vm}
port0=${COPCTL_VM_PORT:-22201}
mem=${COPCTL_VM_MEM:-1024}
boot_timeout=${COPCTL_VM_BOOT_TIMEOUT:-900}
names=(cop-master-1 cop-worker-1 cop-gpu-1)
t0=$(date +%s)
log() { printf '[vm-test %4ss] %s\n' $(($(date +%s) - t0)) "$*" >&2; }

# A QEMU this script started: its PID file's process, still a qemu-system with our run directory
# in its command line (a PID reused by something else is never signalled).
ours() {
  local pid=$1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "qemu-system.*$run/"
}
stop_vms() {
  local f pid pids=()
  for f in "$run"/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    if ours "$pid"; then kill "$pid" 2>/dev/null || true; pids+=("$pid"); fi
    rm -f "$f"
  done
  for _ in $(seq 50); do
    local alive=0
    for pid in "${pids[@]}"; do ours "$pid" && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.2
  done
  for pid in "${pids[@]}"; do ours "$pid" && kill -9 "$pid" 2>/dev/null || true; done
  return 0
}

if [ $down = 1 ]; then
  stop_vms
  log "VMs in $run stopped"
  exit 0
fi

# Host packages, on a fresh Debian machine. qemu-utils is taken from the release QEMU comes from
# (a backported qemu-utils breaks qemu-system-x86's dependencies).
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86 qemu-utils/bookworm)
command -v qemu-img >/dev/null || need+=(qemu-utils/bookworm)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v sshpass >/dev/null || need+=(sshpass)
command -v ssh-keyscan >/dev/null || need+=(openssh-client)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v mkswap >/dev/null || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends --allow-downgrades "${need[@]}" >/dev/null
fi

# The image, built once per version of its build script.
key=$(sha256sum "$repo/tests/vm/image.sh" | cut -c1-16)
img=$cache/$key
if [ ! -e "$img/done" ]; then
  log "building the image in $img (tests/vm/image.sh)"
  tb=$(date +%s)
  rm -rf "$img"; mkdir -p "$img"
  "$repo/tests/vm/image.sh" "$img" > "$cache/build-$key.log" 2>&1 || { tail -20 "$cache/build-$key.log" >&2; echo "0 passed, 1 failed"; exit 1; }
  log "image built in $(($(date +%s) - tb)) s ($(du -m "$img/rootfs.qcow2" | cut -f1) MiB qcow2)"
else
  log "image $img (cached)"
fi
if [ $image_only = 1 ]; then echo "$img"; exit 0; fi

# copctl from this tree.
log "cargo build --bin copctl"
(cd "$repo" && cargo build --locked --quiet --bin copctl)
copctl=$repo/target/debug/copctl
[ -x "$copctl" ] || { echo "no $copctl" >&2; echo "0 passed, 1 failed"; exit 1; }

# Kept VMs from an earlier --keep are stopped before new ones start.
stop_vms
rm -rf "$run"; mkdir -p "$run"
if [ $keep = 0 ]; then trap 'stop_vms' EXIT; fi
trap 'exit 130' INT
trap 'exit 143' TERM

i=0
for n in "${names[@]}"; do
  port=$((port0 + i)); i=$((i + 1))
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "127.0.0.1:$port is in use (COPCTL_VM_PORT chooses other ports)" >&2; echo "0 passed, 1 failed"; exit 1
  fi
  echo "$port" > "$run/$n.port"
  qemu-img create -q -f qcow2 -F qcow2 -b "$img/rootfs.qcow2" "$run/$n.qcow2"
  truncate -s 256M "$run/$n.swap"; mkswap -q "$run/$n.swap" >/dev/null
  qemu-system-x86_64 -name "$n" -accel tcg -m "$mem" -smp 1 -nodefaults -display none \
    -kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 quiet" \
    -drive "file=$run/$n.qcow2,if=virtio,format=qcow2" \
    -drive "file=$run/$n.swap,if=virtio,format=raw" \
    -netdev "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:$port-:22" \
    -device virtio-net-pci,netdev=net0 -device virtio-rng-pci \
    -serial "file:$run/$n.console" -daemonize -pidfile "$run/$n.pid"
done
log "3 VMs started (QEMU PIDs $(cat "$run"/*.pid | tr '\n' ' '))"
"$repo/tests/vm/site.sh" "$run" "$port0"

# Up when sshd hands out its host key (the key made at first boot).
wait_ssh() {
  local n=$1 port deadline
  port=$(cat "$run/$n.port"); deadline=$(($(date +%s) + boot_timeout))
  while [ "$(date +%s)" -lt $deadline ]; do
    ours "$(cat "$run/$n.pid" 2>/dev/null)" || { echo "$n: QEMU exited; console:" >&2; tail -20 "$run/$n.console" >&2; return 1; }
    if ssh-keyscan -T 5 -p "$port" 127.0.0.1 2>/dev/null | grep -q ssh-ed25519; then return 0; fi
    sleep 3
  done
  echo "$n: no SSH after ${boot_timeout}s; console:" >&2; tail -20 "$run/$n.console" >&2
  return 1
}
tb=$(date +%s); up=0
for n in "${names[@]}"; do wait_ssh "$n" && up=$((up + 1)); done
log "SSH answers on $up of 3 VMs, $(($(date +%s) - tb)) s after they started"
echo "boot_s=$(($(date +%s) - tb))" > "$run/figures"
if [ $up != 3 ]; then echo "0 passed, 1 failed"; exit 1; fi

args=("$run" "$copctl")
[ $smoke = 1 ] && args+=(--smoke)
set +e
"$repo/tests/vm/suite.sh" "${args[@]}" 2>&1 | tee "$run/suite.log"
set -e
passed=$(grep -c '^ok ' "$run/suite.log" || true)
failed=$(grep -c '^not ok ' "$run/suite.log" || true)
grep -q '^suite finished' "$run/suite.log" || failed=$((failed + 1))

if [ $keep = 1 ]; then
  log "VMs left up (scripts/vm-test.sh --down stops them):"
  echo "  ssh_config:    $run/ssh_config      (ssh -F $run/ssh_config cop-master-1; sudo password: copctl)"
  echo "  inventory.ini: $run/inventory.ini   ($copctl -i $run/inventory.ini --env $run/env.yaml --known-hosts $run/known_hosts --become-password-file $run/password ...)"
else
  stop_vms
  trap - EXIT
fi
log "total $(($(date +%s) - t0)) s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
