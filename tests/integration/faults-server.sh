# Faults in the core server, on the ns backend (the walk is tests/faults.sh's):
# a warm pool's claim and a forward's restore, killed or failed at each step,
# then a server without the fault: a claimed sandbox whole or none, no member
# left behind, one forward restored and no twin record.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/faults.sh"

# --- the core server: a pool's claim, a forward's restore ------------------------
# Started by this shell with the fault in its environment; killed or failed
# at the step; then a server without it.
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
