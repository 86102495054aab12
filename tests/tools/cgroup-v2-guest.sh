#!/bin/sh
# The guest half of tests/integration/cgroup-v2.sh, run as root in a qemu
# guest whose only cgroup hierarchy is the unified one: the project's build
# (sbxtop-core, in-process core, the image's agent bundle) drives the ns
# backend as root, as an ordinary user under a delegated subtree laid out as
# systemd lays out user@UID.service with Delegate=yes, as an ordinary user in a
# session scope that is not delegated, and as root in a session scope it
# shares with other processes.  Prints TAP lines without numbers
# ("ok - what", "not ok - what", "# diag"); the host numbers them.
#   cgroup-v2-guest.sh OVERLAY_KO
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
CG=/sys/fs/cgroup
CTRLS="+memory +pids +cpu"
RESERVE=64	# pids above the limit kept for the agent (backends/ns/backend-ns.c)

ok()     { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; }
diag()   { printf '# %s\n' "$*"; }
check()  { _w=$1; shift; if "$@"; then ok "$_w"; else not_ok "$_w"; fi; }
is()     { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; diag "got:  $2"; diag "want: $3"; fi; }
like()   { if printf '%s' "$2" | grep -Eq -- "$3"; then ok "$1"; else not_ok "$1"; diag "got:  $2"; diag "want: /$3/"; fi; }
unlike() { if printf '%s' "$2" | grep -Eq -- "$3"; then not_ok "$1"; diag "got:  $2"; diag "not:  /$3/"; else ok "$1"; fi; }
field()  { sed -n "s/^$2 //p" "$1"; }	# field FILE KEY: "KEY VALUE" lines (cpu.stat, memory.events)

# --- the host: cgroup2 alone -----------------------------------------------------
insmod "$1" 2>/dev/null
grep -qw overlay /proc/filesystems || { not_ok "overlayfs loaded ($1)"; exit 1; }
mount -t cgroup2 cgroup2 "$CG" || { not_ok "mount cgroup2 on $CG"; exit 1; }
is "only the unified hierarchy is mounted" "$(awk '$3 ~ /^cgroup/ { print $3 }' /proc/mounts | sort -u)" cgroup2
like "its controllers" "$(cat "$CG/cgroup.controllers")" 'cpu.*memory.*pids'

# The wrapper every command goes through: sbxtop started in cgroup $1 ("-":
# where it already is), as `systemd-run --user --scope` starts a command.
mkdir -p /run/v2
cat > /run/v2/sbx <<'EOF'
#!/bin/sh
cg=$1; shift
if [ "$cg" != - ]; then
	mkdir -p "$cg" && echo $$ > "$cg/cgroup.procs" || { echo "sbx: cannot enter $cg" >&2; exit 125; }
fi
HOME=$(awk -F: -v u="$(id -u)" '$3 == u { print $6 }' /etc/passwd)
export HOME SBXTOP_AGENT_BUNDLE=/opt/sbxtop XDG_RUNTIME_DIR=/tmp/run-$(id -u)
mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
exec /opt/v2/sbxtop-core --standalone "$@"
EOF
chmod 755 /run/v2/sbx

# /run/v2/as USER SESSION PROG ARGS...: PROG as USER, started in cgroup
# SESSION (root puts the process there, as logind does at login).
cat > /run/v2/as <<'EOF'
#!/bin/sh
u=$1 s=$2; shift 2
echo $$ > "$s/cgroup.procs" || { echo "as: cannot enter $s" >&2; exit 125; }
[ "$u" = root ] && exec "$@"
exec su -s /bin/sh "$u" -c 'exec "$0" "$@"' -- "$@"
EOF
chmod 755 /run/v2/as
as() { /run/v2/as "$@"; }

# sbx ARGS...: sbxtop as $U; under delegation each command gets a scope of its
# own under app.slice (what systemd-run --user --scope -p Delegate=yes does;
# the count is in a file: sbx runs in command substitutions too).
echo 0 > /run/v2/scopes
sbx() {
	if [ -n "$APP" ]; then
		_n=$(($(cat /run/v2/scopes) + 1))
		echo "$_n" > /run/v2/scopes
		as "$U" "$SESSION" /run/v2/sbx "$APP/run-$_n.scope" "$@"
	else
		as "$U" "$SESSION" /run/v2/sbx - "$@"
	fi
}

# busy ID SECONDS: CPU time (usec) the sandbox's cgroup used while a busy loop
# ran SECONDS in it.
busy() {
	_u0=$(field "$D/cpu.stat" usage_usec)
	sbx exec --timeout 60 "$1" -- "timeout $2 sh -c 'while :; do :; done'" > /tmp/busy 2>&1
	echo $(( $(field "$D/cpu.stat" usage_usec) - _u0 ))
}

# --- the checks, for one user ------------------------------------------------------
# limits MODE: a sandbox with memory, pids and CPU limits, bombs, the freezer,
# OOM and destroy; D is its cgroup.
limits() {
	m=$1
	t0=$(cut -d' ' -f1 /proc/uptime)
	id=$(sbx create --backend ns --memory 64 --pids 64 --cpus 0.9 2> /tmp/err); rc=$?
	is "$m: create with memory, pids and cpu limits: exit 0" "$rc" 0
	[ "$rc" -eq 0 ] || { diag "$(cat /tmp/err)"; return 1; }
	diag "$m: create took $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { print b - a }') s (guest clock): $(cat /tmp/err)"
	unlike "$m: create says nothing is left unenforced" "$(cat /tmp/err)" 'not enforced|no freezer'
	D=$(find "$CG" -type d -name "sbxtop-$id")
	check "$m: the sandbox has a cgroup (${D:-none})" test -n "$D" -a -d "$D"
	[ -n "$D" ] || return 1
	[ -n "$BASE" ] && like "$m: it is under the delegated subtree" "$D" "^$BASE/"
	is "$m: memory.max is 64 MiB" "$(cat "$D/memory.max")" 67108864
	is "$m: memory.swap.max is 0" "$(cat "$D/memory.swap.max")" 0
	is "$m: pids.max is the limit plus the agent's reserve" "$(cat "$D/pids.max")" $((64 + RESERVE))
	is "$m: cpu.max is 0.9 of a CPU" "$(cat "$D/cpu.max")" "90000 100000"
	check "$m: the sandbox's init is in it" test -n "$(cat "$D/cgroup.procs")"

	# A memory bomb (one 128 MiB buffer, filled in the kernel: no pages of its
	# own to reclaim and fault in again, so the OOM killer comes at once rather
	# than after a long thrash): killed inside its cgroup, the agent alive.
	sbx exec --timeout 120 "$id" -- 'dd if=/dev/zero of=/dev/null bs=128M count=1' > /dev/null 2>&1; rc=$?
	is "$m: a memory bomb is killed (SIGKILL: exit 137)" "$rc" 137
	like "$m: by the OOM killer of its cgroup (memory.events)" "$(field "$D/memory.events" oom_kill)" '^[1-9]'
	is "$m: the agent is alive after it" "$(sbx exec "$id" -- echo alive 2>&1)" alive
	like "$m: status reports the OOM kill as such" "$(sbx status "$id" 2>&1 | grep '^state:')" \
		'^state: +running: out of memory: the kernel.s OOM killer ended [0-9]+ process(es)? at the memory limit of 64 MiB'

	# A fork bomb: held, the agent alive.  busybox sh gives up at the first
	# fork that fails; what it started lives on for its 10 s.
	ev0=$(field "$D/pids.events" max)
	agent=$(head -n 1 "$D/cgroup.procs")	# the sandbox's init, alone in it now
	sbx exec --timeout 60 "$id" -- 'while :; do sleep 10 & done' > /tmp/bomb 2>&1 &
	bomb=$!
	peak=0
	for _i in $(seq 32); do
		n=$(cat "$D/pids.current"); [ "$n" -gt "$peak" ] && peak=$n
		sleep 0.25
	done
	wait "$bomb"
	diag "$m: fork bomb: $peak tasks at most in the cgroup (pids.max $(cat "$D/pids.max")), pids.events max $(field "$D/pids.events" max): $(tail -n 1 /tmp/bomb)"
	check "$m: the fork bomb is held: at most pids.max tasks ($peak)" test "$peak" -le $((64 + RESERVE))
	like "$m: its forks failed" "$(cat /tmp/bomb)" "can't fork|Resource temporarily unavailable"
	if [ "$m" = delegated ]; then
		# One uid for the whole sandbox: the cgroup alone holds it.
		check "$m: the cgroup's pids.max held it (pids.events max went up)" test "$(field "$D/pids.events" max)" -gt "$ev0"
	else
		# Uids of its own: RLIMIT_NPROC held the user at the limit, below
		# pids.max, so the agent kept its reserve.
		check "$m: RLIMIT_NPROC held it below pids.max ($peak tasks)" test "$peak" -lt $((64 + RESERVE))
	fi
	check "$m: the agent (pid $agent) lived through it" test -d "/proc/$agent"
	is "$m: the sandbox is still running" "$(sbx status "$id" 2>&1 | sed -n 's/^state: *\([a-z]*\).*/\1/p')" running
	for _i in $(seq 60); do [ "$(cat "$D/pids.current")" -le 8 ] && break; sleep 0.5; done
	is "$m: the agent serves again once the bomb's processes are gone" "$(sbx exec "$id" -- echo alive 2>&1)" alive

	# CPU: a busy loop is throttled to 0.9 of a CPU (lower limits slow the
	# agent's start under TCG a great deal).
	th0=$(field "$D/cpu.stat" nr_throttled)
	w0=$(cut -d' ' -f1 /proc/uptime)
	used=$(busy "$id" 4)
	w1=$(cut -d' ' -f1 /proc/uptime)
	diag "$m: busy loop: $(cat /tmp/busy)"
	diag "$m: busy loop: $used us of CPU in $(awk -v a="$w0" -v b="$w1" 'BEGIN { print b - a }') s, throttled $(( $(field "$D/cpu.stat" nr_throttled) - th0 )) periods"
	check "$m: the CPU limit throttles a busy loop (cpu.stat nr_throttled)" test "$(field "$D/cpu.stat" nr_throttled)" -gt "$th0"
	check "$m: it ran (cpu.stat usage_usec went up)" test "$used" -gt 0

	# Suspend and resume by the v2 freezer.
	sbx exec --background "$id" -- 'while :; do :; done' > /dev/null 2>&1
	sleep 1
	sbx suspend "$id" > /dev/null 2> /tmp/err; rc=$?
	is "$m: suspend: exit 0" "$rc" 0
	is "$m: by the v2 freezer (cgroup.freeze)" "$(cat "$D/cgroup.freeze")" 1
	is "$m: the cgroup is frozen (cgroup.events)" "$(field "$D/cgroup.events" frozen)" 1
	like "$m: status says suspended" "$(sbx status "$id" 2>&1 | grep '^state:')" '^state: +suspended'
	u0=$(field "$D/cpu.stat" usage_usec); sleep 2; u1=$(field "$D/cpu.stat" usage_usec)
	is "$m: a busy loop in it gets no CPU while frozen" "$((u1 - u0))" 0
	sbx resume "$id" > /dev/null 2> /tmp/err; rc=$?
	is "$m: resume: exit 0" "$rc" 0
	is "$m: thawed (cgroup.events)" "$(field "$D/cgroup.events" frozen)" 0
	u0=$(field "$D/cpu.stat" usage_usec); sleep 2; u1=$(field "$D/cpu.stat" usage_usec)
	check "$m: the busy loop runs again ($((u1 - u0)) us in 2 s)" test "$((u1 - u0))" -gt 0
	is "$m: the agent answers after resume" "$(sbx exec "$id" -- echo alive 2>&1)" alive

	sbx destroy "$id" > /dev/null 2> /tmp/err; rc=$?
	is "$m: destroy: exit 0" "$rc" 0
	[ "$rc" -eq 0 ] || diag "$(cat /tmp/err)"
	is "$m: destroy leaves no cgroup of sbxtop behind" "$(find "$CG" -name 'sbxtop-*')" ""
	is "$m: ls is empty" "$(sbx ls --json 2>&1)" "[]"
}

# doctor MODE WANT: doctor's cgroup lines say WANT (ok or warn) for each.
doctor() {
	sbx doctor --backend ns > /tmp/doctor 2>&1
	grep cgroup /tmp/doctor | while read -r l; do diag "$1: doctor: $l"; done
	for w in "memory limit" "pids limit" "cpu limit" "freezer (suspend)"; do
		like "$1: doctor: cgroup $w is $2" "$(grep "cgroup $w" /tmp/doctor)" "^$2 "
	done
}

# --- root, in the root cgroup ---------------------------------------------------------
U=root SESSION=$CG APP="" BASE=""
limits root
doctor root ok
like "root: doctor says where the sandboxes' cgroups go" "$(grep '^ok   cgroups:' /tmp/doctor)" "cgroup v2: sandboxes' cgroups go in $CG\$"

# --- an ordinary user under a delegated subtree ----------------------------------------
# As systemd gives user@1002.service with Delegate=yes: the controllers are
# enabled down to it, it and its cgroup.procs, cgroup.subtree_control and
# cgroup.threads belong to the user, who makes the rest (init.scope,
# app.slice, a scope per command) and enables the controllers below.
echo "$CTRLS" > "$CG/cgroup.subtree_control"
mkdir -p "$CG/user.slice/user-1002.slice/user@1002.service"
echo "$CTRLS" > "$CG/user.slice/cgroup.subtree_control"
echo "$CTRLS" > "$CG/user.slice/user-1002.slice/cgroup.subtree_control"
BASE=$CG/user.slice/user-1002.slice/user@1002.service
chown bob:bob "$BASE" "$BASE/cgroup.procs" "$BASE/cgroup.subtree_control" "$BASE/cgroup.threads"
su -s /bin/sh bob -c "mkdir $BASE/init.scope $BASE/app.slice && echo '$CTRLS' > $BASE/cgroup.subtree_control &&
	echo '$CTRLS' > $BASE/app.slice/cgroup.subtree_control"; rc=$?
is "delegated: the user enables the controllers in the subtree" "$rc" 0
U=bob SESSION=$BASE/init.scope APP=$BASE/app.slice
limits delegated
doctor delegated ok
like "delegated: doctor says where" "$(grep '^ok   cgroups:' /tmp/doctor)" "cgroup v2: sandboxes' cgroups go in $APP/run-[0-9]+.scope\$"
# An orphan: its create killed once its agent ran (SBXTOP_FAULT), its cgroup
# in that command's scope; gc, from a scope of its own, finds the cgroup
# through the agent.
SBXTOP_FAULT=create.ns.ready:kill sbx create --backend ns > /dev/null 2>&1
orphan=$(find "$APP" -type d -name 'sbxtop-sbx-*' | head -n 1)
check "delegated: a killed create left its cgroup (${orphan:-none})" test -n "$orphan"
like "delegated: gc --dry-run finds it from another scope" "$(sbx gc --dry-run 2>&1)" \
	"cgroup +$orphan \\(no record\\)"
sbx gc > /dev/null 2>&1
check "delegated: gc removed the orphan's cgroup" test ! -e "$orphan"
# What systemd does once a scope's processes are gone.
for s in "$APP"/run-*.scope; do rmdir "$s"/* "$s" 2>/dev/null; done
is "delegated: nothing of sbxtop is left in the subtree" "$(find "$BASE" -name 'sbxtop-*')" ""

# --- an ordinary user without delegation -------------------------------------------------
# A login session scope (root's), as logind makes one without delegation.
mkdir -p "$CG/user.slice/user-1001.slice/session-1.scope"
U=alice SESSION=$CG/user.slice/user-1001.slice/session-1.scope APP="" BASE=""
id=$(sbx create --backend ns --memory 64 --pids 64 2> /tmp/err); rc=$?
is "undelegated: create still works: exit 0" "$rc" 0
like "undelegated: it says the limits are not enforced, why, and how to get them" "$(cat /tmp/err)" \
	"limits not enforced and no freezer: cannot create a cgroup in $SESSION \(cgroup v2 not delegated to uid 1001: Permission denied\): memory and cpu are not limited, pids only by RLIMIT_NPROC \(which counts every process of uid 1001\), and suspend stops the processes; to enforce them: run as root or use a cgroup v2 host with delegation \(systemd-run --user --scope -p Delegate=yes sbxtop"
is "undelegated: no cgroup was made" "$(find "$CG" -name 'sbxtop-*')" ""
is "undelegated: commands run" "$(sbx exec "$id" -- echo alive 2>&1)" alive
sbx suspend "$id" > /dev/null 2>&1; rc=$?
is "undelegated: suspend (stopping the processes): exit 0" "$rc" 0
like "undelegated: status says suspended" "$(sbx status "$id" 2>&1 | grep '^state:')" '^state: +suspended'
sbx resume "$id" > /dev/null 2>&1
is "undelegated: resumed, commands run" "$(sbx exec "$id" -- echo alive 2>&1)" alive
sbx destroy "$id" > /dev/null 2>&1; rc=$?
is "undelegated: destroy: exit 0" "$rc" 0
doctor undelegated warn
like "undelegated: doctor says why" "$(grep 'cgroup memory limit' /tmp/doctor)" \
	"not enforceable by uid 1001: .*cannot create a cgroup in $SESSION"

# --- root in a login session it shares with other processes ----------------------------
# (sudo from a terminal): the cgroup is writable, but v2 gives no controllers
# below a cgroup with processes in it.  The freezer needs none.
mkdir -p "$CG/user.slice/user-0.slice/session-2.scope"
echo "$CTRLS" > "$CG/user.slice/user-0.slice/cgroup.subtree_control"
SESSION=$CG/user.slice/user-0.slice/session-2.scope
as root "$SESSION" sleep 600 &
shell=$!
U=root APP="" BASE=""
id=$(sbx create --backend ns --memory 64 --cpus 0.9 2> /tmp/err); rc=$?
is "shared session: create works: exit 0" "$rc" 0
like "shared session: it says why the limits are not enforced and what to do" "$(cat /tmp/err)" \
	"memory limit not enforced: the memory controller cannot be enabled below $SESSION: other processes share that cgroup.*to enforce them: run sbxtop in a cgroup of its own \(systemd-run --scope -p Delegate=yes sbxtop"
D=$(find "$CG" -type d -name "sbxtop-$id")
like "shared session: the sandbox's cgroup is in the session" "$D" "^$SESSION/sbxtop-$id\$"
sbx suspend "$id" > /dev/null 2>&1; rc=$?
is "shared session: suspend: exit 0" "$rc" 0
is "shared session: by the v2 freezer all the same" "$(field "$D/cgroup.events" frozen)" 1
sbx resume "$id" > /dev/null 2>&1
is "shared session: resumed, commands run" "$(sbx exec "$id" -- echo alive 2>&1)" alive
sbx destroy "$id" > /dev/null 2>&1; rc=$?
is "shared session: destroy: exit 0" "$rc" 0
sbx doctor --backend ns > /tmp/doctor 2>&1
grep cgroup /tmp/doctor | while read -r l; do diag "shared session: doctor: $l"; done
for w in "memory limit" "pids limit" "cpu limit"; do
	like "shared session: doctor: cgroup $w is warn, with the reason" "$(grep "cgroup $w" /tmp/doctor)" \
		"^warn .*cannot be enabled below $SESSION: other processes share that cgroup.*fix: run sbxtop in a cgroup of its own \(systemd-run --scope -p Delegate=yes"
done
like "shared session: doctor: the freezer is ok" "$(grep 'cgroup freezer' /tmp/doctor)" '^ok '
kill "$shell" 2>/dev/null; wait "$shell" 2>/dev/null
is "nothing of sbxtop is left in any cgroup" "$(find "$CG" -name 'sbxtop-*')" ""
