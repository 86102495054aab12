# What a sandbox's root (and its user) may not steer on the host, on real ns
# sandboxes: its log replaced by a link to a host file or by a FIFO (the MCP log
# resource, the exit reason, the listing), its agent socket replaced by a link to
# another socket of the host user, terminal controls written into its log or
# quoted by its agent, and the background log directory taken first by its user.
. "$(dirname "$0")/../lib.sh"

sbx() { "$SBXTOP" "$@" < /dev/null; }
# as_root ID CMD / as_user ID CMD: stdout, status in $rc.
as_root() { _id=$1; shift; "$SBXTOP" exec -n --root "$_id" -- "$@" 2> "$T/err"; rc=$?; }
as_user() { _id=$1; shift; "$SBXTOP" exec -n "$_id" -- "$@" 2> "$T/err"; rc=$?; }
MCP="python3 $TOP/tests/tools/mcp-calls.py $SBXTOP"
at_exit '"$SBXTOP" serve --stop > /dev/null 2>&1'
destroy_left_at_exit
# raw FILE: "RAW" when FILE holds ESC, BEL or C1 CSI (0x9b, raw or as U+009B).
raw() { python3 -c 'import sys; b=open(sys.argv[1],"rb").read(); print("RAW" if (b"\x1b" in b or b"\x07" in b or b"\x9b" in b) else "clean")' "$1"; }

echo "HOST-PRIVATE-KEY-$$ deadline signal idle" > "$T/hostkey"
chmod 600 "$T/hostkey"

a=$(sbx create --name trust-a --max-duration 600); rc=$?
is "create sandbox A" "$rc" 0
dir="$XDG_STATE_HOME/sbxtop/sandboxes/$a"
check "A's directory is where the test looks" test -d "$dir/run"

# --- the sandbox's user cannot touch run/ at all ---------------------------------
as_user "$a" "ln -sf $T/hostkey /run/sbxtop/agent.log 2>&1; mkfifo /run/sbxtop/x 2>&1; true" > "$T/out"
like "the sandbox's user cannot replace its agent log" "$(cat "$T/out")" 'Permission denied'
check "the log is still a regular file" test -f "$dir/run/agent.log" -a ! -L "$dir/run/agent.log"

# --- its root replaces the log with a link to a host file -------------------------
as_root "$a" "rm -f /run/sbxtop/agent.log && ln -s $T/hostkey /run/sbxtop/agent.log && echo LINKED" > "$T/out"
is "the sandbox's root links its log to a host file" "$(cat "$T/out")" LINKED
check "the link is there on the host" test -L "$dir/run/agent.log"
$MCP 20 resources/read "{\"uri\": \"sbx://$a/logs\"}" > "$T/mcp" 2>&1
check "MCP resources/read does not return the host file" test -z "$(grep HOST-PRIVATE-KEY "$T/mcp")"
like "resources/read says the log was replaced" "$(cat "$T/mcp")" 'not a regular file'
sbx logs "$a" > "$T/out" 2>&1
check "sbxtop logs does not print the host file" test -z "$(grep HOST-PRIVATE-KEY "$T/out")"

# --- its root replaces the log with a FIFO -----------------------------------------
as_root "$a" "rm -f /run/sbxtop/agent.log && mkfifo /run/sbxtop/agent.log && echo FIFO" > "$T/out"
is "the sandbox's root puts a FIFO in its log's place" "$(cat "$T/out")" FIFO
check "the FIFO is there on the host" test -p "$dir/run/agent.log"
$MCP 20 resources/read "{\"uri\": \"sbx://$a/logs\"}" sandbox_list '{}' > "$T/mcp" 2>&1; rc=$?
is "resources/read of a FIFO answers (no hang)" "$rc" 0
like "... with an error that says why" "$(head -1 "$T/mcp")" 'not a regular file'
timeout 20 "$SBXTOP" ls > /dev/null 2>&1; rc=$?
is "sbxtop ls answers with a FIFO as the log" "$rc" 0
timeout 20 "$SBXTOP" logs "$a" > /dev/null 2>&1; rc=$?
check "sbxtop logs refuses the FIFO at once (status $rc, not 124)" test "$rc" -ne 124 -a "$rc" -ne 0

# --- controls written into the log ------------------------------------------------
as_root "$a" "rm -f /run/sbxtop/agent.log; printf 'x \\033]2;pwned-title\\007 \\033]52;c;ZXZpbA==\\007 \\302\\23331m c1 \\233m\\n' >> /run/sbxtop/agent.log; echo W" > "$T/out"
is "the sandbox's root writes OSC 2, OSC 52 and C1 CSI into its log" "$(cat "$T/out")" W
check "the raw bytes are in the file" test "$(raw "$dir/run/agent.log")" = RAW
sbx logs "$a" > "$T/logs" 2>&1
is "sbxtop logs escapes them" "$(raw "$T/logs")" clean
like "... and shows them as text" "$(cat "$T/logs")" 'x \\x1b\]2;pwned-title\\x07 .*\\u009b31m c1 \\x9bm'

# --- the agent's error line -------------------------------------------------------
"$SBXTOP" exec -n --cwd "/nonexistent$(printf '\033]2;t\007')" "$a" -- true > /dev/null 2> "$T/err"
check "an error quoting a bad cwd fails the exec" test -s "$T/err"
is "the error line carries no raw control" "$(raw "$T/err")" clean

# --- the agent socket replaced by a link to another socket of the host user -----
python3 - "$T/decoy.sock" "$T/decoy.log" <<'PY' &
import socket, sys, os
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
with open(sys.argv[2], "ab") as log:
    while True:
        c, _ = s.accept(); c.settimeout(2)
        try:
            log.write(b"CONNECTED\n" + c.recv(65536)); log.flush()
        except Exception:
            pass
        c.close()
PY
decoy=$!
at_exit "kill $decoy"
for i in $(seq 50); do [ -S "$T/decoy.sock" ] && break; sleep 0.1; done
b=$(sbx create --name trust-b --max-duration 600)
bdir="$XDG_STATE_HOME/sbxtop/sandboxes/$b"
as_root "$b" "(sleep 1; mv /run/sbxtop/agent.sock /run/sbxtop/real.sock; ln -s $T/decoy.sock /run/sbxtop/agent.sock) > /dev/null 2>&1 & echo SWAP" > "$T/out"
is "the sandbox's root swaps its socket for a link" "$(cat "$T/out")" SWAP
for i in $(seq 50); do [ -L "$bdir/run/agent.sock" ] && break; sleep 0.1; done
check "the link is in place on the host" test -L "$bdir/run/agent.sock"
timeout 30 "$SBXTOP" exec -n "$b" -- echo hello > "$T/out" 2> "$T/err"; rc=$?
check "the next exec fails" test "$rc" -ne 0
like "... saying the socket is a link" "$(cat "$T/err")" 'is a link, not the agent.s socket'
$MCP 20 tools/call "{\"name\": \"sandbox_exec\", \"arguments\": {\"sandbox_id\": \"$b\", \"command\": \"true\"}}" > /dev/null 2>&1
timeout 20 "$SBXTOP" forward --foreground "$b" 80:0 > /dev/null 2>&1 & fw=$!
sleep 2; kill $fw 2>/dev/null; wait $fw 2>/dev/null
check "the decoy socket never got a connection (no secret, no request)" test ! -s "$T/decoy.log"

# --- the exit reason ----------------------------------------------------------------
c=$(sbx create --name trust-c --max-duration 6)
cdir="$XDG_STATE_HOME/sbxtop/sandboxes/$c"
# After the deadline the agent gives its processes 2 s: a loop that ignores TERM
# writes a last line that names the deadline, with controls in it.
as_root "$c" "nohup sh -c 'trap \"\" TERM; while :; do printf \"evil deadline \\033]2;t\\007 \\302\\233m\\n\" >> /run/sbxtop/agent.log; sleep 0.05; done' > /dev/null 2>&1 & echo BG" > "$T/out"
is "the sandbox's root starts a writer that outlives TERM" "$(cat "$T/out")" BG
for i in $(seq 150); do
	sbx status --json "$c" > "$T/st" 2>&1
	grep -q '"terminated"' "$T/st" && break
	sleep 0.2
done
like "the sandbox ended at its deadline" "$(cat "$T/st")" '"terminated"'
sbx status "$c" > "$T/st" 2>&1
is "status shows the exit reason without raw controls" "$(raw "$T/st")" clean
sbx ls --json > "$T/ls" 2>&1
is "ls --json carries no raw controls" "$(raw "$T/ls")" clean

d=$(sbx create --name trust-d --max-duration 6)
as_root "$d" "rm -f /run/sbxtop/agent.log && ln -s $T/hostkey /run/sbxtop/agent.log && echo L" > /dev/null
for i in $(seq 150); do
	sbx status --json "$d" > "$T/st" 2>&1
	grep -q '"terminated"' "$T/st" && break
	sleep 0.2
done
like "sandbox D ended" "$(cat "$T/st")" '"terminated"'
sbx ls --json > "$T/ls" 2>&1
check "the exit reason does not quote the host file (status)" test -z "$(grep HOST-PRIVATE-KEY "$T/st")"
check "the exit reason does not quote the host file (ls --json)" test -z "$(grep HOST-PRIVATE-KEY "$T/ls")"

# --- the background log directory -------------------------------------------------
e=$(sbx create --name trust-e --max-duration 600)
as_user "$e" 'stat -c "%U %a" /tmp/sbxtop; rm -rf /tmp/sbxtop 2>/dev/null; mkdir /tmp/sbxtop 2>&1; true' > "$T/out"
like "the agent made /tmp/sbxtop at start, as root, 0755" "$(head -1 "$T/out")" '^root 755$'
like "the sandbox's user cannot take it" "$(cat "$T/out")" 'File exists'
"$SBXTOP" exec -n --background "$e" -- 'echo bg-ok' > "$T/bg" 2>&1; rc=$?
is "a background exec still starts" "$rc" 0

# --- names that are not UTF-8, through MCP -----------------------------------------
as_user "$e" "printf x > \"/workspace/\$(printf 'bad\\377name')\"; echo MADE" > "$T/out"
is "the sandbox's user makes a file whose name is not UTF-8" "$(cat "$T/out")" MADE
$MCP 20 tools/call "{\"name\": \"sandbox_list_files\", \"arguments\": {\"sandbox_id\": \"$e\"}}" > "$T/mcp" 2>&1
out=$(python3 -c '
import base64, json, sys
for line in open(sys.argv[1], "rb"):
    d = json.loads(line.decode("utf-8"))
for e in d["result"]["structuredContent"]["entries"]:
    if "path_b64" in e:
        print(e["path"], base64.b64decode(e["path_b64"]))' "$T/mcp" 2>&1)
is "sandbox_list_files is valid JSON and names the file exactly" "$out" "/workspace/bad�name b'/workspace/bad\\xffname'"

# --- links the user plants for the agent's writes ------------------------------------
# A write or an upload of the user's (not as_root) is the user's: through a link
# to a file or a directory of root's it gets no further than the user would.
as_user "$e" "ln -s /etc/passwd /workspace/planted && ln -s /etc /workspace/etcdir && echo LINKED" > "$T/out"
is "the sandbox's user plants links to /etc/passwd and /etc" "$(cat "$T/out")" LINKED
as_root "$e" 'stat -c "%U %s" /etc/passwd; sha256sum < /etc/passwd' > "$T/before"
w() { $MCP 20 tools/call "{\"name\": \"sandbox_write_file\", \"arguments\": {\"sandbox_id\": \"$e\", \"path\": \"$1\", \"content\": \"pwned::0:0::/root:/bin/sh\\n\"}}" 2>&1; }
w /workspace/planted > "$T/mcp"
like "sandbox_write_file through the link to /etc/passwd is refused" "$(cat "$T/mcp")" \
	'permission denied.*"isError": *true'
as_root "$e" 'stat -c "%U %s" /etc/passwd; sha256sum < /etc/passwd' > "$T/after"
is "  /etc/passwd is unchanged, and still root's" "$(cat "$T/after")" "$(cat "$T/before")"
w /workspace/etcdir/evil > "$T/mcp"
like "sandbox_write_file through the link to /etc is refused" "$(cat "$T/mcp")" '"isError": *true'
as_root "$e" 'test -e /etc/evil && echo MADE || echo none' > "$T/out"
is "  nothing was made in /etc" "$(cat "$T/out")" none
mkdir -p "$T/up/d" && echo x > "$T/up/d/f"
sbx cp "$T/up/d" "$e:/workspace/etcdir/d" > /dev/null 2> "$T/cp.err"; rc=$?
check "cp into the link to /etc is refused (exit $rc)" test "$rc" -ne 0
like "  saying permission denied" "$(cat "$T/cp.err")" 'permission denied'
as_root "$e" 'test -e /etc/d && echo MADE || echo none' > "$T/out"
is "  nothing arrived in /etc" "$(cat "$T/out")" none
w /workspace/mine.txt > "$T/mcp"
as_user "$e" 'stat -c %U /workspace/mine.txt' > "$T/out"
is "a write where the user may: the file is the user's" "$(cat "$T/out")" sandbox

timeout 30 "$SBXTOP" serve --stop > /dev/null 2>&1; rc=$?
is "serve --stop does not time out" "$rc" 0
done_testing
