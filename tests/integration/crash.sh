# Crashes and full disks on the ns backend: a core killed (kill -9) while 20
# creates run leaves no sandbox that `ls` does not show, once the next core
# server has swept (as root and as an ordinary user, several times); an
# orphan is listed by `ls` and `gc --dry-run` and removed by gc, and so is a
# sandbox whose state directory was removed by hand; a full state directory
# fails a create, a suspend and a copy with a clear error and leaves nothing
# half-made; the agent killed in the middle of an exec or of a copy gives the
# client an error that says so, and no half-written file.
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "ok 1 # SKIP run as root (it makes users and mounts a tmpfs)"
	exit 0
fi
REG="$XDG_STATE_HOME/sbxtop/sandboxes.json"
SD="$XDG_STATE_HOME/sbxtop/sandboxes"
destroy_left_at_exit
at_exit 'SBXTOP_STANDALONE=1 "$SBXTOP" gc'
sbx() { "$SBXTOP" --standalone "$@" < /dev/null; }
# left STATE_HOME: what of that state directory no record names.
left() { python3 "$TOP/tests/tools/leftovers.py" "${1:-$XDG_STATE_HOME}" "$T/seen"; }
nothing_left() { [ -z "$(left "$@")" ]; }
init_of() { json_get "$(cat "$SD/$1/backend.json")" 'd["pid"]'; }
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }

# --- an orphan, shown and removed ----------------------------------------------
SBXTOP_FAULT=create.ns.ready:kill "$SBXTOP" --standalone create > /dev/null 2>&1 < /dev/null
orphan=$(left | awk '$1 == "agent" { print $2 }')
like "a create killed once its agent ran left an orphan agent" "$orphan" '^sbx-[0-9a-f]{6}$'
sbx ls > /dev/null 2> "$T/err"
like "ls says there is an orphan, and what to do" "$(cat "$T/err")" \
	'1 orphan: .*`sbxtop gc --dry-run` lists them, `sbxtop gc` removes them'
out=$(sbx gc --dry-run)
like "gc --dry-run lists its agent" "$out" "$orphan +agent +pid [0-9]+ \\(no record\\)"
like "gc --dry-run lists its cgroup" "$out" "$orphan +cgroup +/sys/fs/cgroup/.*$orphan \\(no record\\)"
like "gc --dry-run lists its mount (the disk limit's filesystem)" "$out" "$orphan +mount +$SD/$orphan \\(no record\\)"
like "gc --dry-run lists its directory" "$out" "$orphan +directory +$SD/$orphan \\(no record\\)"
like "gc --dry-run counts it" "$out" 'would remove the leftovers of 1 sandbox \(1 orphan'
check "gc --dry-run removed nothing" test -n "$(left)"
out=$(sbx gc); rc=$?
is "gc: exit 0" "$rc" 0
like "gc says what it removed" "$out" "$orphan +agent +pid [0-9]+ \\(no record\\)"
like "gc counts it" "$out" "removed [1-9][0-9]* leftover"
is "nothing of it is left: agent, cgroup, mount, loop device, directory" "$(left)" ""
sbx ls > /dev/null 2> "$T/err"
is "ls says nothing of orphans then" "$(cat "$T/err")" ""

# The state directory removed by hand under a running sandbox: found by its
# agent's command line and its cgroup.
id=$(sbx create --disk 0)
pid=$(init_of "$id")
rm -rf "$XDG_STATE_HOME/sbxtop"
out=$(sbx gc --dry-run)
like "state removed by hand: gc --dry-run finds the agent" "$out" "$id +agent +pid $pid"
like "state removed by hand: and its cgroup" "$out" "$id +cgroup "
sbx gc > /dev/null
check "state removed by hand: gc killed the agent" until_ok 5 gone "$pid"
is "state removed by hand: nothing is left" "$(left)" ""

# --- kill -9 of the core server during 20 creates ---------------------------------
# burst WHO RUN STATE RUNDIR ROUND DELAY: 20 creates through the server of RUN's
# user, the server killed DELAY s after they start; then `ls` (a new server,
# whose start sweeps) and, once the dead one's children are gone, nothing is
# left that ls does not show, and every id a create printed answers.
burst() {
	_who=$1 _run=$2 _state=$3 _rd=$4 _round=$5 _delay=$6
	$_run "$S" destroy "$($_run "$S" create < /dev/null)" > /dev/null 2>&1 # a server, the image
	_srv=$(cat "$_rd/sbxtop/server.lock")
	rm -rf "$T/b" && mkdir -p "$T/b"
	for _i in $(seq 20); do
		($_run "$S" create < /dev/null > "$T/b/$_i.out" 2> "$T/b/$_i.err"; echo $? > "$T/b/$_i.rc") &
	done
	sleep "$_delay"
	# What a kill between a registry write's swap and its unlink leaves
	# (which one of 20 creates may not hit), before the next server starts
	# (the creates start one as soon as theirs is gone): that one removes it.
	$_run sh -c "echo '{}' > '$_state/sbxtop/sandboxes.json.tmp-0'"
	kill -9 "$_srv"
	wait
	_printed=$(cat "$T/b"/*.out | grep -c '^sbx-')
	$_run "$S" ls > /dev/null 2> "$T/b/ls.err"
	check "$_who, round $_round: everything left is named by a record once the next server swept" \
		until_ok 40 nothing_left "$_state"
	_left=$(left "$_state"); [ -z "$_left" ] || diag "left: $_left"
	_ls=$($_run "$S" ls --json | python3 -c 'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)))')
	_miss=""
	for _id in $(cat "$T/b"/*.out | grep '^sbx-'); do
		case " $_ls " in *" $_id "*) ;; *) _miss="$_miss $_id" ;; esac
	done
	is "$_who, round $_round: every id a create printed ($_printed) is in ls" "$_miss" ""
	_bad=""
	for _id in $_ls; do
		[ "$($_run "$S" exec -n "$_id" -- echo up 2>&1)" = up ] || _bad="$_bad $_id"
	done
	is "$_who, round $_round: every sandbox ls shows ($(echo $_ls | wc -w)) answers" "$_bad" ""
	diag "$_who, round $_round (killed after $_delay s): $_printed ids printed, $(echo $_ls | wc -w) recorded; ls said: $(cat "$T/b/ls.err")"
	for _id in $_ls; do $_run "$S" destroy "$_id" > /dev/null 2>&1; done
	$_run "$S" serve --stop > /dev/null 2>&1
}
S="$SBXTOP"
round=0
for delay in 0.15 0.3 0.6; do
	round=$((round + 1))
	burst root "" "$XDG_STATE_HOME" "$XDG_RUNTIME_DIR" "$round" "$delay"
done

users_init
u=sbxcrash$$
if user_make "$u" yes; then
	h="$U/$u"
	round=0
	for delay in 0.3 0.6; do
		round=$((round + 1))
		burst "ordinary user" "$U/run-$u" "$h/state" "$h/run" "$round" "$delay"
	done
else
	not_ok "make the user $u"
fi
S="$SBXTOP"

# --- a full state directory -------------------------------------------------------
# A small tmpfs holds the registry and the sandboxes' directories.
FULL="$T/full"
mkdir -p "$FULL" && mount -t tmpfs -o size=48m tmpfs "$FULL" || not_ok "mount a tmpfs"
at_exit "umount -l '$FULL'"
fx() { XDG_STATE_HOME="$FULL/state" "$SBXTOP" --standalone "$@" < /dev/null; }
fid=$(fx create --disk 0); rc=$?
is "full disk: a sandbox on the small state directory" "$rc" 0
at_exit "XDG_STATE_HOME='$FULL/state' '$SBXTOP' --standalone destroy $fid"
fill() { dd if=/dev/zero of="$FULL/filler" bs=1M > /dev/null 2>&1; sync; }
fill
cp "$FULL/state/sbxtop/sandboxes.json" "$T/reg.before"
fx suspend "$fid" > /dev/null 2> "$T/err"; rc=$?
is "full disk: suspend fails (its record cannot be written)" "$rc" 1
like "full disk: and says why and what to do" "$(cat "$T/err")" "No space left on device.*free space"
is "full disk: the sandbox runs on, as its record says" "$(fx exec -n "$fid" -- echo up 2>&1)" up
cmp -s "$T/reg.before" "$FULL/state/sbxtop/sandboxes.json"
is "full disk: the registry is as it was" "$?" 0
fx create --disk 0 > /dev/null 2> "$T/err"; rc=$?
is "full disk: create fails" "$rc" 1
like "full disk: and says the disk is full" "$(cat "$T/err")" "No space left on device"
is "full disk: a failed create leaves nothing" "$(left "$FULL/state")" ""
rm -f "$FULL/filler"
head -c 20000000 /dev/urandom > "$T/20m"
fx cp "$T/20m" "$fid:/workspace/20m" > /dev/null 2>&1 || not_ok "copy 20 MB in"
# 20 MB out to what is left on the tmpfs (less), and 20 MB more in.
dd if=/dev/zero of="$FULL/filler" bs=1M count=20 > /dev/null 2>&1
mkdir -p "$FULL/out"
fx cp "$fid:/workspace/20m" "$FULL/out/20m" > /dev/null 2> "$T/err"; rc=$?
is "full disk: copy out fails" "$rc" 1
like "full disk: copy out says why, and that nothing was written" "$(cat "$T/err")" "No space left on device.*nothing was written"
is "full disk: no file, no staging left in the destination" "$(ls -A "$FULL/out")" ""
fx cp "$T/20m" "$fid:/workspace/again" > /dev/null 2> "$T/err"; rc=$?
is "full disk: copy in fails" "$rc" 1
like "full disk: copy in says why" "$(cat "$T/err")" "No space left on device|no space"
is "full disk: no half-written file in the sandbox" \
	"$(fx exec -n "$fid" -- 'ls -A /workspace' 2>&1)" 20m
rm -f "$FULL/filler"
is "full disk: with room again, the sandbox answers" "$(fx exec -n "$fid" -- echo up 2>&1)" up
fx destroy "$fid" > /dev/null
is "full disk: nothing left" "$(left "$FULL/state")" ""

# --- the agent killed in the middle ----------------------------------------------
id=$(sbx create --disk 0)
pid=$(init_of "$id")
( sbx exec -n "$id" -- 'echo started; sleep 30' > "$T/out" 2> "$T/err"; echo $? > "$T/rc" ) &
until_ok 10 grep -q started "$T/out"
kill -9 "$pid"
wait
is "agent killed mid-exec: the exec fails (125: sbxtop's own failure, as docker exec's)" "$(cat "$T/rc")" 125
like "agent killed mid-exec: and says the sandbox ended" "$(cat "$T/err")" "sandbox $id ended during the command"
sbx destroy "$id" > /dev/null

id=$(sbx create --disk 0)
pid=$(init_of "$id")
sbx exec -n "$id" -- 'head -c 300000000 /dev/urandom > /workspace/big' > /dev/null
mkdir -p "$T/dl"
( sbx cp "$id:/workspace/big" "$T/dl/" > /dev/null 2> "$T/err"; echo $? > "$T/rc" ) &
until_ok 20 sh -c "ls -A '$T/dl'/.big.sbxtop-* 2> /dev/null | grep -q big"
kill -9 "$pid"
wait
is "agent killed mid-archive: the copy fails" "$(cat "$T/rc")" 1
like "agent killed mid-archive: and says the sandbox ended, and nothing was written" \
	"$(cat "$T/err")" "sandbox $id ended during the copy.*nothing was written"
is "agent killed mid-archive: no file, no staging left" "$(ls -A "$T/dl")" ""
sbx destroy "$id" > /dev/null

# --- a registry cut short ----------------------------------------------------------
sbx serve --stop > /dev/null 2>&1
mkdir -p "$XDG_STATE_HOME/sbxtop"
: > "$REG"
sbx ls > /dev/null 2> "$T/err"; rc=$?
is "an empty registry: ls still works" "$rc" 0
like "an empty registry: is reported, and kept aside" "$(cat "$T/err")" "was corrupt \\(empty\\): it is kept as"
is "nothing is left" "$(left)" ""
done_testing
