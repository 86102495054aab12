# The ns backend's disk limit, against the attack it is for: a sandbox that
# writes until the disk is full.  As root, --disk 64 gives a sandbox a
# filesystem of its own: 100 MiB written to /workspace, to its root's upper
# layer (/var, /home/sandbox) stop at ENOSPC inside, the filesystem that holds
# the state directory loses at most the limit, another sandbox writes on, and
# destroy, gc and a create that died half-way leave no loop device, mount or
# file; a fork of a limited sandbox has its files and its own limit.  The
# core server keeps the next create's filesystem ready (a spare, whose file
# has no name), which the create takes, limited all the same, and which the
# server's end takes along.  As
# ordinary users (with and without a subordinate range) no filesystem can be
# mounted: no file grows past the limit, and the core server suspends a
# sandbox whose files hold more, with the reason "disk".
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" -ne 0 ]; then echo "ok 1 # SKIP needs root (loop devices, test users)"; exit 0; fi
for t in losetup findmnt mke2fs useradd userdel runuser newuidmap; do
	command -v "$t" > /dev/null || { echo "ok 1 # SKIP $t is not installed"; exit 0; }
done
[ -e /dev/loop-control ] || { echo "ok 1 # SKIP no /dev/loop-control"; exit 0; }

J() { json_get "$1" "$2"; }
SD="$XDG_STATE_HOME/sbxtop/sandboxes"
# Whatever this test's sandboxes still have: mounts and loop devices under $T.
mounts() { findmnt -rn -o TARGET | grep -c "^$T/" ; }
loops() { losetup -l -n -O BACK-FILE | grep -c "^$T/"; }
# The server's spares: loop devices on unnamed files of the sandboxes' directory
# that no mount shows (a sandbox that took one has it mounted; it keeps two ready).
spare() { losetup -l -n -O NAME,BACK-FILE | awk -v d="$SD/#" 'index($2, d) == 1 { print $1 }' |
	while read -r dev; do findmnt -rn -S "$dev" > /dev/null || echo "$dev"; done; }
spare_wait() { for _i in $(seq 50); do [ "$(spare | wc -l)" -eq 2 ] && return 0; sleep 0.1; done; return 1; }
# Owner, group and mode of the directories a sandbox's directory starts with.
layout() { (cd "$SD/$1" && stat -c '%n %u %g %a' . upper work workspace run root ovl ovl/*); }
at_exit "for m in \$(findmnt -rn -o TARGET | grep '^$T/'); do umount -l \"\$m\"; done"
at_exit "for id in \$('$SBXTOP' ls --json 2>/dev/null | python3 -c 'import json,sys; [print(s[\"sandbox_id\"]) for s in json.load(sys.stdin)]'); do '$SBXTOP' destroy \"\$id\"; done"

# --- root ------------------------------------------------------------------
a=$("$SBXTOP" create --name disk-a --disk 64 2> "$T/err") || { not_ok "create --disk 64"; diag "$(cat "$T/err")"; exit 1; }
check "then the core server has two spare filesystems ready" spare_wait
sp=$(spare)
b=$("$SBXTOP" create --name disk-b --disk 64 2> "$T/err") || { not_ok "create a second"; diag "$(cat "$T/err")"; exit 1; }
ok "create --disk 64, twice"
is "its directory is the mount point of an ext4 filesystem" \
	"$(findmnt -n -o FSTYPE "$SD/$a")" ext4
like "the second create took a spare" "$sp" "^$(findmnt -n -o SOURCE "$SD/$b")\$"
is "  its directories came with it, made and owned as a create makes them" "$(layout "$b")" \
	"$(layout "$a")"
is "mounted as the first (nosuid, nodev, noatime)" \
	"$(findmnt -n -o OPTIONS "$SD/$b" | tr , '\n' | grep -cx 'nosuid\|nodev\|noatime')" 3
check "and a new spare is made for the next" spare_wait
check "each on a loop device whose file is gone by name" test "$(for id in "$a" "$b"; do
	losetup -n -O BACK-FILE "$(findmnt -n -o SOURCE "$SD/$id")"; done | grep -c '(deleted)$')" = 2
size=$("$SBXTOP" exec "$a" -- df -k --output=size /workspace | tail -1 | tr -d ' ')
check "inside, /workspace is at most 64 MiB ($size KiB)" test "$size" -le 65536 -a "$size" -gt 50000
like "ls shows the limit in LIMITS" "$("$SBXTOP" ls)" "$a .* disk=64M"
like "status shows the limit" "$("$SBXTOP" status "$a")" "limits: .*disk 64 MiB"

host_before=$(df -k --output=used "$XDG_STATE_HOME" | tail -1)
out=$("$SBXTOP" exec "$a" -- 'dd if=/dev/zero of=/workspace/fill bs=1M count=100 2>&1; echo rc=$?' | tr '\n' ' ')
like "100 MiB into /workspace: ENOSPC inside" "$out" "No space left on device.*rc=1"
"$SBXTOP" exec "$a" -- rm -f /workspace/fill
out=$("$SBXTOP" exec --root "$a" -- 'dd if=/dev/zero of=/var/fill bs=1M count=100 2>&1; echo rc=$?' | tr '\n' ' ')
like "100 MiB into /var (the root's upper layer): ENOSPC" "$out" "No space left on device.*rc=1"
"$SBXTOP" exec --root "$a" -- rm -f /var/fill
out=$("$SBXTOP" exec "$a" -- 'dd if=/dev/zero of=$HOME/fill bs=1M count=100 2>&1; echo rc=$?' | tr '\n' ' ')
like "100 MiB into /home/sandbox: ENOSPC" "$out" "No space left on device.*rc=1"
"$SBXTOP" exec "$a" -- 'rm -f $HOME/fill' 
out=$("$SBXTOP" exec "$a" -- 'for i in $(seq 50); do head -c 4M /dev/zero > /workspace/f$i || { echo stopped at $i; break; }; done 2>&1')
like "many files: ENOSPC too" "$out" "No space left on device"
host_after=$(df -k --output=used "$XDG_STATE_HOME" | tail -1)
grew=$(( (host_after - host_before) / 1024 ))
check "the host's filesystem gave it at most the limit (+${grew} MiB, others write too)" \
	test "$grew" -le 72
js=$("$SBXTOP" status --json "$a")
used=$(J "$js" 'd["usage"]["disk_bytes"]')
check "status --json: disk_bytes near the limit ($used), limits.disk_mib 64" \
	test "$used" -gt $((50 << 20)) -a "$used" -le $((64 << 20)) -a "$(J "$js" 'd["limits"]["disk_mib"]')" = 64
like "status shows the use against the limit" "$("$SBXTOP" status "$a")" "use: .*disk [0-9.]+ of 64 MiB"
is "the other sandbox still writes" \
	"$("$SBXTOP" exec "$b" -- 'head -c 8M /dev/zero > /workspace/x && wc -c < /workspace/x')" 8388608
out=$("$SBXTOP" exec "$b" -- 'dd if=/dev/zero of=/workspace/fill bs=1M count=100 2>&1; echo rc=$?; rm -f /workspace/fill' | tr '\n' ' ')
like "and stops at ENOSPC in the spare it took" "$out" "No space left on device.*rc=1"
is "and the full one still runs commands" "$("$SBXTOP" exec "$a" -- echo alive)" alive

# Fork a limited sandbox: its files come along, into a limit of its own.
"$SBXTOP" exec "$b" -- 'echo from-b > /workspace/mark'
f=$("$SBXTOP" fork "$b" 2> "$T/err") || { not_ok "fork"; diag "$(cat "$T/err")"; }
is "fork of a limited sandbox: its files came" "$("$SBXTOP" exec "$f" -- cat /workspace/mark)" from-b
is "in a filesystem of its own" "$(findmnt -n -o FSTYPE "$SD/$f")" ext4
out=$("$SBXTOP" exec "$f" -- 'dd if=/dev/zero of=/workspace/fill bs=1M count=100 2>&1; echo rc=$?' | tr '\n' ' ')
like "the fork is limited too" "$out" "No space left on device.*rc=1"
is "what the fork wrote is not in its source" "$("$SBXTOP" exec "$b" -- ls /workspace)" "mark
x"

for id in "$a" "$b" "$f"; do "$SBXTOP" destroy "$id" > /dev/null; done
sleep 0.3
is "destroy: no mount left" "$(mounts)" 0
is "destroy: no loop device left but the spares" "$(loops)" 2
is "destroy: no sandbox directory left" "$(ls "$SD")" ""

# A create that died half-way: one after its mount, one before.  No core
# server runs meanwhile: one that started less than 30 s ago sweeps what no
# record names once a second, and would take them before gc (crash.sh checks
# that sweep); gc runs without one, so no spares either.
tpl=$(ls "$XDG_DATA_HOME"/sbxtop/images/disks/*.ext4 | head -1)
"$SBXTOP" serve --stop > /dev/null 2>&1
for id in sbx-dead01 sbx-dead02; do mkdir -m 0700 "$SD/$id"; done
cp --sparse=always "$tpl" "$SD/sbx-dead01/.disk"
# (a device found free may be taken by another process before it is set up:
# try again, as creates do)
mount_dead() {
	dev=$(losetup -f --show "$SD/sbx-dead01/.disk" 2> "$T/err") || return 1
	mount -t ext4 "$dev" "$SD/sbx-dead01" 2>> "$T/err" && return 0
	losetup -d "$dev" 2> /dev/null
	dev=""
	return 1
}
dev=""
until_ok 1 mount_dead || diag "cannot mount the dead create's disk: $(cat "$T/err")"
[ -z "$dev" ] || losetup -d "$dev"
rm -f "$SD/sbx-dead01/.disk"
mkdir "$SD/sbx-dead01/upper"
cp --sparse=always "$tpl" "$SD/sbx-dead02/.disk"
is "a create that died after its mount left one" "$(mounts)" 1
"$SBXTOP" --standalone gc > /dev/null
sleep 0.3
is "gc: no mount left" "$(mounts)" 0
is "gc: no loop device left" "$(loops)" 0
is "gc: no directory, no file left" "$(ls -A "$SD")" ""
is "gc: no template left" "$(ls -A "$XDG_DATA_HOME/sbxtop/images/disks" 2>&1 | grep -c ext4)" 0

"$SBXTOP" destroy "$("$SBXTOP" create --disk 64)" > /dev/null
check "a new core server has its spares ready again" spare_wait
c=$("$SBXTOP" create --disk 0)
is "--disk 0: no filesystem of its own" "$(findmnt -n -o FSTYPE "$SD/$c")" ""
"$SBXTOP" destroy "$c" > /dev/null
out=$("$SBXTOP" create --disk 4 2>&1)
like "--disk 4: too small, said so" "$out" "too small"
"$SBXTOP" serve --stop > /dev/null 2>&1
sleep 0.3
is "the core server's end took its spares along" "$(loops)" 0
"$SBXTOP" destroy "$("$SBXTOP" create --disk 64)" > /dev/null
spare_wait
kill -9 "$(cat "$XDG_RUNTIME_DIR/sbxtop/server.lock")"
sleep 0.5
is "and so does a core server killed" "$(loops)" 0

# --- the state directory on another filesystem than the data directory ----
# A tmpfs state directory (or a separate /home): the template cannot be copied
# into it with copy_file_range (EXDEV), so the copy is made by hand.
TS="$T/tmpfs-state"
mkdir -p "$TS" "$T/run-tmpfs" && chmod 0700 "$T/run-tmpfs"
if mount -t tmpfs -o size=256m tmpfs "$TS"; then
	at_exit "umount -l $TS"
	ts() { XDG_STATE_HOME=$TS XDG_RUNTIME_DIR=$T/run-tmpfs "$SBXTOP" --standalone "$@"; }
	tid=$(ts create --disk 64 2> "$T/err"); rc=$?
	[ -n "$tid" ] && at_exit "XDG_STATE_HOME=$TS XDG_RUNTIME_DIR=$T/run-tmpfs $SBXTOP --standalone destroy $tid"
	is "create with a tmpfs state directory and the data elsewhere" "$rc" 0
	[ "$rc" -eq 0 ] || diag "$(cat "$T/err")"
	is "  its directory is an ext4 of its own, on the tmpfs" \
		"$(findmnt -n -o FSTYPE "$TS/sbxtop/sandboxes/$tid")" ext4
	out=$(ts exec "$tid" -- 'echo x > /workspace/y && cat /workspace/y && dd if=/dev/zero of=/workspace/fill bs=1M count=100 2>&1; echo rc=$?' | tr '\n' ' ')
	like "  and it works, and its limit holds" "$out" "^x .*No space left on device.*rc=1"
	ts destroy "$tid" > /dev/null
	is "  destroy leaves nothing on the tmpfs" "$(ls -A "$TS/sbxtop/sandboxes")" ""
else
	not_ok "mount a tmpfs for the state directory"
fi

# --- ordinary users ---------------------------------------------------------
users_init

wait_disk_suspended() {	# wait_disk_suspended ID: until its state says so (10 s)
	for _ in $(seq 40); do
		# The freezer's state shows a moment before the reason is recorded.
		case "$(R "$S" status "$1" | grep '^state:')" in *"suspended: disk"*) return 0 ;; esac
		sleep 0.25
	done
	return 1
}

user_checks() {	# user_checks NAME
	u=$1
	R() { "$U/run-$u" "$@"; }
	id=$(R "$S" create --disk 32 2> "$T/err") || { not_ok "$u: create --disk 32"; diag "$(cat "$T/err")"; return; }
	js=$(R "$S" status --json "$id")
	like "$u: limits_note says there is no ENOSPC, and what holds instead" \
		"$(J "$js" 'd.get("limits_note","")')" "disk: no ENOSPC at the limit.*no file may grow past 32 MiB.*suspends"
	is "$u: no mount for it" "$(findmnt -rn -o TARGET | grep -c "^$U/$u/")" 0
	# The writes run in the background: the watcher may freeze the sandbox
	# (the agent with it) before a command in the foreground has answered.
	R "$S" exec --background "$id" -- 'dd if=/dev/zero of=/workspace/one bs=1M count=40 \
		> /workspace/dd.out 2>&1; echo rc=$? >> /workspace/dd.out;
		head -c 1M /dev/zero > /workspace/two' > /dev/null
	# With one more MiB beside the file at the cap, the sandbox holds more than
	# its limit: the watcher suspends it; after a resume only more growth would
	# suspend it again.
	wait_disk_suspended "$id" && st=ok || st=$(R "$S" status "$id" | grep '^state:')
	is "$u: 33 MiB in two files: suspended, reason disk" "$st" ok
	R "$S" resume "$id" > /dev/null
	like "$u: one file past the limit: stopped at it (EFBIG or SIGXFSZ)" \
		"$(R "$S" exec "$id" -- cat /workspace/dd.out | tr '\n' ' ')" "File too large|rc=153"
	sz=$(R "$S" exec "$id" -- 'wc -c < /workspace/one')
	is "$u: that file holds the limit, no more" "$sz" $((32 << 20))
	# In a 0700 directory of the sandbox's user: with a range, the host user
	# may not enter it, and the watcher must count it all the same.
	R "$S" exec "$id" -- 'rm -f /workspace/one /workspace/two /workspace/dd.out;
		mkdir -m 0700 /workspace/hide'
	R "$S" exec --background "$id" -- 'for i in 1 2 3; do head -c 15M /dev/zero > /workspace/hide/f$i; done' \
		> /dev/null
	st=""
	for _ in $(seq 40); do
		st=$(R "$S" status "$id" | grep '^state:')
		# The freezer's state shows a moment before the reason is recorded.
		case "$st" in *"suspended: disk"*) break ;; esac
		sleep 0.25
	done
	like "$u: 45 MiB in three files in a 0700 directory: the core server suspended it, reason disk" "$st" \
		"suspended: disk: its files hold 4[0-9] MiB, over its limit of 32 MiB"
	R "$S" resume "$id" > /dev/null
	R "$S" exec "$id" -- 'rm -f /workspace/hide/f1 /workspace/hide/f2'
	sleep 3
	like "$u: resumed and cleaned up, it stays running" "$(R "$S" status "$id" | grep '^state:')" "running"
	R "$S" destroy "$id" > /dev/null
	is "$u: destroy leaves no sandbox directory" "$(ls "$U/$u/state/sbxtop/sandboxes" 2>/dev/null | grep -c sbx-)" 0
}

user_make sbxdisk1-$$ yes && user_checks sbxdisk1-$$
user_make sbxdisk2-$$ no && user_checks sbxdisk2-$$

done_testing
