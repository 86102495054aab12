# The ns backend on a cgroup v2 host, for real: a qemu guest (TCG here) whose
# only cgroup hierarchy is the unified one, built as a test host image
# (busybox, the build's agent bundle with sbxtop-launch, and the build's
# sbxtop-core with its libraries next to it), runs tests/tools/cgroup-v2-guest.sh
# as root: memory, pids and CPU limits (a memory bomb and a fork bomb held,
# the agent alive), suspend and resume by the v2 freezer, OOM reported as such,
# destroy leaving no cgroup, and doctor; as root, as an ordinary user under a
# delegated subtree (systemd's user@UID.service layout), as one without
# delegation, and as root in a session shared with other processes.  The image is built fresh every run (a few seconds); only the
# kernel package is kept across runs, as in qemu.sh.  Every QEMU started is
# killed on exit.
. "$(dirname "$0")/../lib.sh"

sbx() { "$SBXTOP" "$@"; }
export HOME="$T/home"
mkdir -p "$HOME"
SDIR="$XDG_STATE_HOME/sbxtop/sandboxes"
START=$(date +%s)

if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
	echo "ok 1 - # SKIP qemu-system-x86_64 is not installed (scripts/deps.sh)"
	exit 0
fi
at_exit 'for f in "$SDIR"/*/qemu.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")"; done'

# --- the test host image ----------------------------------------------------------
R="$T/rootfs"
mkdir -p "$R/bin" "$R/sbin" "$R/usr/bin" "$R/usr/sbin" "$R/etc" "$R/tmp" "$R/root" \
	"$R/home/alice" "$R/home/bob" "$R/workspace" "$R/opt"
cp /bin/busybox "$R/bin/busybox"
for a in $(/bin/busybox --list-full); do
	case "$a" in bin/busybox|linuxrc) ;; *) ln -s /bin/busybox "$R/$a" ;; esac
done
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'sandbox:x:1000:1000:sandbox:/workspace:/bin/sh' \
	'alice:x:1001:1001:alice:/home/alice:/bin/sh' 'bob:x:1002:1002:bob:/home/bob:/bin/sh' > "$R/etc/passwd"
printf '%s\n' 'root:x:0:' 'sandbox:x:1000:' 'alice:x:1001:' 'bob:x:1002:' > "$R/etc/group"
chown 1001:1001 "$R/home/alice" && chown 1002:1002 "$R/home/bob"
chmod 1777 "$R/tmp"
# The build's full sbxtop, bundled with its libraries as the agent is.
sh "$TOP/scripts/agent-bundle.sh" "$BUILD/sbxtop-agent" "$R/opt/v2" "$BUILD/sbxtop-core" > "$T/bundle.log" 2>&1
rc=$?
is "the guest's sbxtop bundle is made" "$rc" 0
[ "$rc" -eq 0 ] || { diag "$(cat "$T/bundle.log")"; done_testing; exit 1; }
cp "$TOP/tests/tools/cgroup-v2-guest.sh" "$R/opt/v2/guest.sh"

t0=$(date +%s)
sbx image build v2host --from "$R" > /dev/null 2> "$T/err"; rc=$?
is "image build v2host --from the staged root: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || { diag "$(cat "$T/err")"; done_testing; exit 1; }
diag "image build took $(($(date +%s) - t0)) s"
IMG="$XDG_DATA_HOME/sbxtop/images/v2host"
check "the image holds sbxtop-launch in its agent bundle" sh -c \
	"debugfs -R 'ls -l /opt/sbxtop' '$IMG/rootfs.ext4' 2>/dev/null | grep -q sbxtop-launch"
# overlayfs is a module of the cloud kernel: the one of the image's package.
deb=$(json_get "$(cat "$IMG/image.json")" 'd["kernel_source"].split()[-1]')
mkdir -p "$T/kernel" && dpkg-deb -x "$SBXTOP_KERNEL_CACHE/$deb" "$T/kernel" 2> "$T/err"
OVL=$(find "$T/kernel/lib/modules" -name overlay.ko | head -n 1)
check "overlay.ko from the image's kernel package ($deb)" test -n "$OVL"

# --- the guest ----------------------------------------------------------------------
export SBXTOP_QEMU_BOOT_TIMEOUT=150
t0=$(date +%s)
vm=$(sbx create --backend qemu --image v2host --memory 768 --max-duration 900 2> "$T/err" < /dev/null); rc=$?
[ -n "$vm" ] && at_exit "$SBXTOP destroy $vm"
is "create the guest: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || { diag "$(cat "$T/err")"; done_testing; exit 1; }
diag "guest boot took $(($(date +%s) - t0)) s: $(cat "$T/err")"
sbx cp "$OVL" "$vm:/tmp/overlay.ko" 2> "$T/err"; rc=$?
is "overlay.ko copied into the guest" "$rc" 0

t0=$(date +%s)
sbx exec --root --timeout 480 -n "$vm" -- sh /opt/v2/guest.sh /tmp/overlay.ko > "$T/guest.out" 2>&1; rc=$?
diag "the guest's checks took $(($(date +%s) - t0)) s"
while IFS= read -r line; do
	case "$line" in
	"ok - "*) ok "guest: ${line#ok - }" ;;
	"not ok - "*) not_ok "guest: ${line#not ok - }" ;;
	"#"*) echo "$line" ;;
	*) diag "guest: $line" ;;
	esac
done < "$T/guest.out"
is "the guest script ran to its end" "$(tail -n 1 "$T/guest.out")" "ok - nothing of sbxtop is left in any cgroup"
ng=$(grep -c '^ok - \|^not ok - ' "$T/guest.out")
check "the guest ran all its checks ($ng)" test "$ng" -ge 90

sbx destroy "$vm"; rc=$?
is "destroy the guest: exit 0" "$rc" 0
sbx image rm v2host > /dev/null; rc=$?
is "image rm v2host: exit 0" "$rc" 0
left=""
for p in $(pgrep -x qemu-system-x86); do
	grep -q "$T" "/proc/$p/cmdline" 2>/dev/null && left="$left $p"
done
is "no QEMU of this test is left" "$left" ""
diag "cgroup-v2.sh took $(($(date +%s) - START)) s in all"
done_testing
