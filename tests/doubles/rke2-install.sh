#!/bin/sh
# Test double for RKE2's install.sh (air-gapped): checks the staged artifacts like the real one
# (INSTALL_RKE2_ARTIFACT_PATH with the tarball and sha256sum file), then extracts the rke2 double
# from the tarball as /usr/local/bin/rke2 with the version of INSTALL_RKE2_VERSION, and the
# uninstall script.
set -e
echo "install.sh INSTALL_RKE2_TYPE=${INSTALL_RKE2_TYPE:-} INSTALL_RKE2_VERSION=${INSTALL_RKE2_VERSION:-}" >> /var/log/copctl-doubles.log
a=${INSTALL_RKE2_ARTIFACT_PATH:?air-gapped install needs INSTALL_RKE2_ARTIFACT_PATH}
[ -f "$a/rke2.linux-amd64.tar.gz" ] || { echo "no rke2.linux-amd64.tar.gz in $a" >&2; exit 1; }
(cd "$a" && sha256sum -c --ignore-missing --quiet sha256sum-amd64.txt) || { echo "checksum mismatch in $a" >&2; exit 1; }
v=${INSTALL_RKE2_VERSION:-$(cat "$a/version" 2>/dev/null || echo v0.0.0+rke2r0)}
mkdir -p /usr/local/bin /var/lib/rancher/rke2/agent/images
tar xzf "$a/rke2.linux-amd64.tar.gz" -C /usr/local
sed -i "s/^VERSION=.*/VERSION=$v/" /usr/local/bin/rke2
chmod 755 /usr/local/bin/rke2
# rke2-uninstall.sh as RKE2's: the services stopped and their units gone (the systemctl double's
# state), the node's kubelet silent (NotReady in the cluster, if it is still there; a server
# stays an etcd member, as nothing tells etcd), RKE2's files removed, the script itself too.
cat > /usr/local/bin/rke2-uninstall.sh <<'UNINSTALL'
#!/bin/sh
echo "rke2-uninstall.sh" >> /var/log/copctl-doubles.log
c=/var/lib/copctl-cluster
name=$(sed -n 's/^node-name: *//p' /etc/rancher/rke2/config.yaml 2>/dev/null | sed 's/^"\(.*\)"$/\1/')
[ -n "$name" ] || name=$(hostname)
[ -d "$c/nodes/$name" ] && echo False > "$c/nodes/$name/ready"
rm -f /var/lib/copctl-doubles/systemd/rke2-server.* /var/lib/copctl-doubles/systemd/rke2-agent.*
rm -rf /etc/rancher/rke2 /etc/rancher/node /var/lib/rancher/rke2 /usr/local/bin/rke2 /usr/local/bin/rke2-uninstall.sh
UNINSTALL
chmod 755 /usr/local/bin/rke2-uninstall.sh
