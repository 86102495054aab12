# What the fault walks share (tests/integration/faults-*.sh): each sources
# this after tests/lib.sh.  SBXTOP_FAULT (lib/fault.h) kills the process that
# runs the core, or fails the step, at each point an operation reaches (learnt
# from a traced run, so a step added later is walked too); after each: the
# registry parses and nothing of it was set aside; nothing runs or stays on
# the host that no record names, once gc ran (a failed step leaves nothing even
# before); and the operation happened or did not.

if [ "$(id -u)" -ne 0 ]; then
	echo "ok 1 # SKIP run as root (loop devices, mounts and cgroups are walked too)"
	exit 0
fi
sbx() { "$SBXTOP" --standalone "$@" < /dev/null; }
REG="$XDG_STATE_HOME/sbxtop/sandboxes.json"
SD="$XDG_STATE_HOME/sbxtop/sandboxes"
destroy_left_at_exit
at_exit 'SBXTOP_STANDALONE=1 "$SBXTOP" gc'

left() { python3 "$TOP/tests/tools/leftovers.py" "$XDG_STATE_HOME" "$T/seen"; }
# problem TEXT: noted for the step being checked.
problem() { probs="${probs:+$probs; }$1"; }
reg_whole() {
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))["sandboxes"]' "$REG" 2> /dev/null ||
		problem "the registry does not parse"
	set -- "$REG".corrupt-*
	[ -e "$1" ] && problem "the registry was set aside: $(ls "$REG".corrupt-*)"
}
ids() { sbx ls --json | python3 -c 'import json,sys; print(" ".join(sorted(s["id"] for s in json.load(sys.stdin))))'; }
state_of() { sbx ls --json | python3 -c 'import json,sys
for s in json.load(sys.stdin):
    if s["id"] == sys.argv[1]: print(s["state"])' "$1"; }
answers() { [ "$(sbx exec -n "$1" -- echo up 2>/dev/null)" = up ]; }
# trace CMD...: the fault points CMD reaches, each once, in order.
trace() {
	: > "$T/trace"
	SBXTOP_FAULT_TRACE="$T/trace" "$@" > /dev/null 2>&1
	awk '!seen[$0]++' "$T/trace"
}
# steps WHAT POINT CMD...: the points CMD reaches, in $points, said, and
# checked to hold POINT (a step the walk must not miss).
steps() {
	_w=$1 _must=$2; shift 2
	points=$(trace "$@")
	diag "$_w's steps: $(echo $points)"
	case " $(echo $points) " in
	*" $_must "*) ok "$_w reaches $_must" ;;
	*) not_ok "$_w reaches $_must" ;;
	esac
}
# faulted POINT ACTION CMD...: CMD with the fault; rc and its stderr in $T/ferr.
faulted() {
	_p=$1 _a=$2; shift 2
	SBXTOP_FAULT="$_p:$_a" "$@" > "$T/fout" 2> "$T/ferr" < /dev/null; frc=$?
}
# settle ACTION: what a fault left.  A failed step cleans up after itself; a
# killed process's orphans are listed by gc --dry-run, then gone with gc.
settle() {
	reg_whole
	if [ "$1" = fail ]; then
		_l=$(left)
		[ -z "$_l" ] || problem "left after a failed step: $_l"
	else
		_o=$(left | grep -v '^file ' | awk '{print $2}' | sort -u)
		for _id in $_o; do
			sbx gc --dry-run | grep -q "^$_id .*(no record)" ||
				problem "gc --dry-run does not list the orphan $_id"
		done
	fi
	sbx gc > /dev/null 2>&1
	_l=$(left)
	[ -z "$_l" ] || problem "left after gc: $_l"
	reg_whole
}
# says_why: the failed command's error names the step that failed (an error
# of its own, or the system call's, as the fault makes it: EIO).
says_why() { grep -q "SBXTOP_FAULT\|Input/output error" "$T/ferr"; }
# verdict WHAT: one line per step and action.
verdict() { is "$1" "$probs" ""; probs=""; }
probs=""
