# Faults in a qemu sandbox's lifecycle, at the steps where a QEMU process
# exists (SBXTOP_FAULT, lib/fault.h): a create killed once QEMU started leaves
# a record that says `creating`, which ages into `terminated` with the reason,
# and gc kills its QEMU; one whose record was lost is found by its pid file,
# and one whose directory went too by its command line; a failed step leaves
# nothing; a create killed once the agent answered, and a destroy killed once
# QEMU died, leave what destroy or gc ends.  Few boots: under TCG each is
# 5-20 s.
. "$(dirname "$0")/../lib.sh"

if ! command -v qemu-system-x86_64 > /dev/null 2>&1; then
	echo "ok 1 # SKIP qemu-system-x86_64 is not installed (scripts/deps.sh)"
	exit 0
fi
sbx() { "$SBXTOP" --standalone "$@" < /dev/null; }
REG="$XDG_STATE_HOME/sbxtop/sandboxes.json"
SD="$XDG_STATE_HOME/sbxtop/sandboxes"
export SBXTOP_QEMU_BOOT_TIMEOUT=150
destroy_left_at_exit
# Every QEMU of this test goes, whatever happened.
qemus() { for p in $(pgrep -x qemu-system-x86); do grep -q "$T" "/proc/$p/cmdline" 2> /dev/null && echo "$p"; done; }
at_exit 'for p in $(qemus); do kill -9 $p; done'
at_exit 'SBXTOP_STANDALONE=1 "$SBXTOP" gc'

sbx image build > /dev/null 2> "$T/err"; rc=$?
is "image build: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || { diag "$(cat "$T/err")"; done_testing; exit 1; }

nothing_left() { [ -z "$(qemus)" ] && [ -z "$(ls -A "$SD" 2> /dev/null)" ]; }
records() { python3 -c 'import json,sys; print(" ".join(s["id"]+":"+s["state"] for s in json.load(open(sys.argv[1]))["sandboxes"]))' "$REG"; }
# started POINT: a create killed there; its id and QEMU's pid in $qid, $qpid.
started() {
	SBXTOP_FAULT="$1:kill" "$SBXTOP" --standalone create --backend qemu < /dev/null > /dev/null 2>&1
	qid=$(records | tr ' ' '\n' | sed -n 's/:creating$//p' | head -1)
	qpid=$(cat "$SD/$qid/qemu.pid" 2> /dev/null)
}

# --- killed once QEMU started: a record that says so ---------------------------
started create.qemu.started
like "killed once QEMU started: the record says creating" "$(records)" "sbx-[0-9a-f]{6}:creating"
check "and its QEMU runs on (pid $qpid)" test -n "$qpid" -a -d "/proc/$qpid"
record_age "$qid"
like "aged: status says its create never finished, and how to end it" "$(sbx status "$qid" 2>&1)" \
	"terminated: its create never finished .*QEMU pid $qpid runs on until .sbxtop destroy $qid"
like "gc --dry-run lists its VM" "$(sbx gc --dry-run)" "$qid +vm +QEMU pid $qpid"
sbx gc > /dev/null
check "gc: its QEMU is gone, its directory too" until_ok 10 nothing_left
is "gc: its record went" "$(records)" ""

# --- a failed step leaves nothing ------------------------------------------------
for p in create.qemu.dir create.qemu.started; do
	SBXTOP_FAULT="$p:fail" "$SBXTOP" --standalone create --backend qemu < /dev/null > /dev/null 2> "$T/err"; rc=$?
	is "fail at $p: create exits 1" "$rc" 1
	like "fail at $p: and says where" "$(cat "$T/err")" "$p: a fault injected here"
	check "fail at $p: no QEMU, no directory left" nothing_left
	is "fail at $p: no record left" "$(records)" ""
done

# --- a QEMU no record names: by its pid file, by its command line -------------------
started create.qemu.started
record_drop "$qid"
out=$(sbx gc --dry-run)
like "no record: gc --dry-run finds the VM by its pid file" "$out" "$qid +vm +QEMU pid $qpid \\(no record\\)"
like "no record: and its directory" "$out" "$qid +directory +$SD/$qid \\(no record\\)"
sbx gc > /dev/null
check "no record: gc killed it and removed its directory" until_ok 10 nothing_left

started create.qemu.started
record_drop "$qid"
rm -rf "${SD:?}/$qid"
like "no record, no directory: gc --dry-run finds the VM by its command line" \
	"$(sbx gc --dry-run)" "$qid +vm +QEMU pid $qpid \\(no record\\)"
sbx gc > /dev/null
check "no record, no directory: gc killed it" until_ok 10 nothing_left

# --- after a boot: killed once the agent answered, a destroy killed -----------------
t0=$(date +%s)
started create.qemu.ready
check "killed once its agent answered: the record says creating" test -n "$qid"
diag "boot to the kill: $(($(date +%s) - t0)) s"
record_age "$qid"
sbx gc > /dev/null
check "killed once its agent answered: gc ends it" until_ok 10 nothing_left
is "and drops its record" "$(records)" ""

id=$(sbx create --backend qemu); rc=$?
is "create a VM to destroy" "$rc" 0
qpid=$(cat "$SD/$id/qemu.pid" 2> /dev/null)
SBXTOP_FAULT=destroy.qemu.killed:kill "$SBXTOP" --standalone destroy "$id" > /dev/null 2>&1
check "destroy killed once QEMU died: QEMU is gone" until_ok 10 sh -c "! kill -0 $qpid 2> /dev/null"
like "its record is there, terminated" "$(sbx ls 2>&1)" "$id .*qemu +terminated"
sbx destroy "$id" > /dev/null; rc=$?
is "destroy again: exit 0" "$rc" 0
check "nothing left" nothing_left
is "no record left" "$(records)" ""
done_testing
