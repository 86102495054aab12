# The agent bundle runs in a rootfs that has none of our libraries: a busybox-only
# root (no /lib, no /usr/lib), entered with a user+mount namespace and chroot.  The
# agent's unix socket is created inside the root, where the host can reach it.
. "$(dirname "$0")/../lib.sh"

BUSYBOX=$(command -v busybox || true)
if [ -z "$BUSYBOX" ] || ! ldd "$BUSYBOX" 2>&1 | grep -q 'not a dynamic'; then
	ok "# SKIP no static busybox (install busybox-static)"
	exit 0
fi
if ! unshare -r --mount --fork true 2>/dev/null; then
	ok "# SKIP unprivileged user namespaces are not available here"
	exit 0
fi

# The bundle of this very binary: the one make built if it matches, else a fresh one.
BUNDLE="$BUILD/agent-bundle"
if ! cmp -s "$BUNDLE/bin/sbxtop-agent" "$AGENT"; then
	diag "$BUNDLE is missing or stale: bundling $AGENT into the test directory"
	BUNDLE="$T/agent-bundle"
	"$TOP/scripts/agent-bundle.sh" "$AGENT" "$BUNDLE" || { not_ok "scripts/agent-bundle.sh"; exit 1; }
fi

# The bundle travels to every sandbox, remote host and VM image: it carries what
# the agent uses and nothing of libarchive's other formats (static libarchive,
# tar, gzip and zstd only, where the -dev package ships libarchive.a).
kib=$(du -skL "$BUNDLE" | cut -f1)
if ldd "$AGENT" | grep -q 'libasan\|libubsan'; then
	# A sanitizer build carries the sanitizers' runtimes (and libstdc++).
	ok "# SKIP the bundle's size and contents: a sanitizer build ($kib KiB)"
else
	check "the bundle is at most 12 MiB ($kib KiB)" [ "$kib" -le 12288 ]
	if [ -n "$(ls /usr/lib/*/libarchive.a 2>/dev/null)" ]; then
		is "no libarchive, libxml2, ICU or compressors but zlib and zstd in the bundle" \
		    "$(ls "$BUNDLE/lib" | grep -E '^lib(archive|xml2|icu|lzma|lz4|bz2|stdc)' | tr '\n' ' ')" ""
	fi
fi

ROOT="$T/root"
mkdir -p "$ROOT/bin" "$ROOT/opt" "$ROOT/proc" "$ROOT/tmp" "$ROOT/workspace" "$ROOT/dev"
cp "$BUSYBOX" "$ROOT/bin/busybox"
for a in $("$BUSYBOX" --list); do
	[ -e "$ROOT/bin/$a" ] || ln -s busybox "$ROOT/bin/$a"
done
cp -a "$BUNDLE" "$ROOT/opt/sbxtop"
printf '%s\n' "$SECRET" > "$ROOT/secret"
chmod 600 "$ROOT/secret"

check "the root has no shared libraries of its own" \
	test -z "$(find "$ROOT" -path "$ROOT/opt" -prune -o -name '*.so*' -print)"

# in_root CMD...: run CMD chrooted in ROOT (with the host's /proc bound in: the
# sanitizer runtime reads /proc/self/maps).
in_root() {
	unshare -r --mount --fork sh -c 'mount --rbind /proc "$0/proc" && exec chroot "$0" "$@"' \
		"$ROOT" "$@"
}

out=$(in_root /opt/sbxtop/sbxtop-agent --help 2>&1); rc=$?
is "--help in the bare root exits 0" "$rc" 0
like "--help prints the usage" "$out" '^usage: sbxtop-agent --listen'
for o in --listen --secret-file --workspace --root --user --init --deadline --idle \
    --hooks --log --ready-fd --version; do
	case "$out" in *"$o"*) ok "--help mentions $o" ;; *) not_ok "--help mentions $o" ;; esac
done
out=$(in_root /opt/sbxtop/sbxtop-agent --version 2>&1)
is "--version in the bare root" "$out" "sbxtop-agent $("$AGENT" --version | cut -d' ' -f2)"
in_root /opt/sbxtop/sbxtop-agent --bogus > /dev/null 2>&1; rc=$?
is "a bad option exits 2" "$rc" 2

# Without the bundle's loader the binary cannot start here: the root really lacks
# what it needs, so the checks above proved the bundle.
in_root /opt/sbxtop/bin/sbxtop-agent --version > /dev/null 2>&1; rc=$?
check "the bare binary does not run in this root (exit $rc)" test "$rc" -ne 0

in_root /opt/sbxtop/sbxtop-agent --listen unix:/x.sock --secret-file /secret \
	--workspace /workspace --log /agent.log &
UPID=$!
at_exit "kill $UPID; wait $UPID"
SOCK="$ROOT/x.sock"
for i in $(seq 250); do
	[ -S "$SOCK" ] && curl -sf --unix-socket "$SOCK" http://a/health > /dev/null && break
	sleep 0.02
done
h=$(curl -s --unix-socket "$SOCK" http://a/health)
is "health through the socket in the root" "$(json_get "$h" 'd["ok"], d["ready"]')" "(True, True)"
ev=$(api GET '/v1/events?from=1&follow=0')
is "events route: 200" "$(status)" 200
like "events replay the start" "$ev" '"type":"agent.started"'
is "a wrong secret is still refused" "$(curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' \
	-H 'X-Sandbox-Secret: wrong-secret-0123456789' 'http://a/v1/events?follow=0')" 401

apid=$(sed -n 's/.*ready (pid \([0-9]*\)).*/\1/p' "$ROOT/agent.log")
if [ -n "$apid" ]; then
	kill -TERM "$apid"
	wait "$UPID"; rc=$?
	is "TERM: the bundled agent exits 0" "$rc" 0
	check "TERM: the socket is removed" test ! -e "$SOCK"
else
	not_ok "the agent logged its pid"
	cat "$ROOT/agent.log"
fi
done_testing
