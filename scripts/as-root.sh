# Sourced by the scripts that need root for the lab (namespaces, sshd): `as_root CMD...` runs CMD
# directly when this is root and through sudo otherwise, so the same command works for root
# without sudo and for a user with sudo. cargo always runs as the invoking user.
as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo --preserve-env=PATH "$@"
  else
    echo "error: this needs root (network namespaces and sshd for the lab hosts): run it as root, or install sudo" >&2
    exit 1
  fi
}
