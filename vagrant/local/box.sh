#!/usr/bin/env bash
# Makes the Vagrant box (libvirt provider) of the real-machine suite from the same image as
# scripts/vm-test.sh (Debian's packages only; built or reused by `vm-test.sh --image`), and adds
# it as local/copctl-bookworm. The box has no boot loader: the Vagrantfile boots the image's
# kernel and initrd directly; they are copied beside it, into vagrant/local/.boot/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
img=$("$repo/scripts/vm-test.sh" --image)
mkdir -p "$here/.boot"
cp "$img/vmlinuz" "$img/initrd.img" "$here/.boot/"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$img/rootfs.qcow2" "$work/box.img"
size=$(qemu-img info --output=json "$work/box.img" | python3 -c 'import json,sys; print(-(-json.load(sys.stdin)["virtual-size"] // 2**30))')
printf '{"provider":"libvirt","format":"qcow2","virtual_size":%s}\n' "$size" > "$work/metadata.json"
cat > "$work/Vagrantfile" <<'EOV'
Vagrant.configure("2") do |config|
  config.vm.provider :libvirt do |lv|
    lv.disk_bus = "virtio"
  end
end
EOV
tar -C "$work" -czf "$here/.boot/copctl-bookworm.box" metadata.json Vagrantfile box.img
vagrant box add --force --name local/copctl-bookworm "$here/.boot/copctl-bookworm.box"
echo "box local/copctl-bookworm added (kernel and initrd in $here/.boot)"
