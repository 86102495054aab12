# Remote hosts over SSH, against real OpenSSH servers (Debian's sshd) on loopback
# ports: host keys (unknown refused, --accept-new records, a changed one
# refused), bad input (unknown host, refused connection, a key the server
# refuses), then an ns sandbox on a host end to end (create, exec, files, a
# forward, destroy leaving nothing there), a stopped sshd making its sandboxes
# unreachable and their coming back, and --host auto spreading sandboxes over two
# hosts.  Each "host" keeps its sandboxes and bundle cache in its own directory
# (sshd's SetEnv), so the two never share state with each other or the client.
. "$(dirname "$0")/../lib.sh"

skip_all() { echo "1..0 # SKIP $1"; exit 0; }
[ -x /usr/sbin/sshd ] || skip_all "no /usr/sbin/sshd (apt-get install openssh-server)"
[ "$(id -u)" -eq 0 ] || skip_all "the test sshd logs in as root: run as root"
[ -x "$BUILD/agent-bundle/sbxtop-launch" ] || skip_all "no agent bundle: make agent-bundle"
sbx() { "$SBXTOP" --standalone "$@"; }
export HOME="$T/home"
mkdir -p -m 0700 "$HOME/.ssh" /run/sshd
unset SSH_AUTH_SOCK

ssh-keygen -q -t ed25519 -N '' -f "$T/id_test" -C sbxtop-test
ssh-keygen -q -t ed25519 -N '' -f "$T/id_other" -C sbxtop-other
cp "$T/id_test.pub" "$T/authorized_keys"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# sshd_start N: an sshd for host N on port $PORT_N with host key $T/hk_N.
sshd_start() {
	_h=$1
	_p=$(eval echo "\$PORT_$_h")
	mkdir -p "$T/r$_h"
	[ -f "$T/hk_$_h" ] || ssh-keygen -q -t ed25519 -N '' -f "$T/hk_$_h"
	cat > "$T/sshd_$_h.conf" <<EOF
Port $_p
ListenAddress 127.0.0.1
HostKey $T/hk_$_h
PidFile $T/sshd_$_h.pid
AuthorizedKeysFile $T/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowStreamLocalForwarding yes
Subsystem sftp internal-sftp
SetEnv XDG_STATE_HOME=$T/r$_h/state XDG_CACHE_HOME=$T/r$_h/cache XDG_DATA_HOME=$T/r$_h/data XDG_RUNTIME_DIR=$T/r$_h/run
LogLevel ERROR
EOF
	/usr/sbin/sshd -D -e -f "$T/sshd_$_h.conf" 2>> "$T/sshd_$_h.log" &
	eval "SSHD_$_h=$!"
	for _i in $(seq 100); do
		python3 -c "import socket; socket.create_connection(('127.0.0.1', $_p), 1)" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "# sshd $_h did not start:"; cat "$T/sshd_$_h.log"
	return 1
}
sshd_stop() {
	_pid=$(eval echo "\$SSHD_$1")
	kill "$_pid" 2>/dev/null; wait "$_pid" 2>/dev/null
	# Its sessions' processes too: a stopped host answers nothing.
	pkill -P "$_pid" 2>/dev/null
	return 0
}
PORT_1=$(free_port)
PORT_2=$(free_port)
sshd_start 1 || exit 1
sshd_start 2 || exit 1
at_exit 'sshd_stop 1; sshd_stop 2'
# Whatever a failed test left on a host goes with the host: kill its inits.
at_exit 'for f in "$T"/r*/state/sbxtop/sandboxes/*/backend.json; do [ -f "$f" ] && kill -9 $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"pid\"])" "$f") 2>/dev/null; done'

# --- bad input ------------------------------------------------------------
out=$(sbx host add h1 "ssh://root@127.0.0.1:$PORT_1" --identity "$T/id_test" 2>&1); rc=$?
is "an unknown host key is refused: exit 1" "$rc" 1
like "and says how to trust it" "$out" "host h1: the host key of \[127.0.0.1\]:$PORT_1 is not in .*known_hosts.*--accept-new"
is "nothing is recorded then" "$(cat "$HOME/.ssh/known_hosts" 2>/dev/null)" ""
out=$(sbx host ls 2>&1)
check "and the host is not stored" sh -c "! printf '%s' \"\$1\" | grep -q '^h1 '" _ "$out"

out=$(sbx host add h1 "ssh://root@127.0.0.1:$PORT_1" --identity "$T/id_other" --accept-new 2>&1); rc=$?
is "a key the server refuses: exit 1" "$rc" 1
like "names the host, the user and the key" "$out" "host h1: root@127.0.0.1 refused the key $T/id_other"
like "and the fix" "$out" "authorized_keys"

dead=$(free_port)
out=$(sbx host add h9 "ssh://root@127.0.0.1:$dead" --identity "$T/id_test" --accept-new 2>&1); rc=$?
is "a refused connection: exit 1" "$rc" 1
like "says so, naming the host" "$out" "host h9: cannot connect to 127.0.0.1 port $dead: Connection refused"

out=$(sbx host add h9 "http://root@127.0.0.1" 2>&1); rc=$?
is "a URL that is not ssh://: exit 2 (bad input)" "$rc" 2
like "says what to write" "$out" "ssh://USER@HOST"
out=$(sbx host add h9 "ssh://root@127.0.0.1:99999" 2>&1)
like "a bad port is named" "$out" "the port is not 1 to 65535"
out=$(sbx create --host nosuch 2>&1); rc=$?
is "create on an unknown host: exit 2" "$rc" 2
like "says which and how to list them" "$out" "unknown host 'nosuch'.*host ls"
out=$(sbx create --host auto 2>&1); rc=$?
is "--host auto with no hosts fails" "$rc" 1
like "and says how to add one" "$out" "no hosts.*host add"

# --- adding hosts ---------------------------------------------------------
out=$(sbx host add h1 "ssh://root@127.0.0.1:$PORT_1" --identity "$T/id_test" --accept-new 2>&1); rc=$?
is "--accept-new trusts the host on first use" "$rc" 0
like "the key is recorded in known_hosts" "$(cat "$HOME/.ssh/known_hosts")" "^\[127.0.0.1\]:$PORT_1 ssh-ed25519 "
out=$(sbx host add h1 "ssh://root@127.0.0.1:$PORT_1" --identity "$T/id_test" 2>&1)
like "a second host of the same name is refused" "$out" "a host named 'h1' exists"
out=$(sbx host add h2 "ssh://root@127.0.0.1:$PORT_2" --identity "$T/id_test" --accept-new --max-sandboxes 3 2>&1); rc=$?
is "a second host" "$rc" 0
out=$(sbx host ls); rc=$?
is "host ls exits 0" "$rc" 0
like "host ls shows h1 reachable with its kernel, backends and memory" "$out" "h1 +root@127.0.0.1:$PORT_1 +yes +$(uname -r) +ns[a-z,]* +0 +[0-9]+ MiB"
like "and h2 with its maximum" "$out" "h2 .* 0/3 "
out=$(sbx host ls --json)
is "host ls --json" "$(json_get "$out" '[h["name"]+":"+str(h["reachable"]) for h in d]')" "['h1:True', 'h2:True']"
out=$(sbx host check h1); rc=$?
is "host check passes on a good host" "$rc" 0
like "it connects" "$out" "ok +ssh: connected, host key verified"
like "finds the bundle there" "$out" "ok +agent bundle: .*/r1/cache/sbxtop/bundle-[0-9a-f]+"
like "and shows the remote doctor's checks" "$out" "ok +user namespaces: "

# --- a sandbox on a host ----------------------------------------------------
id=$(sbx create --host h1 2>"$T/err"); rc=$?
is "create --host h1 exits 0" "$rc" 0
[ "$rc" -eq 0 ] || diag "$(cat "$T/err")"
like "prints the id" "$id" '^sbx-[0-9a-f]{6}$'
check "the sandbox lives on the host (its directory there)" test -d "$T/r1/state/sbxtop/sandboxes/$id"
check "and not here" test ! -e "$XDG_STATE_HOME/sbxtop/sandboxes/$id/backend.json"
out=$(sbx ls)
like "ls shows it with its host" "$out" "$id +- +ssh:h1 +running"
out=$(sbx ls --json)
is "ls --json carries the host" "$(json_get "$out" '[s["host"] for s in d if s["id"]=="'"$id"'"]')" "['h1']"
out=$(sbx status "$id")
like "status names the host" "$out" "host: +h1"
like "and the agent answers through the relay" "$out" "agent: +unix:$XDG_RUNTIME_DIR/sbxtop/ssh-[0-9]+/$id.sock \\(answering"
out=$(sbx exec "$id" -- 'echo hello from $(hostname); id -u'); rc=$?
is "exec over SSH exits 0" "$rc" 0
like "and runs in the sandbox" "$out" "hello from $id"

# Logs: a local copy of the host's file, brought up to date as it is read.
out=$(sbx logs "$id" 2>&1); rc=$?
is "logs of a remote sandbox exits 0" "$rc" 0
like "and shows its agent's log" "$out" "sbxtop-agent info: sbxtop-agent .* ready \\(pid 1\\)"
check "the copy is in the local state directory" test -f "$XDG_STATE_HOME/sbxtop/sandboxes/$id/agent.log"
"$SBXTOP" --standalone logs -f "$id" > "$T/follow" 2>&1 &
fpid=$!
at_exit "kill $fpid 2>/dev/null"
sleep 1
# As the agent would: a line appended to its log on the host.
echo "later-line-$((6*7))" >> "$T/r1/state/sbxtop/sandboxes/$id/run/agent.log"
for _i in $(seq 100); do grep -q 'later-line' "$T/follow" && break; sleep 0.1; done
like "logs -f shows a line appended later" "$(cat "$T/follow")" "later-line-42"
kill "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null
# The agent runs as the sandbox's root, which owns its run directory: a log it
# swaps for a link to a host file is not read through.
rlog="$T/r1/state/sbxtop/sandboxes/$id/run/agent.log"
echo "host-secret-$$" > "$T/r1/secret"
mv "$rlog" "$rlog.real"; ln -s "$T/r1/secret" "$rlog"
out=$(sbx logs "$id" 2>&1); rc=$?
check "a log replaced by a symlink on the host is refused" test "$rc" -ne 0
like "saying why" "$out" "is not a regular file: not read"
check "and the link's target is not copied" sh -c "! grep -rq host-secret '$XDG_STATE_HOME/sbxtop/sandboxes/$id'"
rm "$rlog"; mv "$rlog.real" "$rlog"
sbx exec "$id" -- 'exit 7'; rc=$?
is "the exit status comes back" "$rc" 7
# Its root swaps the agent's socket for a link to another unix socket of the
# host's user: sshd would follow it, so the client reaches the agent through a
# hard link made at create in the sandbox's host directory, out of its reach.
rdir="$T/r1/state/sbxtop/sandboxes/$id"
like "the endpoint is the pinned socket, not run/agent.sock" \
	"$(json_get "$(cat "$XDG_STATE_HOME/sbxtop/sandboxes.json")" '[s["backend_data"]["endpoint"] for s in d["sandboxes"] if s["id"]=="'"$id"'"][0]')" \
	"unix:$rdir/agent.sock\$"
check "which is a socket" test -S "$rdir/agent.sock"
python3 - "$T/decoy.sock" "$T/decoy.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
while True:
    c, _ = s.accept()
    open(sys.argv[2], "a").write("CONNECTED\n"); c.close()
PY
decoy=$!
at_exit "kill $decoy 2>/dev/null"
for _i in $(seq 50); do [ -S "$T/decoy.sock" ] && break; sleep 0.05; done
sbx exec --root "$id" -- "rm -f /run/sbxtop/agent.sock && ln -s $T/decoy.sock /run/sbxtop/agent.sock && echo SWAPPED" > "$T/out" 2>&1
is "the sandbox's root replaces its agent socket with a link" "$(cat "$T/out")" SWAPPED
check "the link is there on the host" test -L "$rdir/run/agent.sock"
is "exec still reaches the agent" "$(sbx exec "$id" -- echo still-the-agent 2>&1)" still-the-agent
check "and nothing connected to the socket the link names" test ! -e "$T/decoy.log"
kill "$decoy" 2>/dev/null
printf 'some data\n' > "$T/up.txt"
sbx cp "$T/up.txt" "$id:up.txt"; rc=$?
is "cp in" "$rc" 0
is "the file is in the sandbox" "$(sbx exec "$id" -- cat /workspace/up.txt)" "some data"
sbx exec "$id" -- 'head -c 300000 /dev/urandom > big; sha256sum big | cut -c1-64' > "$T/sum1"
sbx cp "$id:big" "$T/big"; rc=$?
is "cp out of 300 kB" "$rc" 0
is "arrives whole" "$(sha256sum "$T/big" | cut -c1-64)" "$(cat "$T/sum1")"
head -c 8000000 /dev/urandom > "$T/big-in"
sbx cp "$T/big-in" "$id:big-in"; rc=$?
is "cp in of 8 MB" "$rc" 0
is "arrives whole" "$(sbx exec "$id" -- 'sha256sum big-in | cut -c1-64')" "$(sha256sum "$T/big-in" | cut -c1-64)"
like "over ssh, copies are compressed both ways (zstd)" "$(sbx logs "$id" | grep 'archive: ' | tr '\n' ' ')" \
	"sent /workspace/big \(tar.zst.*received /workspace \(tar.zst"
out=$(sbx exec "$id" -- 'yes abcdefgh | head -c 2000000 | wc -c')
is "2 MB of output through the relay" "$out" 2000000

# A forward: the core server relays through its own session.
sbx exec "$id" -- 'mkdir -p srv && echo served > srv/index.html && cd srv && nohup python3 -m http.server 8000 >/dev/null 2>&1 &' >/dev/null
for _i in $(seq 50); do sbx exec "$id" -- 'python3 -c "import socket; socket.create_connection((\"127.0.0.1\",8000),1)"' 2>/dev/null && break; sleep 0.1; done
fport=$(free_port)
"$SBXTOP" forward "$id" "8000:$fport" > "$T/fwd" 2>&1; rc=$?
is "forward to the remote sandbox" "$rc" 0
out=$(curl -s --max-time 10 "http://127.0.0.1:$fport/index.html")
is "the forwarded port answers" "$out" "served"

stale=""
for d in "$XDG_RUNTIME_DIR"/sbxtop/ssh-*; do
	[ -e "$d" ] && [ ! -e "/proc/${d##*/ssh-}" ] && stale="$stale $d"
done
is "no relay sockets left by processes that exited" "$stale" ""

# --- the host goes away and comes back ---------------------------------------
sshd_stop 1
out=$(sbx ls 2>&1)
like "a stopped sshd: the sandbox shows unreachable" "$out" "$id .*ssh:h1 +unreachable"
like "with the reason" "$out" "$id: host h1: cannot connect to 127.0.0.1 port $PORT_1"
out=$(sbx exec "$id" -- true 2>&1); rc=$?
check "exec on it fails" test "$rc" -ne 0
like "saying why and that the sandbox is kept" "$out" "sandbox $id is unreachable: host h1: cannot connect.*host check h1.*kept"
out=$(sbx host ls 2>&1)
like "host ls shows the host down" "$out" "h1 .* no "
sshd_start 1
is "the sshd back: exec works at once" "$(sbx exec "$id" -- cat /workspace/up.txt)" "some data"
out=$(sbx ls 2>&1)
like "and ls says running again" "$out" "$id .*ssh:h1 +running"

# --- a changed host key ---------------------------------------------------------
sshd_stop 1
mv "$T/hk_1" "$T/hk_1.old"; mv "$T/hk_1.pub" "$T/hk_1.old.pub"
sshd_start 1
out=$(sbx exec "$id" -- true 2>&1); rc=$?
check "a changed host key: exec refused" test "$rc" -ne 0
like "the message names the host and the fix" "$out" "host h1: the host key of \[127.0.0.1\]:$PORT_1 has CHANGED.*ssh-keygen -R"
out=$(sbx host add h3 "ssh://root@127.0.0.1:$PORT_1" --identity "$T/id_test" --accept-new 2>&1); rc=$?
is "--accept-new never replaces a changed key" "$rc" 1
sshd_stop 1
mv "$T/hk_1.old" "$T/hk_1"; mv "$T/hk_1.old.pub" "$T/hk_1.pub"
sshd_start 1

# --- destroy leaves nothing ------------------------------------------------------
ipid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$T/r1/state/sbxtop/sandboxes/$id/backend.json")
sbx destroy "$id"; rc=$?
is "destroy exits 0" "$rc" 0
check "the sandbox's directory on the host is gone" test ! -e "$T/r1/state/sbxtop/sandboxes/$id"
check "and the local copy of its logs" test ! -e "$XDG_STATE_HOME/sbxtop/sandboxes/$id"
like "and its record" "$(sbx ls)" "^ID[^\n]*$"
# Gone, or a zombie until the host's init reaps it.
st=$(awk '{print $3}' "/proc/$ipid/stat" 2>/dev/null)
check "its init is gone from the host" test -z "$st" -o "$st" = Z

# --- the remote sweep: a sandbox there that no record here names ----------------------
# Its record lost (what a client killed between the host's create and its own
# record would leave, were the record not reserved first): gc asks each host's
# launcher, which takes only what carries this state directory's label.
# No core server meanwhile: one started less than 30 s ago sweeps on its own.
"$SBXTOP" serve --stop > /dev/null 2>&1
oid=$(sbx create --host h1 < /dev/null)
odir="$T/r1/state/sbxtop/sandboxes/$oid"
opid=$(json_get "$(cat "$odir/backend.json")" 'd["pid"]')
record_drop "$oid"
# Another client of the same host, with a state directory of its own.
other=$(XDG_STATE_HOME="$T/state2" "$SBXTOP" --standalone create --host h1 < /dev/null)
at_exit "XDG_STATE_HOME='$T/state2' '$SBXTOP' --standalone destroy $other"
out=$(sbx gc --dry-run)
like "remote orphan: gc --dry-run lists its agent on the host" "$out" "$oid +agent +host h1: pid $opid \\(no record\\)"
like "remote orphan: and its directory there" "$out" "$oid +directory +host h1: $odir \\(no record\\)"
check "remote orphan: another client's sandbox there is not listed" sh -c "! printf '%s' \"\$1\" | grep -q '$other'" _ "$out"
check "remote orphan: a dry run leaves it running" test -d "/proc/$opid"
sbx gc > /dev/null; rc=$?
is "remote orphan: gc exits 0" "$rc" 0
st=$(awk '{print $3}' "/proc/$opid/stat" 2>/dev/null)
check "remote orphan: its init is gone from the host" test -z "$st" -o "$st" = Z
check "remote orphan: and its directory" test ! -e "$odir"
is "remote orphan: the other client's sandbox there still answers" \
	"$(XDG_STATE_HOME="$T/state2" "$SBXTOP" --standalone exec "$other" -- echo up 2>&1)" up
XDG_STATE_HOME="$T/state2" "$SBXTOP" --standalone destroy "$other" > /dev/null

# --- MCP: sandbox_create takes a host, sandbox_list shows it -------------------------
out=$(timeout 60 python3 "$TOP/tests/tools/mcp-host.py" "$SBXTOP" h2 2>&1)
like "MCP sandbox_create with host h2" "$out" "create h2 ssh"
like "MCP sandbox_exec there" "$out" "exec via mcp"
like "MCP sandbox_vm_logs shows its agent log" "$out" "vmlogs True"
like "MCP sandbox_list shows the host" "$out" "list \\['h2'\\]"
like "MCP sandbox_destroy" "$out" "destroy False"

# --- --host auto spreads sandboxes -----------------------------------------------------
a=$(sbx create --host auto); b=$(sbx create --host auto)
out=$(sbx ls --json)
hosts=$(json_get "$out" '" ".join(sorted(s["host"] for s in d))')
is "two --host auto sandboxes land on the two hosts" "$hosts" "h1 h2"
out=$(sbx host rm h2 2>&1); rc=$?
is "host rm with sandboxes is refused" "$rc" 1
like "and says what to do" "$out" "still has 1 sandbox.*destroy them first"
sbx destroy "$a" "$b"; rc=$?
is "destroy both" "$rc" 0
is "nothing left on either host" "$(ls "$T/r1/state/sbxtop/sandboxes" "$T/r2/state/sbxtop/sandboxes" 2>/dev/null | grep -c sbx-)" 0
sbx host rm h2; rc=$?
is "host rm" "$rc" 0
out=$(sbx host ls)
check "h2 is gone from host ls" sh -c "! printf '%s' \"\$1\" | grep -q '^h2 '" _ "$out"
ls -d "$T"/r1/cache/sbxtop/bundle-* > "$T/bundles" 2>/dev/null
is "one bundle cached on the host, copied once" "$(wc -l < "$T/bundles")" 1

echo "1..$_n"
done_testing
