#!/bin/sh
# Install the Debian packages sbxtop needs to build, run and test.
#   scripts/deps.sh           install whatever is missing (sudo when not root)
#   scripts/deps.sh --check   exit 1 and list what is missing, install nothing
set -eu

# Build: libraries and headers (libssh2 for remote hosts).  Runtime: namespaces
# helpers, QEMU (qemu backend; e2fsprogs and busybox-static build its images,
# debootstrap the --debootstrap ones).  Tests: peers and tools.
PKGS="build-essential pkg-config
libmicrohttpd-dev libcjson-dev libcurl4-openssl-dev libssh2-1-dev libpcre2-dev
libssl-dev nettle-dev libseccomp-dev libarchive-dev libncurses-dev
uidmap slirp4netns busybox-static qemu-system-x86 qemu-utils e2fsprogs debootstrap
curl tmux python3 bubblewrap mandoc clang openssl openssh-server python3-botocore zip unzip
gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
libmicrohttpd-dev:arm64 libcjson-dev:arm64 libarchive-dev:arm64 nettle-dev:arm64"
# The last two lines: the aarch64 agent bundle that `sbxtop setup aws` ships
# (Lambda MicroVMs run ARM_64), cross-built with Debian's toolchain against
# Debian's arm64 libraries, and qemu-user to test it (about 1.5 minutes of
# installing on a fresh machine).  They need dpkg's arm64 architecture.
# Tools that may come from elsewhere than Debian (node from nodesource, say):
# checked by command, installed from Debian only when absent.
TOOLS="node:nodejs npm:npm"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing="$missing $p"
done
for t in $TOOLS; do
	command -v "${t%%:*}" >/dev/null 2>&1 || missing="$missing ${t#*:}"
done

if [ -z "$missing" ]; then
	exit 0
fi
if [ "${1:-}" = "--check" ]; then
	echo "missing packages:$missing" >&2
	exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "sbxtop: these Debian packages are needed:$missing" >&2
	echo "sbxtop: no apt-get here: install their equivalents by hand" >&2
	exit 1
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "sbxtop: installing:$missing" >&2
case "$missing" in
*:arm64*)
	dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64 ;;
esac
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
