# The aarch64 agent bundle (what `sbxtop setup aws` ships to Lambda MicroVMs, which
# run ARM_64): cross-built with Debian's gcc-aarch64-linux-gnu against the arm64
# libraries (`make agent-bundle ARCH=aarch64`), then run under qemu-aarch64-static
# through the bundle's own loader and libraries: /health answers, an exec runs,
# the secret is still required.  An exec runs where qemu-user emulates openat2(2).
. "$(dirname "$0")/../lib.sh"

QEMU=$(command -v qemu-aarch64-static || true)
if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || [ -z "$QEMU" ] ||
    [ ! -e /usr/lib/aarch64-linux-gnu/pkgconfig/libcjson.pc ] ||
    [ ! -e /usr/lib/aarch64-linux-gnu/libhttp_parser.so.2.9 ]; then
	ok "# SKIP no aarch64 cross toolchain, arm64 libraries or qemu-user-static (scripts/deps.sh --test installs them on Debian; Ubuntu keeps arm64 packages on another mirror, ports.ubuntu.com)"
	exit 0
fi

# Built without the sanitizers whatever this run uses: the cross toolchain has no
# runtime for them, and the bundle is what ships.  Up to date: make does nothing.
if ! env -u MAKEFLAGS -u MAKELEVEL -u SANITIZE -u BUILD make -s -C "$TOP" ARCH=aarch64 \
    agent-bundle > "$T/make.log" 2>&1; then
	not_ok "make agent-bundle ARCH=aarch64"
	sed 's/^/# /' "$T/make.log" | tail -n 20
	exit 1
fi
B="$TOP/build/aarch64/agent-bundle"
ok "make agent-bundle ARCH=aarch64"
like "the agent binary is aarch64" "$(readelf -h "$B/bin/sbxtop-agent")" 'Machine: +AArch64'
like "the bundled loader is aarch64's" "$(ls "$B/lib")" 'ld-linux-aarch64\.so\.1'
for l in "$B"/lib/*.so*; do
	readelf -h "$l" | grep -q 'AArch64' || { not_ok "$(basename "$l") is aarch64"; continue; }
done
ok "every bundled library is aarch64"

# binfmt_misc may not be registered here (containers): run the loader explicitly.
cat > "$T/agent-arm" <<EOS
#!/bin/sh
exec "$QEMU" "$B/lib/ld-linux-aarch64.so.1" --library-path "$B/lib" "$B/bin/sbxtop-agent" "\$@"
EOS
chmod +x "$T/agent-arm"
is "--version under qemu" "$("$T/agent-arm" --version)" \
	"sbxtop-agent $(sed -n 's/^#define SBX_VERSION "\(.*\)"/\1/p' "$TOP/lib/util.h")"

AGENT="$T/agent-arm"
# Emulated start-up is slower than native: give it time before agent_start's wait.
agent_start || { not_ok "the aarch64 agent starts under qemu"; exit 1; }
ok "the aarch64 agent starts under qemu"
h=$(curl -s --unix-socket "$SOCK" http://a/health)
is "/health answers" "$(json_get "$h" 'd["ok"], d["ready"]')" "(True, True)"
out=$(api POST /v1/exec -H 'Content-Type: application/json' \
	-d '{"command":"echo hello from $(uname -m) > f.txt; cat f.txt; exit 3"}')
case "$out" in
*'Function not implemented'*)
	# qemu-user before 9.0 answers ENOSYS to openat2(2), which the agent's path
	# confinement (RESOLVE_IN_ROOT) needs; a MicroVM's kernel has it.
	ok "exec # SKIP this qemu-user does not emulate openat2(2): $(qemu-aarch64-static --version | head -n 1)"
	;;
*)
	is "exec: 200" "$(status)" 200
	[ "$(status)" = 200 ] || diag "$out"
	is "exec: exit code" "$(json_get "$out" 'd["exit_code"]')" 3
	like "exec: output" "$(json_get "$out" 'd["stdout"]')" '^hello from '
	is "exec: the file is in the workspace" "$(cut -d' ' -f1-2 "$T/ws/f.txt" 2>/dev/null)" \
		"hello from"
	;;
esac
is "a wrong secret is refused" "$(curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' \
	-X POST -H 'X-Sandbox-Secret: wrong-secret-0123456789' -d '{"command":"true"}' \
	http://a/v1/exec)" 401
done_testing
