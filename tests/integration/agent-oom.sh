# The agent and the OOM killer, outside any sandbox: every command it starts
# raises its oom_score_adj to 1000 and cannot go back below the agent's; a
# command killed while the count --oom-events names rose ends with reason oom
# (status 137 still), one killed otherwise with reason signal; and --init
# outside PID 1 stops only the agent's own descendants on exit (as PID 1 it
# signals every process it may), tried as a throwaway ordinary user, never as
# root.
. "$(dirname "$0")/../lib.sh"

printf 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n' > "$T/events"
agent_start --oom-events "$T/events"
J() { json_get "$1" "$2"; }
ex() {	# ex COMMAND: the buffered exec's answer
	api POST /v1/exec -H 'Content-Type: application/json' \
		-d "$(python3 -c 'import json,sys; print(json.dumps({"command": sys.argv[1]}))' "$1")"
}

# --- oom_score_adj ------------------------------------------------------------------
mine=$(cat /proc/$AGENT_PID/oom_score_adj)
r=$(ex 'cat /proc/self/oom_score_adj')
is "a command starts with oom_score_adj 1000" "$(J "$r" 'd["stdout"].strip()')" 1000
is "the agent's own is as it was started ($mine)" "$(cat /proc/$AGENT_PID/oom_score_adj)" "$mine"
min=$(( mine - 1 ))
# Root with CAP_SYS_RESOURCE (bit 24) may go lower; anyone else stops at the agent's.
cap=$(( 0x$(awk '/^CapEff:/ {print $2}' /proc/self/status) >> 24 & 1 ))
r=$(ex "{ echo $min > /proc/self/oom_score_adj; } 2>&1; cat /proc/self/oom_score_adj")
if [ "$mine" -le -1000 ] || { [ "$(id -u)" -eq 0 ] && [ "$cap" -eq 1 ]; }; then
	ok "# SKIP the agent is at -1000, or commands have CAP_SYS_RESOURCE"
else
	like "a command cannot lower its score below the agent's" "$(J "$r" 'd["stdout"]')" \
		'(Permission denied|not permitted)'
	is "... it stays 1000" "$(J "$r" 'd["stdout"].split()[-1]')" 1000
fi
r=$(ex "echo $mine > /proc/self/oom_score_adj && cat /proc/self/oom_score_adj")
is "... but may come back down to it" "$(J "$r" 'd["stdout"].strip()')" "$mine"

# --- exit reasons ---------------------------------------------------------------------
r=$(ex 'exit 3')
is "an exit has reason exit" "$(J "$r" 'd["reason"], d["exit_code"]')" "('exit', 3)"
r=$(ex 'kill -9 $$')
is "a KILL with no OOM kill counted has reason signal" "$(J "$r" 'd["reason"], d["signal"]')" "('signal', 'KILL')"
# The agent holds the file open: rewrite it in place, as the kernel's changes.
count() { printf "printf 'oom %s\\\\noom_kill %s\\\\n' > %s" "$1" "$1" "$T/events"; }
r=$(ex "$(count 1); kill -9 \$\$")
is "a KILL while the count rose has reason oom, signal KILL" "$(J "$r" 'd["reason"], d["signal"], d["exit_code"]')" "('oom', 'KILL', None)"
r=$(ex "$(count 2); sh -c 'kill -9 \$\$'; exit \$?")
is "a shell reporting its child's KILL (137) then: reason oom, exit_code 137" "$(J "$r" 'd["reason"], d["exit_code"]')" "('oom', 137)"
r=$(ex "$(count 3); exit 1")
is "an ordinary exit while the count rose stays exit" "$(J "$r" 'd["reason"]')" exit
j=$(api GET /v1/execs)
is "the journal has the reasons" "$(J "$j" '[x.get("reason") for x in d["execs"]][-4:]')" "['signal', 'oom', 'oom', 'exit']"
"$AGENT" --listen "unix:$T/x.sock" --oom-events "$T/none" > "$T/out" 2>&1; rc=$?
is "a missing --oom-events file is refused" "$rc" 1
like "... saying which" "$(cat "$T/out")" "oom-events $T/none: No such file"

# --- --init outside PID 1 ------------------------------------------------------------
if [ "$(id -u)" -ne 0 ] || ! command -v useradd > /dev/null || ! command -v runuser > /dev/null; then
	ok "# SKIP needs root and useradd to try --init as a throwaway user"
	done_testing
	exit
fi
u=sbxt-init-$$
useradd -M -s /bin/sh "$u" || { not_ok "make user $u"; done_testing; exit; }
at_exit "pkill -9 -u $u; userdel $u"
chmod 0755 "$T"
cp "$T/secret" "$T/secret-u"; chown "$u" "$T/secret-u"
# A process of that user that a runaway kill(-1) would take.
runuser -u "$u" -- sleep 60 &
sentinel=$!
sleep 0.2
# --init outside PID 1 (the child of a VM's own init): a subreaper that, on its
# way out, stops its own descendants, even one that left its session, and no
# other process of the user.
mkdir "$T/u"; chown "$u" "$T/u"
runuser -u "$u" -- "$AGENT" --init --listen "unix:$T/u/init.sock" \
	--secret-file "$T/secret-u" --workspace "$T/u" --log "$T/u/init.log" > "$T/out" 2>&1 &
ipid=$!
for _i in $(seq 100); do [ -S "$T/u/init.sock" ] && break; sleep 0.05; done
SOCK="$T/u/init.sock"
api POST /v1/exec -H 'Content-Type: application/json' \
	-d '{"command":"setsid sleep 61 < /dev/null > /dev/null 2>&1 &"}' > /dev/null
is "--init outside PID 1 runs (a command through it)" "$(status)" 200
sleep 0.3
check "... whose orphan, in a session of its own, lives" sh -c "pgrep -u $u -f 'sleep 61' > /dev/null"
kill -TERM "$(pgrep -u "$u" -f -- "--listen unix:$T/u/init.sock")"; wait "$ipid"
is "... and on TERM it exits 0" "$?" 0
sleep 0.3
check "... with its orphan stopped" sh -c "! pgrep -u $u -f 'sleep 61' > /dev/null"
check "... and nothing else of the user's (its other process lives)" sh -c "pgrep -u $u -x sleep > /dev/null"
kill "$sentinel" 2> /dev/null
done_testing
