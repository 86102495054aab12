# Idle suspend on the ns backend: a sandbox made with --idle-suspend S is
# frozen by the core server after S seconds without calls (its processes stop
# for real), a running command holds it awake, the next call resumes it with the
# right output, ls and status say why, the deadline keeps counting, and a
# suspend the user asked for is not undone by a call.
. "$(dirname "$0")/../lib.sh"

sbx() { "$SBXTOP" "$@" < /dev/null; }
run() { _id=$1; shift; "$SBXTOP" exec -n "$_id" -- "$@" 2> "$T/err"; rc=$?; }
field() { "$SBXTOP" ls --json 2>/dev/null | python3 -c 'import json,sys
for s in json.load(sys.stdin):
    if s["id"] == sys.argv[1]: print(s.get(sys.argv[2]))' "$1" "$2"; }
# wait_state ID STATE SECONDS
wait_state() {
	for _i in $(seq $(( $3 * 10 ))); do
		[ "$(field "$1" state)" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

a=$(sbx create --idle-suspend 2 --max-duration 600); rc=$?
at_exit "$SBXTOP destroy $a"
is "create --idle-suspend 2" "$rc" 0
is "the record has the policy" "$(field "$a" idle_suspend_s)" 2
like "status shows it" "$(sbx status "$a")" 'suspend: +after 2s without calls'
expires=$(field "$a" expires_at)
dir="$XDG_STATE_HOME/sbxtop/sandboxes/$a"

# A ticker in the background shows whether its processes really stop.
run "$a" 'nohup sh -c "while :; do echo x >> /workspace/tick; sleep 0.1; done" > /dev/null 2>&1 &' > /dev/null
is "a background ticker starts" "$rc" 0

# A command that runs longer than S keeps it awake.
out=$(run "$a" 'sleep 3.5; echo slept')
is "a command longer than the idle time runs to its end" "$out" slept
is "and the sandbox was not suspended under it" "$(field "$a" state)" running

check "suspended within a few seconds of idleness" wait_state "$a" suspended 6
is "the reason is idle" "$(field "$a" state_reason)" idle
like "status says suspended: idle" "$(sbx status "$a")" 'state: +suspended: idle'
like "ls notes it" "$("$SBXTOP" ls 2>&1 >/dev/null < /dev/null)" "$a: suspended: idle"
n1=$(wc -l < "$dir/workspace/tick"); sleep 1; n2=$(wc -l < "$dir/workspace/tick")
is "its processes are frozen (the ticker wrote nothing in 1 s)" "$n2" "$n1"

t0=$(date +%s%N)
out=$(run "$a" 'echo resumed-output; cat /proc/1/status | grep ^State')
t1=$(date +%s%N)
is "exec on the suspended sandbox succeeds" "$rc" 0
like "with the right output" "$out" '^resumed-output'
diag "resume + exec: $(( (t1 - t0) / 1000000 )) ms"
is "it is running again" "$(field "$a" state)" running
n1=$(wc -l < "$dir/workspace/tick"); sleep 0.6; n2=$(wc -l < "$dir/workspace/tick")
check "the ticker runs again" test "$n2" -gt "$n1"
is "the deadline did not move" "$(field "$a" expires_at)" "$expires"

# Another call than exec resumes it too: a copy out.
check "suspended again" wait_state "$a" suspended 6
echo content > "$T/in.txt"
sbx cp "$T/in.txt" "$a:in.txt" > /dev/null 2> "$T/err"; rc=$?
is "cp into an idle-suspended sandbox resumes it" "$rc" 0
is "the file arrived" "$(run "$a" 'cat /workspace/in.txt')" content

# A suspend the user asked for stays until resumed by hand.
sbx suspend "$a"
run "$a" 'echo no' > /dev/null
check "exec on a sandbox the user suspended fails" test "$rc" -ne 0
like "saying it is suspended" "$(cat "$T/err")" 'suspended'
is "and it stays suspended" "$(field "$a" state)" suspended
sbx resume "$a"

# The deadline counts while suspended: it ends at its deadline all the same.
b=$(sbx create --idle-suspend 1 --max-duration 5); at_exit "$SBXTOP destroy $b"
check "the short-lived sandbox is suspended for idleness" wait_state "$b" suspended 5
check "and terminated at its deadline though suspended" wait_state "$b" terminated 12

# The default from the configuration.
c=$(SBXTOP_IDLE_SUSPEND=7 "$SBXTOP" create --max-duration 600 < /dev/null); at_exit "$SBXTOP destroy $c"
is "SBXTOP_IDLE_SUSPEND gives the default" "$(field "$c" idle_suspend_s)" 7
d=$(sbx create --max-duration 600); at_exit "$SBXTOP destroy $d"
is "without it there is no policy" "$(field "$d" idle_suspend_s)" 0
sbx create --idle-suspend 90000 > /dev/null 2> "$T/err"; rc=$?
check "an out-of-range --idle-suspend is refused" test "$rc" -ne 0
like "with the range" "$(cat "$T/err")" '0 to 86400|86400'

# A forwarded connection holds it awake while it moves bytes, and the first
# connection to an idle-suspended sandbox resumes it.
f=$(sbx create --idle-suspend 2 --max-duration 600); at_exit "$SBXTOP destroy $f"
"$SBXTOP" exec -n "$f" -- sh -c 'mkdir -p /tmp/www && echo served > /tmp/www/x && cd /tmp/www && nohup python3 -m http.server 8000 --bind 127.0.0.1 > /dev/null 2>&1 &' < /dev/null
url=$(sbx forward "$f" 8000 | head -1)
like "a forward to the sandbox" "$url" '^http://127\.0\.0\.1:[0-9]+'
for _i in $(seq 50); do curl -sf "$url/x" > /dev/null && break; sleep 0.1; done
for _i in $(seq 8); do curl -sf "$url/x" > /dev/null; sleep 0.5; done
is "requests every 0.5 s through the forward keep it running past 2 s" "$(field "$f" state)" running
check "idle again, it is suspended" wait_state "$f" suspended 8
# The relay reads the sandbox's state from the registry about once a second: a
# connection in that first second goes to the frozen agent and times out.
sleep 1.5
is "a connection through the forward resumes it and is answered" "$(curl -s -m 10 "$url/x")" served
is "and it runs again" "$(field "$f" state)" running
sbx forward --stop "$f" > /dev/null 2>&1

done_testing
