#!/bin/sh
# PID 1 of a lab host, run by `unshare --mount --uts --pid --fork --propagation private`.
# Builds the host's root (overlay of the real / with the host's own upper dir), makes the kernel's
# settings read-only, pivots into it and becomes sshd. Killing sshd takes the host down.
set -eu
dir=$1
name=$2
hostname "$name"
m=$dir/merged
mount -t overlay overlay -o "lowerdir=/,upperdir=$dir/upper,workdir=$dir/work" "$m"
mount -t proc proc "$m/proc"
mount --bind "$m/proc/sys" "$m/proc/sys"
mount -o remount,bind,ro "$m/proc/sys"
# A boot id of this start only, so that "wait for a new boot id" works on lab hosts.
mount --bind "$dir/boot_id" "$m/proc/sys/kernel/random/boot_id"
mount --rbind /sys "$m/sys"
mount -o remount,bind,ro "$m/sys"
mount --rbind /dev "$m/dev"
mount -t tmpfs -o mode=755 tmpfs "$m/run"
mount -t tmpfs -o mode=1777 tmpfs "$m/tmp"
mkdir -p "$m/run/sshd" "$m/.oldroot"
# A directory shared by all hosts of the lab (the simulated cluster state of the test doubles).
if [ -n "${3:-}" ]; then
  mkdir -p "$m/var/lib/copctl-cluster"
  mount --bind "$3" "$m/var/lib/copctl-cluster"
fi
# Directories of the machine the host sees as they are, read-only (LabOptions::see).
shift 3 2>/dev/null || shift $#
for d in "$@"; do
  mkdir -p "$m$d"
  mount --bind "$d" "$m$d"
  mount -o remount,bind,ro "$m$d"
done
cd "$m"
pivot_root . .oldroot
umount -l /.oldroot
exec /usr/sbin/sshd -D -e -f /etc/ssh/sshd_config.lab
