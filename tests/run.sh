#!/bin/sh
# The test runner: C unit tests, then integration tests (shell), then end-to-end
# tests.  Each test prints TAP-style lines ("ok N - what", "not ok N - what"); a test
# that exits non-zero without a "not ok" line counts as one failure.  Closes with
# "N passed, N failed".
#   tests/run.sh [PATTERN]   only tests whose path contains PATTERN
#   TEST_SKIP="a b"          leave out tests whose path contains a or b (the CI's
#                            sanitizer pass leaves out the ones that mostly wait on
#                            other programs: QEMU boots under TCG, say)
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD
TOP=$(pwd)
export TOP
pattern=${1:-}
pass=0
fail=0
failed=""
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Debian's python3 (scripts/deps.sh installs it, with botocore and
# cryptography) ahead of any other on PATH: a version manager's shim (pyenv's
# is a chain of bash scripts) costs a tenth of a second or more a call, and
# the tests call python3 thousands of times.
if [ -x /usr/bin/python3 ]; then
	mkdir "$tmp/bin" && ln -s /usr/bin/python3 "$tmp/bin/python3" && PATH="$tmp/bin:$PATH"
	export PATH
fi

run_one() {
	name=$1
	shift
	case "$name" in *"$pattern"*) ;; *) return ;; esac
	for skip in ${TEST_SKIP:-}; do
		case "$name" in *"$skip"*) printf '== %s: left out (TEST_SKIP)\n' "$name"; return ;; esac
	done
	printf '== %s\n' "$name"
	out="$tmp/out"
	t0=$(date +%s)
	timeout -k 5 600 "$@" >"$out" 2>&1
	rc=$?
	cat "$out"
	printf '# %s took %d s\n' "$name" $(($(date +%s) - t0))
	p=$(grep -c '^ok ' "$out")
	f=$(grep -c '^not ok ' "$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $name exited with status $rc"
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $name ran no check"
		f=1
	fi
	pass=$((pass + p))
	fail=$((fail + f))
	[ "$f" -eq 0 ] || failed="$failed $name"
}

for t in "$BUILD"/tests/*; do
	[ -x "$t" ] && run_one "unit/$(basename "$t")" "$t"
done
for t in tests/integration/*.sh tests/e2e/*.sh; do
	[ -f "$t" ] && run_one "$t" sh "$t"
done

[ -z "$failed" ] || echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
