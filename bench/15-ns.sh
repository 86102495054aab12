# The ns backend: create-to-ready, exec into a running sandbox beside bubblewrap
# starting a fresh one, destroy, and host memory per idle sandbox.
set -eu
BUILD=${BUILD:-build}
N=${BENCH_NS_N:-50}
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
export XDG_STATE_HOME="$T/state" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/config" \
	XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
S="$BUILD/sbxtop"
ids=""
# The commands start a core server on demand: it goes too.
trap 'for i in $ids; do "$S" destroy "$i" >/dev/null 2>&1; done; "$S" serve --stop >/dev/null 2>&1; rm -rf "$T"' EXIT

now_us() { echo $(( $(date +%s%N) / 1000 )); }
# stats FILE: p50 p99 (ms) of microsecond samples, one per line.
stats() { sort -n "$1" | awk '{v[NR]=$1} END {p50=v[int((NR+1)/2)]; p99=v[int(NR*0.99+0.999)]; printf "%10.2f %10.2f", p50/1000, p99/1000}'; }

"$S" create >/dev/null 2>&1 </dev/null && "$S" destroy "$("$S" ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')" >/dev/null   # the image cache
: > "$T/create"
for i in $(seq "$N"); do
	t=$(now_us)
	id=$("$S" create </dev/null)
	echo $(( $(now_us) - t )) >> "$T/create"
	ids="$ids $id"
done
printf '%-48s %10s %10s\n' "ns backend ($N sandboxes)" "p50 ms" "p99 ms"
printf '  %-46s %s   (target p50 <= 30 ms)\n' "sbxtop create, to a ready agent" "$(stats "$T/create")"

# Host memory per idle sandbox: the cgroup's charge (processes, page tables, the
# sandbox's own files in the page cache) and the agent's proportional set size.
mem=0; pss=0; n=0
for id in $ids; do
	pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$XDG_STATE_HOME/sbxtop/sandboxes/$id/backend.json")
	cg=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])).get("cgroup") or {}; print((d.get("paths") or {}).get("memory") or d.get("path") or "")' "$XDG_STATE_HOME/sbxtop/sandboxes/$id/backend.json" 2>/dev/null || true)
	p=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup")
	pss=$((pss + p))
	for f in "$cg/memory.usage_in_bytes" "$cg/memory.current"; do
		[ -r "$f" ] && { mem=$((mem + $(cat "$f") / 1024)); break; }
	done
	n=$((n + 1))
done
printf '%-48s %10s %10s\n' "host memory per idle sandbox" "KiB" ""
printf '  %-46s %10d              (target <= 512 KiB)\n' "agent PSS (init of the sandbox)" $((pss / n))
[ "$mem" -gt 0 ] && printf '  %-46s %10d\n' "cgroup memory charge" $((mem / n))

# exec into a running sandbox, the whole sbxtop process, beside bubblewrap starting
# a fresh sandbox around the same command.
id=${ids%% *}; id=${ids# }; id=${id%% *}
: > "$T/exec"; : > "$T/bwrap"
for i in $(seq "$N"); do
	t=$(now_us); "$S" exec -n "$id" -- true; echo $(( $(now_us) - t )) >> "$T/exec"
	t=$(now_us)
	bwrap --unshare-all --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
		--symlink usr/lib64 /lib64 --symlink usr/sbin /sbin --proc /proc --dev /dev \
		--tmpfs /tmp /bin/bash -c true
	echo $(( $(now_us) - t )) >> "$T/bwrap"
done
printf '%-48s %10s %10s\n' "run \`bash -c true\` in a sandbox" "p50 ms" "p99 ms"
printf '  %-46s %s\n' "sbxtop exec ID -- true (running sandbox)" "$(stats "$T/exec")"
printf '  %-46s %s\n' "peer: bwrap --unshare-all ... bash -c true" "$(stats "$T/bwrap")"

: > "$T/destroy"
for id in $ids; do
	t=$(now_us); "$S" destroy "$id"; echo $(( $(now_us) - t )) >> "$T/destroy"
done
ids=""
printf '  %-46s %s\n' "sbxtop destroy" "$(stats "$T/destroy")"
