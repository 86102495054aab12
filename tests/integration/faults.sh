# Faults at every step, on the ns backend: SBXTOP_FAULT (lib/fault.h) kills
# the process that runs the core, or fails the step, at each point that create,
# destroy, fork, copy in and copy out reach (learnt from a traced run, so a
# step added later is walked too), and the warm pool's claim and a forward's
# restore in the core server.  After each: the registry parses and nothing of
# it was set aside; nothing runs or stays on the host that no record names,
# once gc ran (a failed step leaves nothing even before); and the operation
# happened or did not: a sandbox made answers, one destroyed is gone or
# answers, a fork's source runs on as it was, a file copied is there whole or
# not at all.
. "$(dirname "$0")/../lib.sh"

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

# --- create --------------------------------------------------------------------
keep=$(sbx create --name keep); at_exit "$SBXTOP --standalone destroy $keep"
steps create create.ns.ready sbx create
sbx destroy "$(ids | tr ' ' '\n' | grep -v "$keep")" > /dev/null 2>&1
for p in $points; do
	for a in kill fail; do
		before=$(ids)
		faulted "$p" "$a" "$SBXTOP" --standalone create
		settle "$a"
		now=$(ids)
		new=$(for i in $now; do case " $before " in *" $i "*) ;; *) echo "$i";; esac; done)
		for i in $before; do case " $now " in *" $i "*) ;; *) problem "$i went";; esac; done
		if [ -n "$new" ]; then
			answers "$new" || problem "the sandbox created ($new) does not answer"
			[ "$frc" -eq 0 ] || [ "$a" = kill ] || problem "recorded, yet create said $frc: $(cat "$T/ferr")"
			sbx destroy "$new" > /dev/null
		elif [ "$frc" -eq 0 ]; then
			problem "create said yes and nothing was recorded"
		elif [ "$a" = fail ] && ! says_why; then
			problem "the error does not say why: $(cat "$T/ferr")"
		fi
		answers "$keep" || problem "the other sandbox ($keep) no longer answers"
		verdict "create, $a at $p: created whole or not at all, nothing unknown left"
	done
done

# --- destroy -------------------------------------------------------------------
victim=$(sbx create)
steps destroy destroy.ns.killed sbx destroy "$victim"
for p in $points; do
	for a in kill fail; do
		victim=$(sbx create)
		faulted "$p" "$a" "$SBXTOP" --standalone destroy "$victim"
		settle "$a"
		st=$(state_of "$victim")
		case "$st" in
		# A record that could not be dropped is the error's; gc drops it.
		"") [ "$frc" -eq 0 ] || [ "$a" = kill ] || says_why || problem "gone, yet destroy said $frc: $(cat "$T/ferr")" ;;
		running) answers "$victim" || problem "still recorded running, and does not answer"
			[ "$frc" -ne 0 ] || problem "destroy said yes and it runs" ;;
		terminated) ;;	# stopped half-way: destroy again ends it
		*) problem "recorded as $st" ;;
		esac
		if [ -n "$st" ]; then
			sbx destroy "$victim" > /dev/null 2>&1 || problem "destroy again fails: $(sbx destroy "$victim" 2>&1)"
			[ -z "$(state_of "$victim")" ] || problem "destroy again leaves a record"
		fi
		_l=$(left); [ -z "$_l" ] || problem "left once destroyed again: $_l"
		verdict "destroy, $a at $p: gone, or there and answering, nothing unknown left"
	done
done

# --- fork ----------------------------------------------------------------------
src=$(sbx create --name fsrc); at_exit "$SBXTOP --standalone destroy $src"
sbx exec -n "$src" -- 'echo forked-state > /workspace/f' > /dev/null
steps fork fork.ns.frozen sbx fork "$src"
for i in $(ids); do [ "$i" = "$src" ] || [ "$i" = "$keep" ] || sbx destroy "$i" > /dev/null; done
for p in $points; do
	for a in kill fail; do
		before=$(ids)
		faulted "$p" "$a" "$SBXTOP" --standalone fork "$src"
		settle "$a"
		st=$(state_of "$src")
		[ "$st" = running ] || problem "the source is $st (a fork must leave it as it was)"
		answers "$src" || problem "the source does not answer"
		for i in $(ids); do
			case " $before " in *" $i "*) continue ;; esac
			[ "$(sbx exec -n "$i" -- cat /workspace/f 2>/dev/null)" = forked-state ] ||
				problem "the fork $i does not answer with the source's files"
			sbx destroy "$i" > /dev/null
		done
		verdict "fork, $a at $p: a whole copy or none, the source running, nothing unknown left"
	done
done

# --- copy in and out -----------------------------------------------------------
head -c 3000000 /dev/urandom > "$T/big"
sum=$(sha256sum < "$T/big" | cut -d' ' -f1)
steps "copy in" copy-in.sending sbx cp "$T/big" "$keep:/workspace/big"
sbx exec -n "$keep" -- rm -f /workspace/big > /dev/null
for p in $points; do
	for a in kill fail; do
		faulted "$p" "$a" "$SBXTOP" --standalone cp "$T/big" "$keep:/workspace/big"
		settle "$a"
		got=$(sbx exec -n "$keep" -- 'test -e /workspace/big && sha256sum < /workspace/big | cut -d" " -f1; ls -A /workspace | grep -c sbxtop-part' 2>&1)
		case "$got" in
		"$sum"?0|0) ;;
		*) problem "in the sandbox: $got (want the whole file or none, and no part file)" ;;
		esac
		[ "$frc" -ne 0 ] || [ "$(echo "$got" | head -1)" = "$sum" ] || problem "cp said yes, the file is not whole"
		sbx exec -n "$keep" -- rm -f /workspace/big > /dev/null
		verdict "copy in, $a at $p: the file whole or absent, no part of it left"
	done
done

sbx cp "$T/big" "$keep:/workspace/big" > /dev/null
mkdir -p "$T/out"
steps "copy out" copy-out.receiving sbx cp "$keep:/workspace/big" "$T/out/big"
rm -f "$T/out/big"
for p in $points; do
	for a in kill fail; do
		faulted "$p" "$a" "$SBXTOP" --standalone cp "$keep:/workspace/big" "$T/out/big"
		settle "$a"
		if [ -e "$T/out/big" ]; then
			[ "$(sha256sum < "$T/out/big" | cut -d' ' -f1)" = "$sum" ] || problem "a partial file under the name"
		else
			[ "$frc" -ne 0 ] || problem "cp said yes and wrote nothing"
		fi
		# The next copy there clears what a killed one staged.
		sbx cp "$keep:/workspace/big" "$T/out/big" > /dev/null 2>&1 || problem "copy again fails"
		_s=$(ls -A "$T/out" | grep -v '^big$')
		[ -z "$_s" ] || problem "left beside the file after copying again: $_s"
		rm -f "$T/out/big"
		verdict "copy out, $a at $p: the file whole or absent, no staging left"
	done
done

# --- the core server: a pool's claim, a forward's restore ------------------------
# Started by this shell with the fault in its environment; killed or failed
# at the step; then a server without it.
sbx destroy "$keep" > /dev/null; sbx destroy "$src" > /dev/null
mkdir -p "$XDG_CONFIG_HOME/sbxtop"
echo "pool = 1" > "$XDG_CONFIG_HOME/sbxtop/sbxtop.conf"
members() { python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1]))
except (FileNotFoundError, ValueError): sys.exit(0)
[print(s["id"]) for s in d["sandboxes"] if s.get("pool")]' "$REG"; }
has_member() { [ -n "$(members)" ]; }
serve() {	# serve [FAULT]: a core server in the background, ready with a member
	SBXTOP_FAULT=${1:-} "$SBXTOP" serve --foreground > "$T/serve.log" 2>&1 &
	srv=$!
	until_ok 30 has_member || problem "the pool did not fill"
}
at_exit 'kill -9 $srv 2> /dev/null'
for p in claim.picked claim.taken claim.recorded; do
	for a in kill fail; do
		serve "$p:$a"
		before=$(ids)
		"$SBXTOP" create --name claimed > "$T/fout" 2> "$T/ferr" < /dev/null; frc=$?
		[ "$a" = kill ] && { wait "$srv" 2> /dev/null; }
		"$SBXTOP" serve --stop > /dev/null 2>&1; kill -9 "$srv" 2> /dev/null; wait "$srv" 2> /dev/null
		serve ""	# the next server destroys a dead one's members
		new=$(for i in $(ids); do case " $before " in *" $i "*) ;; *) echo "$i";; esac; done)
		if [ -n "$new" ]; then
			answers "$new" || problem "the sandbox claimed ($new) does not answer"
			sbx destroy "$new" > /dev/null
		elif [ "$frc" -eq 0 ]; then
			problem "create said yes and nothing was recorded"
		fi
		"$SBXTOP" serve --stop > /dev/null 2>&1; wait "$srv" 2> /dev/null
		settle kill
		verdict "pool claim, $a at $p: a claimed sandbox whole or none, no member left behind"
	done
done
rm -f "$XDG_CONFIG_HOME/sbxtop/sbxtop.conf"

fid=$(sbx create)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
fwds() { python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
print(sum(len(s.get("forwards") or []) for s in d["sandboxes"]))' "$REG"; }
for a in kill fail; do
	"$SBXTOP" forward "$fid" "8080:$port" > /dev/null 2> "$T/ferr" || problem "forward: $(cat "$T/ferr")"
	kill -9 "$(cat "$XDG_RUNTIME_DIR/sbxtop/server.lock")"
	sleep 0.5
	# Restores, then dies (or fails) before it drops the old record.
	SBXTOP_FAULT="restore.started:$a" "$SBXTOP" serve --foreground > "$T/serve.log" 2>&1 &
	srv=$!
	sleep 2
	[ "$a" = kill ] || "$SBXTOP" serve --stop > /dev/null 2>&1
	kill -9 "$srv" 2> /dev/null; wait "$srv" 2> /dev/null
	SBXTOP_FAULT= "$SBXTOP" serve --foreground > "$T/serve.log" 2>&1 &
	srv=$!
	until_ok 10 sh -c "[ \"\$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
print(sum(len(s.get(\"forwards\") or []) for s in d[\"sandboxes\"]))' '$REG')\" = 1 ]" ||
		problem "$(fwds) forward records, want the one restored"
	until_ok 10 sh -c "'$SBXTOP' forward --list 2>&1 | grep -q ':$port'" ||
		problem "the forward is not listed: $("$SBXTOP" forward --list 2>&1)"
	"$SBXTOP" forward --stop "$fid" > /dev/null 2>&1
	"$SBXTOP" serve --stop > /dev/null 2>&1; wait "$srv" 2> /dev/null
	reg_whole
	verdict "forward restore, $a at restore.started: one forward, restored, no twin record"
done
sbx destroy "$fid" > /dev/null
done_testing
