# One core server for every front end of a user: without XDG_RUNTIME_DIR, sbxtop
# uses /run/user/UID (systemd-logind's) when it is there and private, and falls
# back to /tmp/sbxtop-UID only otherwise, saying so on stderr and, for --mcp, in a
# notifications/message warning to the MCP client (an SDK client started with the
# SDK's default environment, which has no XDG_RUNTIME_DIR, as MCP clients do).
# Run in a private mount namespace with its own /run and /tmp, so nothing here
# meets the machine's /run/user or /tmp/sbxtop-UID.
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
	ok "# SKIP needs root for a private mount namespace (unshare -m)"
	exit 0
fi
uid=$(id -u)
# Inside: tmpfs on /run and /tmp, $T reachable as /run/t, and the checkout
# where it was (a clone in /tmp is put back there).  Each case runs a command
# there with XDG_RUNTIME_DIR unset and HOME private.
cat > "$T/in-ns.sh" <<'EOS'
set -u
T=$1 TOP=$2; shift 2
mount --make-rprivate / && mount -t tmpfs tmpfs /run && mkdir /run/t /run/top &&
	mount --bind "$T" /run/t && mount --bind "$TOP" /run/top &&
	mount -t tmpfs tmpfs /tmp || exit 99
if [ ! -e "$TOP/Makefile" ]; then
	mkdir -p "$TOP" && mount --bind /run/top "$TOP" || exit 99
fi
case "$1" in
private) mkdir -p -m 0700 "/run/user/$(id -u)" ;;
open) mkdir -p -m 0755 "/run/user/$(id -u)" ;;
none) ;;
esac
shift
unset XDG_RUNTIME_DIR
export HOME=/run/t/home SBXTOP_SERVE_GRACE=2
export XDG_STATE_HOME=/run/t/state XDG_CONFIG_HOME=/run/t/config XDG_DATA_HOME=/run/t/data \
	XDG_CACHE_HOME=/run/t/cache
"$@"
rc=$?
"$SBXTOP" serve --stop >/dev/null 2>&1
ls -d /run/user/*/sbxtop /tmp/sbxtop-* 2>/dev/null | sed 's/^/dir /'
exit $rc
EOS
mkdir -p "$T/home"
in_ns() { SBXTOP="$SBXTOP" unshare -m sh "$T/in-ns.sh" "$T" "$TOP" "$@"; }

out=$(in_ns private "$SBXTOP" ls 2>&1)
like "no XDG_RUNTIME_DIR, a private /run/user/UID: ls works" "$out" '^ID'
like "... and the core server's sockets are in /run/user/UID/sbxtop" "$out" "dir /run/user/$uid/sbxtop"
if printf '%s' "$out" | grep -q 'XDG_RUNTIME_DIR is unset'; then
	not_ok "... and no fallback warning"; diag "$out"
else
	ok "... and no fallback warning"
fi
if printf '%s' "$out" | grep -q "dir /tmp/sbxtop-"; then not_ok "... and nothing in /tmp"; else ok "... and nothing in /tmp"; fi

out=$(in_ns open "$SBXTOP" ls 2>&1)
like "a /run/user/UID others can read is not used: /tmp/sbxtop-UID" "$out" "dir /tmp/sbxtop-$uid"
like "... said on stderr, with what to do" "$out" \
	"XDG_RUNTIME_DIR is unset and /run/user/$uid is missing \(or not private\): using /tmp/sbxtop-$uid.*pass XDG_RUNTIME_DIR"

out=$(in_ns none "$SBXTOP" doctor --backend ssh 2>&1)
like "doctor warns about the fallback runtime directory" "$out" \
	"warn runtime directory: /tmp/sbxtop-$uid.*XDG_RUNTIME_DIR"

if command -v node >/dev/null 2>&1 && [ -d "$TOP/tests/mcp/node_modules/@modelcontextprotocol/sdk" ]; then
	out=$(in_ns none node "$TOP/tests/mcp/fallback-note.mjs" "$SBXTOP" 2>&1)
	like "--mcp with the SDK's default environment: the session works" "$out" '^tools [1-9]'
	like "... and the client gets a notifications/message warning naming the fix" "$out" \
		'"level":"warning","logger":"sbxtop","data":"XDG_RUNTIME_DIR is unset.*/tmp/sbxtop-'"$uid"'.*Pass XDG_RUNTIME_DIR'
	out=$(in_ns private node "$TOP/tests/mcp/fallback-note.mjs" "$SBXTOP" 2>&1)
	like "with /run/user/UID: the session works" "$out" '^tools [1-9]'
	if printf '%s' "$out" | grep -q '"level":"warning"'; then
		not_ok "... and no warning"; diag "$out"
	else
		ok "... and no warning"
	fi
else
	not_ok "node and the MCP SDK (tests/mcp: npm ci) are needed for the --mcp check"
fi
done_testing
