#!/bin/sh
# make bench: every benchmark, each printed beside a peer measured in the same run.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
for b in bench/[0-9]*.sh; do
	sh "$b"
	echo
done
