#!/usr/bin/env bash
# Builds the real-machine suite's Debian 12 image from Debian's packages only (mmdebstrap), with
# no loop device and no mount (mkfs.ext4 -d): usable by root on a CI machine without privileges
# beyond that. Output in DIR: rootfs.qcow2 (ext4, no partition table: the kernel is booted
# directly), vmlinuz and initrd.img (the image's own, copied out), and a `done` marker.
# scripts/vm-test.sh keys its cache by this file's hash: any change here rebuilds the image.
# Usage: tests/vm/image.sh DIR
set -euo pipefail
out=${1:?usage: image.sh DIR}
mirror=${COPCTL_VM_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$out"
work=$(mktemp -d "$out/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root

# The guests are air-gapped (user-mode networking with restrict=on, as the manual's sites have
# no internet). chrony is not installed: its .deb files wait in apt's cache with the package
# lists kept, so system-setup's `apt-get install chrony` is a real apt install, offline (it
# removes systemd-timesyncd, which Debian's chrony conflicts with). The running kernel's headers
# (gpu-preinstall) are installed: gcc and its kin would take minutes under emulation. ufw is
# installed inactive (Ubuntu's default); the suite turns it on in one VM for system-setup to
# turn off.
pkgs=systemd,systemd-sysv,systemd-timesyncd,systemd-resolved,dbus,openssh-server,sudo,python3,qemu-guest-agent,kmod,procps,iproute2,
pkgs+=initramfs-tools,linux-image-amd64,linux-headers-amd64,ufw,ca-certificates,less,netbase
mmdebstrap --variant=minbase --include="$pkgs" \
  --customize-hook='chroot "$1" useradd -m -s /bin/bash -G sudo copctl' \
  --customize-hook='echo copctl:copctl | chroot "$1" chpasswd' \
  --customize-hook='mv "$1/etc/resolv.conf" "$1/etc/resolv.conf.image"; cp /etc/resolv.conf "$1/etc/resolv.conf"
    chroot "$1" apt-get install -y -q --download-only chrony >/dev/null
    rm "$1/etc/resolv.conf"; mv "$1/etc/resolv.conf.image" "$1/etc/resolv.conf"' \
  --skip=cleanup/apt \
  bookworm "$root" "$mirror"

# Each VM gets its own host keys and machine id at first boot.
rm -f "$root"/etc/ssh/ssh_host_*
: > "$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"
cat > "$root/etc/systemd/system/ssh-host-keys.service" <<'EOF'
[Unit]
Description=SSH host keys made on first boot
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key
[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A
[Install]
WantedBy=multi-user.target
EOF
ln -s /etc/systemd/system/ssh-host-keys.service "$root/etc/systemd/system/multi-user.target.wants/"

echo debian > "$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 debian\n' > "$root/etc/hosts"
# The root file system, and a swap disk (each VM's second drive): system-setup turns it off and
# removes this line.
printf '/dev/vda / ext4 defaults,errors=remount-ro 0 1\n/dev/vdb none swap sw 0 0\n' > "$root/etc/fstab"
# DHCP on the user-mode network (the guest's side of QEMU's slirp; nothing of it on the host).
mkdir -p "$root/etc/systemd/network"
printf '[Match]\nName=en*\n[Network]\nDHCP=ipv4\n' > "$root/etc/systemd/network/10-dhcp.network"
ln -sf /lib/systemd/system/systemd-networkd.service "$root/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
# Faster boots under emulation: nothing waits for a network that is always there.
ln -sf /dev/null "$root/etc/systemd/system/systemd-networkd-wait-online.service"
# A root console on the serial port is not wanted: the console log is read, not logged into.
# The initramfs a guest rebuilds (gpu-preinstall's update-initramfs) holds the modules its own
# devices need, not every storage and network driver: MODULES=most (Debian's default) copies
# thousands of files one process each, ~10 minutes under emulation on a busy machine. The initrd
# the VMs boot is the one built above with `most`.
echo MODULES=dep > "$root/etc/initramfs-tools/conf.d/copctl-vm"
cp "$root"/boot/vmlinuz-* "$out/vmlinuz.new"
cp "$root"/boot/initrd.img-* "$out/initrd.img.new"
chmod 0644 "$out/vmlinuz.new" "$out/initrd.img.new"

# 3 GiB file system (sparse), filled from the directory without mounting it.
rm -f "$work/root.raw"
mkfs.ext4 -q -F -L root -d "$root" "$work/root.raw" 3G
qemu-img convert -O qcow2 "$work/root.raw" "$out/rootfs.qcow2.new"
mv "$out/rootfs.qcow2.new" "$out/rootfs.qcow2"
mv "$out/vmlinuz.new" "$out/vmlinuz"
mv "$out/initrd.img.new" "$out/initrd.img"
touch "$out/done"
