# sbxtop fork on the ns backend: the copies start with the source's files
# (workspace, the root's changes, a host layer's whiteouts, owners and modes),
# each is a sandbox of its own (id, name, secret), they do not share what they
# write, the source goes on as it was, and what the source planted in its tree
# (links to host paths, a FIFO) is copied as what it is, never followed.
. "$(dirname "$0")/../lib.sh"

sbx() { "$SBXTOP" "$@" < /dev/null; }
run() { _id=$1; shift; "$SBXTOP" exec -n "$_id" -- "$@" 2> "$T/err"; rc=$?; }
rootrun() { _id=$1; shift; "$SBXTOP" exec --root -n "$_id" -- "$@" 2> "$T/err"; rc=$?; }
# reg ID FIELD: a field of the registry record (secrets included).
reg() {
	python3 - "$XDG_STATE_HOME/sbxtop/sandboxes.json" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = d["sandboxes"] if isinstance(d, dict) else d
for s in v:
    if s["id"] == sys.argv[2]:
        x = s
        for k in sys.argv[3].split("."):
            x = x[k]
        print(x)
PY
}

src=$(sbx create --name fsrc --max-duration 600); rc=$?
at_exit "$SBXTOP destroy $src"
is "create the source" "$rc" 0

# Host things the source's tree will point at.
mkdir -p "$T/hostdir"
echo host-only-content > "$T/hostdir/hostonly-file"
echo host-secret > "$T/hostsecret"
before=$(stat -c %Y:%s "$T/hostsecret")

run "$src" 'echo state-1 > /workspace/st && mkdir -m 700 /workspace/priv && echo p > /workspace/priv/f && chmod 640 /workspace/st && ln -s /etc/shadow /workspace/lnk' > /dev/null
is "state written in the source" "$rc" 0
rootrun "$src" "echo etc-change > /etc/forkt && rm /usr/bin/yes && ln -s $T/hostsecret /etc/evil && ln -s $T/hostdir /etc/evildir && mkfifo /etc/evilfifo && mkfifo /workspace/fifo" > /dev/null
is "hostile links and FIFOs planted in the source" "$rc" 0

t0=$(date +%s%N)
out=$(timeout 60 "$SBXTOP" fork "$src" -n 2 < /dev/null 2> "$T/err"); rc=$?
t1=$(date +%s%N)
is "fork -n 2 succeeds (no FIFO held it up)" "$rc" 0
diag "fork of 2: $(( (t1 - t0) / 1000000 )) ms; $(cat "$T/err")"
c1=$(printf '%s\n' "$out" | sed -n 1p); c2=$(printf '%s\n' "$out" | sed -n 2p)
at_exit "$SBXTOP destroy $c1"; at_exit "$SBXTOP destroy $c2"
like "the first copy has an id" "$c1" '^sbx-[0-9a-f]{6}$'
like "the second copy has an id" "$c2" '^sbx-[0-9a-f]{6}$'
check "the ids differ from each other and the source" test "$c1" != "$c2" -a "$c1" != "$src" -a "$c2" != "$src"
like "the copies are named after the source" "$(sbx ls)" "fsrc-[0-9a-f]{6} +ns +running"
# sbxtop(1): "a name (the source's with the new id's suffix)".
for c in "$c1" "$c2"; do
	is "copy $c is named fsrc- and its own id's suffix" "$(sbx ls --json | python3 -c '
import json, sys
print([s["name"] for s in json.load(sys.stdin) if s["id"] == sys.argv[1]][0])' "$c")" \
	    "fsrc-${c#sbx-}"
done

# --- state copied ---------------------------------------------------------------
for c in "$c1" "$c2"; do
	out=$(run "$c" 'cat /workspace/st /workspace/priv/f /etc/forkt; stat -c "%U:%G %a" /workspace/st /workspace/priv; readlink /workspace/lnk; test -e /usr/bin/yes && echo YES-IS-BACK; test -p /workspace/fifo && echo FIFO')
	is "copy $c has the source's files, owners, modes, link, whiteout and FIFO" "$out" "state-1
p
etc-change
sandbox:sandbox 640
sandbox:sandbox 700
/etc/shadow
FIFO"
done

# --- the host followed nothing ----------------------------------------------------
d1=$(reg "$c1" backend_data.dir)
check "the copy's link to a host file is a link on the host" test -L "$d1/upper/etc/evil"
is "the link still names the host path" "$(readlink "$d1/upper/etc/evil")" "$T/hostsecret"
check "the copy's link to a host dir is a link on the host" test -L "$d1/upper/etc/evildir"
is "nothing of the host dir was copied in" "$(find "$d1" -name 'hostonly*' 2>/dev/null)" ""
check "the FIFO is a FIFO in the copy" test -p "$d1/upper/etc/evilfifo"
is "the host file is untouched" "$(stat -c %Y:%s "$T/hostsecret")" "$before"
ds=$(reg "$src" backend_data.dir)
is "the copy's files belong to the same mapped ids as the source's" \
	"$(stat -c %u:%g "$d1/workspace/st")" "$(stat -c %u:%g "$ds/workspace/st")"
check "the sandbox user's files are not the host caller's" test "$(stat -c %u "$d1/workspace/st")" != "$(id -u)"

# --- each copy is its own --------------------------------------------------------
s0=$(reg "$src" agent_secret); s1=$(reg "$c1" agent_secret); s2=$(reg "$c2" agent_secret)
check "secrets differ (source, copy 1, copy 2)" test -n "$s1" -a "$s0" != "$s1" -a "$s1" != "$s2" -a "$s0" != "$s2"
check "deadlines are the copies' own" test "$(reg "$c1" expires_at)" -gt "$(reg "$src" expires_at)"
run "$c1" 'echo only-in-1 > /workspace/mine; echo changed > /workspace/st' > /dev/null
is "copy 2 does not see copy 1's writes" "$(run "$c2" 'cat /workspace/st; test -e /workspace/mine && echo LEAK')" "state-1"
is "the source does not see copy 1's writes" "$(run "$src" 'cat /workspace/st; test -e /workspace/mine && echo LEAK')" "state-1"
is "the hostname is the copy's" "$(run "$c1" hostname)" "$(reg "$c1" name)"

# --- the source goes on as it was --------------------------------------------------
like "the source is running after the fork" "$(sbx status "$src")" 'state: +running'
is "the source answers" "$(run "$src" 'echo alive')" alive
sbx suspend "$src"
out=$(timeout 60 "$SBXTOP" fork "$src" < /dev/null 2> "$T/err"); rc=$?
at_exit "$SBXTOP destroy $out"
is "a suspended source forks" "$rc" 0
like "and stays suspended" "$(sbx status "$src")" 'state: +suspended'
is "its copy runs" "$(run "$out" 'cat /workspace/st')" "state-1"
sbx resume "$src"

# --- bad input ---------------------------------------------------------------------
sbx fork "$src" -n 0 > /dev/null 2> "$T/err"; rc=$?
is "-n 0 is a usage error" "$rc" 2
like "saying the range" "$(cat "$T/err")" '1 to 64'
sbx fork sbx-nosuch > /dev/null 2> "$T/err"; rc=$?
check "an unknown sandbox fails" test "$rc" -ne 0
like "naming it" "$(cat "$T/err")" "unknown sandbox 'sbx-nosuch'"

# --- MCP: sandbox_fork through the official SDK ---------------------------------
if [ -d "$TOP/tests/mcp/node_modules/@modelcontextprotocol/sdk" ]; then
	out=$(cd "$TOP/tests/mcp" && timeout 120 node fork-tool.mjs "$SBXTOP" "$src" 2 2>&1)
	ids=$(printf '%s' "$out" | python3 -c 'import json,sys; print(" ".join(s["sandbox_id"] for s in json.load(sys.stdin)["sandboxes"]))' 2>/dev/null)
	for i in $ids; do at_exit "$SBXTOP destroy $i"; done
	is "sandbox_fork makes count copies, valid against its outputSchema" "$(echo $ids | wc -w)" 2
	[ -n "$ids" ] || diag "$out"
	for i in $ids; do
		is "MCP copy $i has the source's workspace" "$(run "$i" 'cat /workspace/st')" "state-1"
	done
	out=$(cd "$TOP/tests/mcp" && timeout 60 node fork-tool.mjs "$SBXTOP" sbx-nosuch 2>&1)
	like "sandbox_fork of an unknown sandbox is a tool error with what to do" "$out" '^error .*unknown sandbox.*sandbox_list'
else
	ok "# SKIP the MCP SDK is not installed in tests/mcp"
fi

# --- as an ordinary user with a subordinate range: files of the sandbox's own
# user (a subordinate uid on the host, unreadable to the caller) are copied from
# a user namespace mapped as the sandbox's ---------------------------------------
if [ "$(id -u)" -eq 0 ] && command -v useradd > /dev/null && command -v runuser > /dev/null &&
    command -v newuidmap > /dev/null; then
	u=sbxf-$$
	users_init
	user_make "$u" yes SBXTOP_STANDALONE=1
	h="$U/$u"
	R() { "$U/run-$u" "$@" < /dev/null; }
	us=$(R "$S" create --max-duration 300 2> "$T/err"); rc=$?
	at_exit "R $S destroy $us"
	is "user: create" "$rc" 0
	[ "$rc" -eq 0 ] || diag "$(cat "$T/err")"
	R "$S" exec -n "$us" -- sh -c 'mkdir -m 700 /workspace/p && echo private > /workspace/p/f && chmod 600 /workspace/p/f' > /dev/null 2>&1
	owner=$(stat -c %u "$h/state/sbxtop/sandboxes/$us/workspace/p/f" 2>/dev/null)
	check "user: the sandbox user's file belongs to a subordinate uid" test -n "$owner" -a "$owner" != "$(id -u "$u")"
	uc=$(R "$S" fork "$us" 2> "$T/err"); rc=$?
	at_exit "R $S destroy $uc"
	is "user: fork" "$rc" 0
	[ "$rc" -eq 0 ] || diag "$(cat "$T/err")"
	is "user: the copy has the private file, as the sandbox user" \
		"$(R "$S" exec -n "$uc" -- sh -c 'cat /workspace/p/f; stat -c "%U %a" /workspace/p/f /workspace/p' 2>&1)" "private
sandbox 600
sandbox 700"
	is "user: on the host it belongs to the same subordinate uid" \
		"$(stat -c %u "$h/state/sbxtop/sandboxes/$uc/workspace/p/f" 2>/dev/null)" "$owner"
else
	ok "# SKIP needs root, useradd, runuser and newuidmap for the ordinary-user fork"
fi

# --- qemu: a snapshot and N restores (memory and disk: processes carry over) ------
if command -v qemu-system-x86_64 > /dev/null 2>&1; then
	export SBXTOP_QEMU_BOOT_TIMEOUT=150
	if sbx image build > /dev/null 2> "$T/err"; then
		q=$(sbx create --backend qemu --max-duration 900 2> "$T/err"); rc=$?
		at_exit "$SBXTOP destroy $q"
		is "qemu: create" "$rc" 0
		"$SBXTOP" exec -n "$q" -- sh -c 'echo qstate > /tmp/q; (sleep 1000 > /dev/null 2>&1 &)' < /dev/null
		out=$(timeout 300 "$SBXTOP" fork "$q" -n 2 < /dev/null 2> "$T/err"); rc=$?
		for i in $out; do at_exit "$SBXTOP destroy $i"; done
		is "qemu: fork -n 2" "$rc" 0
		is "qemu: two copies" "$(echo $out | wc -w)" 2
		for i in $out; do
			like "qemu: copy $i has the source's memory: its file in /tmp and its process" \
				"$("$SBXTOP" exec -n "$i" -- sh -c 'cat /tmp/q; ps | grep -c "[s]leep 1000"; hostname' < /dev/null 2>&1)" "^qstate
[1-9][0-9]*
$i\$"
		done
		set -- $out
		"$SBXTOP" exec -n "$1" -- sh -c 'echo mine > /tmp/q' < /dev/null
		is "qemu: the source does not see a copy's write" "$("$SBXTOP" exec -n "$q" -- cat /tmp/q < /dev/null)" qstate
		s0=$(reg "$q" agent_secret); s1=$(reg "$1" agent_secret); s2=$(reg "$2" agent_secret)
		check "qemu: secrets differ" test -n "$s1" -a "$s0" != "$s1" -a "$s1" != "$s2"
		is "qemu: the scratch snapshot is removed" "$(sbx snapshot ls --json)" "[]"
	else
		ok "# SKIP qemu: no image could be built ($(head -c 200 "$T/err"))"
	fi
else
	ok "# SKIP qemu-system-x86_64 is not installed"
fi

done_testing
