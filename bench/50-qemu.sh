# The qemu backend: boot-to-ready beside snapshot-restore-to-ready (p50, same
# run, same machine), the snapshot itself, exec round trip into a running VM,
# and host memory per VM.  Under TCG on hosts where KVM does not work (said in
# the output).  Sandboxes are made one at a time: the numbers are latencies.
set -eu
BUILD=${BUILD:-build}
N=${BENCH_QEMU_N:-3}
TOP=$(pwd)
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
export XDG_STATE_HOME="$T/state" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/config" \
	XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache"
export SBXTOP_KERNEL_CACHE="${SBXTOP_KERNEL_CACHE:-$TOP/build/kernel-cache}"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
S="$BUILD/sbxtop"
ids=""
trap 'for i in $ids; do "$S" destroy "$i" >/dev/null 2>&1; done; rm -rf "$T"' EXIT

if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
	echo "qemu backend: skipped (qemu-system-x86_64 is not installed)"
	exit 0
fi
now_us() { echo $(( $(date +%s%N) / 1000 )); }
# stats FILE: p50 and max (ms) of microsecond samples, one per line.
stats() { sort -n "$1" | awk '{v[NR]=$1} END {printf "%10.0f %10.0f", v[int((NR+1)/2)]/1000, v[NR]/1000}'; }
p50() { sort -n "$1" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

"$S" image build >/dev/null 2>&1
: > "$T/boot"; : > "$T/restore"; : > "$T/exec"
for i in $(seq "$N"); do
	t=$(now_us)
	id=$("$S" create --backend qemu --memory 256 </dev/null 2>"$T/note")
	echo $(( $(now_us) - t )) >> "$T/boot"
	ids="$ids $id"
done
accel=$(grep -o 'under [A-Z]*' "$T/note" | tail -1)
first=${ids# }; first=${first%% *}
"$S" exec -n "$first" -- 'echo warm > /workspace/warm' >/dev/null
t=$(now_us)
"$S" snapshot "$first" bench >/dev/null
snap_us=$(( $(now_us) - t ))
for i in $(seq "$N"); do
	t=$(now_us)
	id=$("$S" create --backend qemu --from-snapshot bench </dev/null 2>/dev/null)
	echo $(( $(now_us) - t )) >> "$T/restore"
	ids="$ids $id"
done
for i in $(seq 10); do
	t=$(now_us); "$S" exec -n "$first" -- true; echo $(( $(now_us) - t )) >> "$T/exec"
done
pss=0; n=0
for id in $ids; do
	pid=$(cat "$XDG_STATE_HOME/sbxtop/sandboxes/$id/qemu.pid")
	pss=$((pss + $(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup")))
	n=$((n + 1))
done

printf '%-48s %10s %10s\n' "qemu backend ($N each, ${accel#under })" "p50 ms" "max ms"
printf '  %-46s %s\n' "create: boot to a ready agent" "$(stats "$T/boot")"
printf '  %-46s %s\n' "create --from-snapshot: restore to ready" "$(stats "$T/restore")"
printf '  %-46s %s   (target >= 3x)\n' "restore speed-up over boot (p50)" \
	"$(awk -v b="$(p50 "$T/boot")" -v r="$(p50 "$T/restore")" 'BEGIN {printf "%9.1fx", b / r}')"
printf '  %-46s %10.0f\n' "sbxtop snapshot (VM paused, memory + disk)" "$(echo "$snap_us / 1000" | bc -l)"
printf '  %-46s %s\n' "sbxtop exec ID -- true (running VM)" "$(stats "$T/exec")"
printf '  %-46s %10d KiB (guest memory 256 MiB)\n' "host memory per VM (QEMU PSS)" $((pss / n))
"$S" snapshot rm bench
