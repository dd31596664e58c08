#!/usr/bin/env bash
# A new user's `make test` on a fresh Debian 12, measured: debootstrap a minimal bookworm root
# (minbase), give it what a new Debian machine already has (g++, cmake, make, git, python3), clone
# this checkout's commit into it, and run `make test` (its apt for every other package, the build
# and ctest) then `make test-long` inside it, each output line prefixed with the seconds since
# `make test` started. The split (apt, configure and build, ctest) is read off those stamps.
#
# Usage (as root; installs debootstrap if missing; ~25 minutes on 2 cores, ~6 GB of disk):
#   bench/fresh_debian_make_test.sh [ROOT_DIR] [COMMIT] [SHARED_DIR]
#     ROOT_DIR    where the fresh root goes (default /tmp/sb-fresh-debian; must not exist: a
#                 root left by an earlier run has the packages and is no fresh machine)
#     COMMIT      what to clone (default HEAD)
#     SHARED_DIR  the corpora beside the clone, as ../shared (default ../shared if it exists)
# Example:
#   sudo bench/fresh_debian_make_test.sh /tmp/fresh HEAD ../shared | tee fresh.log
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/tmp/sb-fresh-debian}
commit=$(git -C "$here" rev-parse "${2:-HEAD}")
shared=${3:-$here/../shared}
[ "$(id -u)" -eq 0 ] || { echo "fresh_debian_make_test.sh: run as root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap

mounted=()
cleanup() { for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" || true; done; }
trap cleanup EXIT
mount_in() {  # mount_in TARGET mount-arguments...: a slave mount, so nothing below it reaches the host
  mkdir -p "$1"
  mountpoint -q "$1" || { mount "${@:2}" "$1"; mounted+=("$1"); mount --make-rslave "$1"; }
}

if [ -e "$root" ]; then
  echo "fresh_debian_make_test.sh: $root exists: remove it (a reused root is no fresh machine)" >&2
  exit 2
fi
SECONDS=0
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian
echo "fresh_debian_make_test: debootstrap done at ${SECONDS} s"
for m in proc sys dev dev/pts; do mount_in "$root/$m" --bind "/$m"; done
mount_in "$root/dev/shm" -t tmpfs tmpfs
cp /etc/resolv.conf "$root/etc/resolv.conf"
cat > "$root/etc/apt/sources.list" <<'SOURCES'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
# What a new Debian machine has before the project's own `make deps`.
chroot "$root" bash -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq &&
  apt-get install -y -qq g++ cmake make git python3 ca-certificates >/dev/null'
echo "fresh_debian_make_test: base packages done at ${SECONDS} s"
rm -rf "$root/work/ci" && mkdir -p "$root/work"
git clone -q "$here" "$root/work/ci" && git -C "$root/work/ci" checkout -q "$commit"
[ -d "$shared" ] && mount_in "$root/work/shared" --bind "$shared"
echo "fresh_debian_make_test: make test of $commit (seconds since its start on each line)"
# The exit status is make's (pipefail), and the last line says it too: CI_RC=<status>.
# shellcheck disable=SC2016  # expanded inside the chroot
chroot "$root" bash -c 'set -o pipefail; cd /work/ci && export DEBIAN_FRONTEND=noninteractive &&
  SECONDS=0; { CI=true bash -c "set -e; make test; echo MAKE_TEST_DONE; make test-long";
  rc=$?; echo "CI_RC=$rc"; exit $rc; } 2>&1 | while IFS= read -r l; do printf "%5d %s\n" $SECONDS "$l"; done'
