# Warm pools of the qemu backend (TCG here): the core server keeps a booted VM
# ready and saves it as the snapshot pool-1.base; a create that matches takes
# it (from_pool) with its own name and deadline (its agent told on the
# connection the pool kept warm, its watchdog told the new deadline: it ends
# on time, by the watchdog alone), exec works, the pool refills by restoring
# the snapshot instead of booting, and that member is claimed as well;
# serve --stop destroys the member and removes the snapshot; nothing is left
# (no record, no directory, no QEMU, no snapshot).
. "$(dirname "$0")/../lib.sh"

if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
	echo "ok 1 - # SKIP qemu-system-x86_64 is not installed (scripts/deps.sh)"
	exit 0
fi
J() { json_get "$1" "$2"; }
export SBXTOP_QEMU_BOOT_TIMEOUT=150
REG="$XDG_STATE_HOME/sbxtop/sandboxes.json"
SDIR="$XDG_STATE_HOME/sbxtop/sandboxes"
srv=""
at_exit 'for f in "$SDIR"/*/qemu.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")"; done'
destroy_left_at_exit
at_exit '"$SBXTOP" serve --stop; [ -n "$srv" ] && kill -9 $srv; "$SBXTOP" gc'
# ready: the ids of running pool members.
ready() {
	python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1]))
except FileNotFoundError: sys.exit(0)
[print(s["id"]) for s in d["sandboxes"] if s.get("pool") and s["state"] == "running"]' "$REG"
}
has_ready() { [ "$(ready | wc -l)" -eq 1 ]; }
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }

"$SBXTOP" image build > /dev/null 2> "$T/err"; rc=$?
is "image build: exit 0" "$rc" 0
if [ "$rc" -ne 0 ]; then diag "$(cat "$T/err")"; done_testing; exit 1; fi
mkdir -p "$XDG_CONFIG_HOME/sbxtop"
echo "pool = 1 backend=qemu" > "$XDG_CONFIG_HOME/sbxtop/sbxtop.conf"
"$SBXTOP" --log-level debug serve --foreground > "$T/serve.log" 2>&1 &
srv=$!
check "the server boots a VM for its pool" until_ok 180 has_ready
listed() { grep -q "pool pool-1: .* ready in" "$T/serve.log"; }
check "and saves it as a snapshot before it lists it ready" until_ok 60 listed
like "  pool-1.base, in snapshot ls" "$("$SBXTOP" snapshot ls)" "pool-1\.base"
m=$(ready)
qpid=$(cat "$SDIR/$m/qemu.pid" 2>/dev/null)
wd_of() { J "$(cat "$REG")" '[s["backend_data"]["watchdog_pid"] for s in d["sandboxes"] if s["id"] == "'"$1"'"][0]'; }
wd0=$(wd_of "$m")

t0=$(date +%s%N)
id=$("$SBXTOP" create --backend qemu --name q1 --max-duration 25 2> "$T/err"); rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
is "create from the pool: exit 0" "$rc" 0
is "it is the member" "$id" "$m"
diag "the create took $ms ms (the server's claim: $(grep -o "from pool pool-1, .*" "$T/serve.log"))"
check "  well under a boot (< 2 s)" test "$ms" -lt 2000
st=$("$SBXTOP" status q1 --json)
is "its record: name, from_pool, deadline" \
	"$(J "$st" '[d["name"], d["from_pool"], d["max_duration_s"], d["expires_at"] - d["created_at"]]')" \
	"['q1', 'pool-1', 25, 25000]"
is "exec works in it" "$("$SBXTOP" exec -n q1 -- echo hi)" hi
is "its hostname is its id" "$("$SBXTOP" exec -n q1 -- hostname)" "$id"
is "its deadline watchdog is the member's, told the new deadline (no new one)" "$(wd_of "$id")" "$wd0"
dl=$(( $(cat "$SDIR/$id/deadline") - $(J "$st" 'd["created_at"]') ))
check "  which is the claim's ($dl ms after it)" test "$dl" -ge 25000 -a "$dl" -lt 27000
# From here only the watchdog can end it in time: its guest no longer runs.
kill -STOP "$qpid"
check "the pool refills" until_ok 180 sh -c "[ \"\$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for s in d[\"sandboxes\"] if s.get(\"pool\") and s[\"state\"] == \"running\" and s[\"id\"] != sys.argv[2]))' '$REG' '$id')\" = 1 ]"
m2=$(ready | grep -v "^$id\$")
is "  by restoring the snapshot, not booting" "$(J "$(cat "$REG")" \
	'[s["backend_data"].get("snapshot") for s in d["sandboxes"] if s["id"] == "'"$m2"'"][0]')" pool-1.base
listed2() { [ "$(grep -c "pool pool-1: .* ready in" "$T/serve.log")" -ge 2 ]; }
until_ok 30 listed2
id2=$("$SBXTOP" create --backend qemu --name q2 --max-duration 300 2> "$T/err")
is "a create takes the restored member" "$id2" "$m2"
is "exec works in it" "$("$SBXTOP" exec -n q2 -- echo restored)" restored
is "its hostname is its id" "$("$SBXTOP" exec -n q2 -- hostname)" "$id2"
like "its record says it was restored" "$(J "$("$SBXTOP" status q2 --json)" 'd.get("limits_note","")')" \
	"restored in [0-9.]+ s"
"$SBXTOP" destroy "$id2" > /dev/null
until_ok 40 sh -c "'$SBXTOP' ls --json | grep -q '\"terminated\"'"
el=$((($(date +%s%N) - t0) / 1000000))
like "the claimed VM ended at its deadline" \
	"$(J "$("$SBXTOP" ls --json)" '[s["state"] for s in d if s["id"] == "'"$id"'"][0]')" terminated
check "  after 24 to 40 s ($el ms), not the pool's day" test "$el" -ge 24000 -a "$el" -lt 40000
check "  its QEMU is gone" until_ok 10 gone "$qpid"

"$SBXTOP" destroy "$id" > /dev/null
pids=""
for f in "$SDIR"/*/qemu.pid; do [ -f "$f" ] && pids="$pids $(cat "$f")"; done
"$SBXTOP" serve --stop > /dev/null 2>&1
check "serve --stop: the server is gone" until_ok 20 gone "$srv"
srv=""
like "  it destroyed its member" "$(cat "$T/serve.log")" "pools stopped: 1 member destroyed"
if "$SBXTOP" snapshot ls | grep -q 'pool-1\.base'; then
	not_ok "  and removed its snapshot"
else
	ok "  and removed its snapshot"
fi
is "  no record is left" "$(J "$(cat "$REG")" 'len(d["sandboxes"])')" 0
is "  no directory is left" "$(ls -A "$SDIR" 2>/dev/null | wc -l)" 0
left=""
for p in $pids; do gone "$p" || left="$left $p"; done
is "  no QEMU is left" "$left" ""
done_testing
