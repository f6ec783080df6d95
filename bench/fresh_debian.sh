#!/usr/bin/env bash
# bench/first_run.sh on a fresh Debian 12, apt included: a minimal bookworm root (debootstrap
# --variant=minbase; bookworm, -updates and -security as Debian's images list them; no package
# lists yet, no CUDA toolkit), where root installs git as a new user would to clone (timed), then
# runs bench/first_run.sh from a copy of this checkout's commit (uncommitted changes are not in
# it). The root is made, mounted, unmounted and deleted here. Needs root and debootstrap; the load
# of the machine is the caller's to keep low (first_run.json records it).
#
#   sudo bench/fresh_debian.sh [--out DIR=./bench-out] [--root DIR=/var/tmp/oomlab-deb12]
#                              [--mirror URL=http://deb.debian.org/debian]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="./bench-out"
chroot_dir="/var/tmp/oomlab-deb12"
mirror="http://deb.debian.org/debian"
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --root) chroot_dir="$2"; shift 2 ;;
    --mirror) mirror="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "bench/fresh_debian.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "bench/fresh_debian.sh: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "bench/fresh_debian.sh: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
[[ ! -e "$chroot_dir" ]] || { echo "bench/fresh_debian.sh: $chroot_dir exists; --root names a new folder" >&2; exit 2; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"

cleanup() {
  for mount in dev/pts dev sys proc; do umount "$chroot_dir/$mount" 2>/dev/null || true; done
  # Only once nothing is mounted inside: rm must never reach through a mount into the host.
  if ! grep -q " $chroot_dir/" /proc/mounts; then rm -rf "$chroot_dir"; fi
}
trap cleanup EXIT
debootstrap --variant=minbase bookworm "$chroot_dir" "$mirror" >"$out/debootstrap.log" 2>&1 ||
  { tail -5 "$out/debootstrap.log" >&2; exit 1; }
rm -f "$chroot_dir/etc/apt/sources.list" "$chroot_dir"/var/lib/apt/lists/*_* "$chroot_dir"/var/cache/apt/archives/*.deb
cat >"$chroot_dir/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
mount -t proc proc "$chroot_dir/proc"
mount -t sysfs sys "$chroot_dir/sys"
mount --bind /dev "$chroot_dir/dev"
mount --bind /dev/pts "$chroot_dir/dev/pts"
# The repository the new user clones from (GitHub's place): this commit, outside the timed steps.
git clone -q --no-checkout "$repo" "$chroot_dir/srv/oomlab"
git -C "$chroot_dir/srv/oomlab" checkout -q "$(git -C "$repo" rev-parse HEAD)"

# As root on the fresh machine: git first (with its recommends, as `apt-get install git` gives
# them: ca-certificates for an https clone), then first_run.sh from the copy.
# shellcheck disable=SC2016  # the script runs in the chroot's shell
env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot "$chroot_dir" bash -c '
  set -euo pipefail
  start=$EPOCHREALTIME
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git >/dev/null
  git_s=$(awk -v a="$EPOCHREALTIME" -v b="$start" "BEGIN { printf \"%.1f\", a - b }")
  /srv/oomlab/bench/first_run.sh --out /root/out --apt-seconds "$git_s"'
cp "$chroot_dir/root/out/first_run.json" "$out/first_run.json"
echo "bench/fresh_debian.sh: $out/first_run.json"
