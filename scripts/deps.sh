#!/bin/sh
# Install the Debian packages sbxtop needs.
#   scripts/deps.sh                 what building and running need (make run)
#   scripts/deps.sh --test          that, plus what the tests need (make test)
#   scripts/deps.sh --check [...]   exit 1 and list what is missing, install nothing
# Nothing is installed that is there already; sudo is used when not root.
set -eu

check=0
test=0
for a in "$@"; do
	case "$a" in
	--check) check=1 ;;
	--test) test=1 ;;
	*) echo "usage: scripts/deps.sh [--check] [--test]" >&2; exit 2 ;;
	esac
done

# Building: the libraries and their headers (libssh2 for remote hosts).  Running:
# the ns backend's helpers (newuidmap, slirp4netns), QEMU for the qemu backend
# (e2fsprogs and busybox-static build its images, debootstrap the --debootstrap
# ones).
PKGS="build-essential pkg-config
libmicrohttpd-dev libhttp-parser-dev libcjson-dev libcurl4-openssl-dev libssh2-1-dev libpcre2-dev
libssl-dev nettle-dev libseccomp-dev libarchive-dev zlib1g-dev libzstd-dev libncurses-dev
uidmap slirp4netns passt busybox-static qemu-system-x86 qemu-utils e2fsprogs debootstrap"
# The tests: peers and oracles (curl, python3 with botocore, bubblewrap, openssl,
# zip), tmux for the console's tests, zsh and fish (with bash) to judge the
# completion scripts, mandoc for the man pages, clang for the
# fuzz targets, apparmor for its parser (the profile's syntax check), and
# openssh-server for the ssh backend's
# tests, which run their own sshd on a private port.  Installing openssh-server
# also starts the system's sshd on port 22: the tests do not need that one.
# The image tests run a registry on loopback (docker-registry, the distribution
# project's server, with htpasswd from apache2-utils, or tokens signed with
# python3-cryptography), make images with umoci and push them with skopeo.
TEST_PKGS="curl python3 bubblewrap mandoc clang openssl openssh-server python3-botocore
zip unzip tmux zsh fish apparmor docker-registry skopeo umoci apache2-utils python3-cryptography"
# The aarch64 agent bundle that `sbxtop setup aws` ships (Lambda MicroVMs run
# ARM_64), cross-built with Debian's toolchain against Debian's arm64 libraries,
# and qemu-user to test it: about 1.5 minutes of installing.  Node's http-parser
# comes as its runtime package there: its -dev package and the native one cannot
# be installed together (they share the header, which is the same).  Only on Debian, where
# the arm64 packages live in the same archive: on Ubuntu they are on another
# mirror (ports.ubuntu.com), `dpkg --add-architecture arm64` breaks `apt-get
# update` there, and the aarch64 test is skipped, saying so.
CROSS_PKGS="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
libhttp-parser2.9:arm64 libcjson-dev:arm64 libarchive-dev:arm64 zlib1g-dev:arm64 libzstd-dev:arm64
nettle-dev:arm64"
# Tools that may come from elsewhere than Debian (node from nodesource, say):
# checked by command, installed from Debian only when absent.
TOOLS=""

os_id=$(. /etc/os-release 2>/dev/null && echo "${ID:-}")
if [ "$test" -eq 1 ]; then
	PKGS="$PKGS $TEST_PKGS"
	TOOLS="node:nodejs npm:npm"
	[ "$os_id" = debian ] && PKGS="$PKGS $CROSS_PKGS"
fi

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
if [ "$check" -eq 1 ]; then
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
