# Bursts: an agent fanning out asks for many sandboxes at once.  Fifty
# `sbxtop create` run in parallel against one core server, five batches; every
# create must succeed, and each batch is timed (on the two-core test machine a
# batch takes about a second; a create stuck in the launcher's child made its
# batch wait out the 30 s ready timeout).  Each batch is destroyed before the
# next, and nothing may be left.
. "$(dirname "$0")/../lib.sh"

N=${NS_BURST_N:-50}
BATCHES=${NS_BURST_BATCHES:-5}
LIMIT_S=20	# far above a healthy batch (even on a loaded machine), below a stuck one
export HOME="$T/home"
mkdir -p "$HOME"
SDIR="$XDG_STATE_HOME/sbxtop/sandboxes"
at_exit 'for f in "$T"/b*/id.*; do [ -s "$f" ] && "$SBXTOP" destroy "$(cat "$f")"; done'

# The core server up and the default image built first, so the batches
# measure creates, not those.
t0=$(date +%s%N)
id=$("$SBXTOP" create 2> "$T/err")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
like "a first create (the core server started, the image built: $ms ms)" "$id" '^sbx-'
[ -n "$id" ] && "$SBXTOP" destroy "$id" > /dev/null
check "the core server is up" test -S "$XDG_RUNTIME_DIR/sbxtop/core.sock"

for b in $(seq "$BATCHES"); do
	d="$T/b$b"
	mkdir -p "$d"
	t0=$(date +%s%N)
	i=0
	while [ "$i" -lt "$N" ]; do
		i=$((i + 1))
		"$SBXTOP" create --max-duration 300 > "$d/id.$i" 2> "$d/err.$i" &
	done
	wait
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	made=$(cat "$d"/id.* | grep -c '^sbx-')
	is "batch $b: $N parallel creates all succeed" "$made" "$N"
	if [ "$made" -ne "$N" ]; then
		for f in "$d"/err.*; do [ -s "$f" ] && diag "$(head -c 300 "$f")"; done | sort | uniq -c | head -5
	fi
	check "batch $b: done in $ms ms (under $LIMIT_S s)" test "$ms" -lt $((LIMIT_S * 1000))
	diag "batch $b: $made/$N created in $ms ms"
	for f in "$d"/id.*; do
		[ -s "$f" ] && "$SBXTOP" destroy "$(cat "$f")" > /dev/null 2>&1 &
	done
	wait
	: > "$d/destroyed"
	for f in "$d"/id.*; do : > "$f"; done
done
is "nothing is left under sandboxes/" "$(ls -A "$SDIR" 2>&1)" ""
is "no sandbox is listed" "$("$SBXTOP" ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 0
done_testing
