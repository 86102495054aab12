# Every admin command against text others wrote, on real ns sandboxes: an MCP
# client whose name sets the terminal's title and clipboard (OSC 0, OSC 52) and
# moves the cursor (CSI as U+009B), the same in an agent's request reason and
# environment, a host name with a C1 control and DEL that the sandbox asks its
# proxy for, a TLS server name with an escape, file names with escapes, a log
# line, and image, snapshot, host and secret records holding them.  The
# commands come from the command table (`sbxtop --help`): one without a case
# here fails, so a new command gets its hostile output checked.  Each case's
# standard output and error must hold no raw C0 (but newline and tab), DEL or
# C1 control, raw or UTF-8; the cases that show hostile text must show it
# escaped.  Exec output alone is raw, as documented (docs/ARCHITECTURE.md).
. "$(dirname "$0")/../lib.sh"

sbx() { "$SBXTOP" "$@" < /dev/null; }
MCP="python3 $TOP/tests/tools/mcp-calls.py $SBXTOP"
at_exit '"$SBXTOP" serve --stop > /dev/null 2>&1'
destroy_left_at_exit
# What a sandbox or an agent writes: a title, a clipboard write, a CSI clear.
EVIL=$(printf 'x\033]0;pwned-title\007\033]52;c;cm0gLXJmIH4=\007\302\2332J\177y')
# The host a sandbox asks its proxy for: controls a host name may hold there.
EVHOST=$(printf 'ev\302\2332J\177il.test')
export SBXTOP_NET_RESOLVE="$EVHOST:10.255.255.1,up.test:10.255.255.2,sni.test:127.0.0.1"
sport=19$(( $$ % 900 + 100 ))
# Held asks outlive the checks that print them, on a loaded machine too.
export SBXTOP_NET_ASK_TIMEOUT=600

# raw FILE: "RAW" and what, when FILE holds a byte a terminal acts on.
raw() {
	python3 - "$1" <<'EOF'
import sys
b = open(sys.argv[1], "rb").read()
s = b.decode("utf-8", "surrogateescape")
bad = [c for c in s if (ord(c) < 0x20 and c not in "\n\t") or ord(c) == 0x7f
       or 0x80 <= ord(c) <= 0x9f or 0xdc80 <= ord(c) <= 0xdc9f]
print("RAW %r" % "".join(bad[:8]) if bad else "clean")
EOF
}
# out CASE CMD...: run one invocation into $T/o.CASE (stdout and stderr).
out() { _c=$1; shift; "$SBXTOP" "$@" < /dev/null > "$T/o.$_c" 2>&1; }

# --- what others write ------------------------------------------------------------
# An agent: its client name is the sandbox's owner; it sets an environment
# variable and asks for a destination with a reason (the call waits for the
# operator, held past the checks below as the asks are).
MCP_CLIENT="agent-$EVIL" $MCP 600 tools/call \
	"$(python3 -c 'import json,sys; print(json.dumps({"name": "sandbox_create", "arguments": {"name": "esc-a", "max_duration_s": 600, "allow": ["up.test"], "ask": True, "env": {"EV": sys.argv[1]}}}))' "$EVIL")" \
	tools/call "$(python3 -c 'import json,sys; print(json.dumps({"name": "sandbox_net_request", "arguments": {"sandbox_id": "esc-a", "destination": "other.test:443", "reason": "because " + sys.argv[1]}}))' "$EVIL")" \
	> "$T/mcp" 2>&1 &
mpid=$!
at_exit "kill $mpid"
for _i in $(seq 300); do a=$(sbx status --json esc-a 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' 2>/dev/null) && break; sleep 0.1; done
like "an MCP client with a hostile name made a sandbox" "$a" '^sbx-'
# Its user: files whose names are escapes (one a C1 control byte that is not
# UTF-8), a link out named so too.
sbx exec "$a" -- "mkdir -p /workspace/d && printf x > \"/workspace/d/f\$(printf '\\033]0;t\\007')\" &&
	printf x > \"/workspace/d/g\$(printf '\\233')\" &&
	ln -s /etc \"/workspace/d/l\$(printf '\\302\\233')\"" > /dev/null
# Its root: a log line.
sbx exec --root "$a" -- "printf 'log %s\\n' '$EVIL' >> /run/sbxtop/agent.log" > /dev/null
# Its programs: a connection to a host named with controls, held for the
# operator (ask mode), and a TLS ClientHello naming one.
"$SBXTOP" exec -n "$a" -- "python3 -c '
import socket
s = socket.create_connection((\"127.0.0.1\", 3128))
s.sendall(b\"CONNECT ev\\xc2\\x9b2J\\x7fil.test:443 HTTP/1.1\\r\\n\\r\\n\")
s.recv(100)'" > /dev/null 2>&1 &
cpid=$!
at_exit "kill $cpid"
for _i in $(seq 100); do [ "$(sbx net "$a" pending --json | grep -c '"host"')" -ge 2 ] && break; sleep 0.1; done
python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $sport)); s.listen(5)
while True:
    c = s.accept()[0]; c.recv(100); c.close()" & lpid=$!
at_exit "kill $lpid"
until_ok 10 bash -c "echo > /dev/tcp/127.0.0.1/$sport" 2> /dev/null
sbx net "$a" allow "127.0.0.1:$sport"
sbx exec "$a" -- "python3 -c '
import socket, ssl
i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
t = ssl.create_default_context().wrap_bio(i, o, server_hostname=\"aaaaaaaa.test\")
try:
    t.do_handshake()
except ssl.SSLWantReadError:
    pass
h = o.read().replace(b\"aaaaaaaa\", b\"\\x1b]0;t\\x07\\xc2\\x9b\")
s = socket.create_connection((\"127.0.0.1\", 3128))
s.sendall(b\"CONNECT sni.test:$sport HTTP/1.1\\r\\n\\r\\n\")
s.recv(100)
s.sendall(h)
s.recv(100)'" > /dev/null 2>&1
# The operator's stores, holding the same (written as they could be by a tool).
mkdir -p "$XDG_DATA_HOME/sbxtop/images/evimg" "$XDG_DATA_HOME/sbxtop/snapshots/evsnap"
(cd "$XDG_DATA_HOME/sbxtop/images/evimg" && touch vmlinuz initrd rootfs.ext4)
(cd "$XDG_DATA_HOME/sbxtop/snapshots/evsnap" && touch memory disk.qcow2 base.ext4 vmlinuz initrd)
python3 - "$EVIL" "$XDG_DATA_HOME/sbxtop" "$XDG_CONFIG_HOME/sbxtop" <<'EOF'
import json, os, sys
ev, data, cfg = sys.argv[1], sys.argv[2], sys.argv[3]
json.dump({"kernel_version": ev, "rootfs_from": ev, "size_mib": 1},
          open(data + "/images/evimg/image.json", "w"))
json.dump({"source": ev, "image": ev, "memory_mib": 1, "vcpus": 1},
          open(data + "/snapshots/evsnap/snapshot.json", "w"))
os.makedirs(cfg, exist_ok=True)
json.dump({"hosts": [{"name": "evhost", "url": "ssh://u@127.0.0.1:1", "user": ev,
                      "addr": "127.0.0.1", "port": 1}]}, open(cfg + "/hosts.json", "w"))
EOF
printf 'value\n' | "$SBXTOP" secret set EVSECRET --host up.test --header "X-Ev$(printf '\033]0;t\007'): {}" > /dev/null 2>&1

# --- every command ----------------------------------------------------------------
# The cases: CMD -> invocations (CASE ARGS...) whose output is checked.
cmds=$("$SBXTOP" --help 2>&1 | sed -n '/^commands:/,/^$/p' | awk 'NF >= 2 && $1 != "commands:" { print $1 }')
check "the command table is listed ($(echo $cmds | wc -w) commands)" test "$(echo $cmds | wc -w)" -ge 20
b=""
for cmd in $cmds; do
	case $cmd in
	create)	out create-json create --json --name esc-b --max-duration 600 --env "EV=$EVIL"
		b=$(json_get "$(cat "$T/o.create-json")" 'd["id"]' 2>/dev/null)
		out create create --max-duration 5 ;;
	ls)	out ls ls; out ls-json ls --json ;;
	exec)	# Output is the command's, raw by design; what sbxtop itself says is not.
		out exec exec "$a" -- true; out exec-bg exec --background "$a" -- true ;;
	shell)	# A terminal of the sandbox's, raw as exec's output; without one, an error.
		out shell shell "$a" ;;
	completion) out completion completion bash ;;
	cp)	out cp cp "$a:/workspace/d" "$T/cpout" ;;
	logs)	out logs logs "$a" ;;
	forward) out forward forward --list; out forward-json forward --list --json ;;
	status)	out status status "$a"; out status-json status --json "$a" ;;
	diff)	out diff diff "$a"; out diff-stat diff --stat "$a"; out diff-json diff --json "$a" ;;
	suspend) out suspend suspend "$b" ;;
	resume)	out resume resume "$b" ;;
	destroy) out destroy destroy "$b" ;;
	doctor)	out doctor doctor; out doctor-json doctor --json ;;
	gc)	out gc gc ;;
	image)	out image image ls; out image-json image ls --json ;;
	snapshot) out snapshot snapshot ls; out snapshot-json snapshot ls --json ;;
	fork)	out fork fork "$a" ;;
	host)	out host host ls; out host-json host ls --json ;;
	net)	out net net "$a"; out net-json net "$a" --json; out net-pending net "$a" pending
		out net-pending-json net "$a" pending --json; out net-log net "$a" log
		out net-log-json net "$a" log --json ;;
	secret)	out secret secret ls; out secret-json secret ls --json ;;
	setup)	out setup setup aws --dry-run --region xx-none-1 --endpoint-url http://127.0.0.1:1 ;;
	serve)	out serve serve --listen "$EVIL" ;;
	help)	out help help; out help-net help net ;;
	key)	# A key's name is refused with any control in it (C0, C1, DEL, not UTF-8),
		# from the CLI as from /admin/keys: nothing hostile is kept to print.
		out key-add key add "k$EVIL"; out key key ls; out key-json key ls --json ;;
	*)	not_ok "command '$cmd' has no case here: give it one that shows what it prints of others'"
		continue ;;
	esac
	for f in "$T"/o.$cmd "$T"/o.$cmd-*; do
		[ -e "$f" ] || continue
		is "$cmd: $(basename "$f" | sed 's/^o\.//') prints no raw control" "$(raw "$f")" clean
	done
done

# --- and the hostile text reached them, escaped ----------------------------------
like "key add refuses a name with controls in it" "$(cat "$T/o.key-add")" "no control characters"
like "status shows the owner, escaped" "$(cat "$T/o.status")" 'owner: +agent-x\\x1b\]0;pwned-title\\x07\\x1b\]52;c;'
like "status --json: the same as JSON escapes" "$(cat "$T/o.status-json")" '"owner":[[:space:]]*"agent-x\\u001b\]0;pwned-title\\u0007'
like "net pending shows the held host, escaped" "$(cat "$T/o.net-pending")" 'ev\\u009b2J\\x7fil\.test:443'
like "  and the agent's reason" "$(cat "$T/o.net-pending")" 'reason: because x\\x1b\]0;'
like "net shows what waits too" "$(cat "$T/o.net")" 'ev\\u009b2J\\x7fil\.test:443'
like "net log has the ask" "$(cat "$T/o.net-log")" 'ask +ev\\u009b2J'
like "net log --json: valid JSON lines with \\u escapes" "$(cat "$T/o.net-log-json")" '"host":"ev\\u009b2J\\u007fil\.test"'
like "net log: the TLS server name with an escape was refused, not shown" \
	"$(cat "$T/o.net-log")" 'deny +sni\.test:[0-9]+ .*sni unreadable'
like "logs shows the line, escaped" "$(cat "$T/o.logs")" 'log x\\x1b\]0;pwned-title'
like "diff names the files, escaped" "$(cat "$T/o.diff")" 'd/f\\x1b\]0;t\\x07'
like "cp names the link it left out, escaped" "$(cat "$T/o.cp")" 'l\\u009b'
like "image ls shows the image's kernel, escaped" "$(cat "$T/o.image")" 'evimg +x\\x1b\]0;'
like "snapshot ls shows its source, escaped" "$(cat "$T/o.snapshot")" 'evsnap +x\\x1b\]0;'
like "host ls shows its user, escaped" "$(cat "$T/o.host")" 'x\\x1b\]0;pwned-title.*@127\.0\.0\.1'
like "secret ls shows the header, escaped" "$(cat "$T/o.secret")" 'X-Ev\\x1b\]0;t\\x07: \{\}'
like "ls --json shows the environment, escaped" "$(cat "$T/o.ls-json")" '"EV":[[:space:]]*"x\\u001b\]0;pwned-title'
check "the MCP client's JSON lines are untouched (its own channel)" test -s "$T/mcp"
done_testing
