# The qemu backend end to end, under TCG here (this host's KVM does not work):
# the accelerator verdict from a real boot (kept per host boot, decided again
# for another, a hung KVM boot killed and TCG used), image build/ls/rm and bad input, then real
# microVMs: the guest's own kernel, the secret out of reach of guest commands,
# network none (the guest cannot reach a server on the host's 127.0.0.1)
# and egress (through passt: nor can it, while the host's own address
# answers), a PTY, snapshots (memory and disk as they were, a
# new id, port and secret, the source's old secret refused everywhere, a
# forward to busybox httpd started before the snapshot, a broken snapshot
# failing cleanly), a full disk, the host's deadline watchdog, and destroy
# leaving no QEMU process and no directory.  Exec, streaming, cp, suspend and
# resume, a forward and a core server restart are the shared checks of
# tests/integration/backends.sh.  Every QEMU started is killed on exit.
. "$(dirname "$0")/../lib.sh"

skip() { _n=$((_n + 1)); echo "ok $_n - # SKIP $1"; }
sbx() { "$SBXTOP" "$@"; }
export HOME="$T/home"
mkdir -p "$HOME"
# The kernel package is fetched once (apt-get download) and kept across runs.
SDIR="$XDG_STATE_HOME/sbxtop/sandboxes"

if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
	skip "qemu-system-x86_64 is not installed (scripts/deps.sh)"
	exit 0
fi
# Whatever happens, no QEMU of ours outlives the test.
at_exit 'for f in "$SDIR"/*/qemu.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")"; done'

pid_alive() {	# a pid that exists and is not a zombie
	[ -r "/proc/$1/stat" ] || return 1
	_st=$(sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f1)
	[ "$_st" != Z ] && [ "$_st" != X ]
}

# --- the accelerator verdict (before any image) -----------------------------------
# KVM or TCG is decided by a real boot of the sandboxes' kernel under KVM, kept
# with the host's boot id.  Before there is an image to boot, nothing is
# decided (unless the raw KVM ioctls already fail, which needs no kernel).
probe="$XDG_CACHE_HOME/sbxtop/kvm-probe"
BOOTID=$(cat /proc/sys/kernel/random/boot_id)
check "the test starts with no verdict" test ! -e "$probe"
sbx doctor --backend qemu > "$T/doctor" 2>&1
like "doctor names the qemu binary" "$(cat "$T/doctor")" 'ok   qemu: QEMU emulator version'
RAW=0
if grep -q 'KVM not tried yet' "$T/doctor"; then
	like "without an image, doctor says KVM is not decided yet and how to decide" \
		"$(grep acceleration "$T/doctor")" 'TCG: KVM not tried yet: .*no image to boot.*fix: run `sbxtop image build`'
	check "and keeps no verdict" test ! -e "$probe"
else
	RAW=1
	like "the raw KVM check failed: a verdict that needs no boot" "$(tr '\n' ' ' < "$probe" 2>/dev/null)" \
		'method=boot result=tcg reason=(no /dev/kvm|/dev/kvm is not usable|KVM hangs here: /dev/kvm exists)[^=]* kernel= '
fi
like "doctor reports no default image yet" "$(grep 'qemu images' "$T/doctor")" 'no default image.*sbxtop image build'

# --- images ----------------------------------------------------------------------
sbx create --backend qemu < /dev/null > "$T/out" 2> "$T/err"; rc=$?
is "create without an image: exit 2" "$rc" 2
like "create without an image says how to build one" "$(cat "$T/err")" "no image 'default'.*sbxtop image build"
is "create without an image leaves no sandbox dir" "$(ls "$SDIR" 2>/dev/null)" ""

start=$(date +%s)
sbx image build > "$T/out" 2> "$T/err"; rc=$?
took=$(($(date +%s) - start))
is "image build: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || { diag "$(cat "$T/err")"; done_testing; exit 1; }
diag "image build took ${took}s"
is "image build prints the name" "$(cat "$T/out")" default
IMG="$XDG_DATA_HOME/sbxtop/images/default"
for f in vmlinuz initrd rootfs.ext4 image.json; do
	check "the image has $f" test -s "$IMG/$f"
done
js=$(cat "$IMG/image.json")
KVER=$(json_get "$js" 'd["kernel_version"]')
like "image.json records the kernel" "$KVER" '^[0-9]+\.[0-9]+.*-cloud-amd64$'
like "image.json records the initrd's modules in order" "$(json_get "$js" '",".join(d["initrd_modules"])')" \
	'virtio_ring.*virtio_mmio.*virtio_blk.*virtio_net'
is "image.json records the rootfs source" "$(json_get "$js" 'd["rootfs_from"]')" busybox
check "rootfs.ext4 is an ext4 filesystem" sh -c "file -b '$IMG/rootfs.ext4' 2>/dev/null | grep -q ext4 || od -An -tx1 -j1080 -N2 '$IMG/rootfs.ext4' | grep -q '53 ef'"
like "the initrd is a newc cpio archive" "$(head -c 6 "$IMG/initrd")" '^070701$'
check "the rootfs holds the agent bundle" sh -c "debugfs -R 'ls -l /opt/sbxtop' '$IMG/rootfs.ext4' 2>/dev/null | grep -q sbxtop-agent"
check "the rootfs holds the guest init" sh -c "debugfs -R 'stat /sbin/sbxtop-init' '$IMG/rootfs.ext4' 2>/dev/null | grep -q 'Mode: *0755'"
out=$(sbx image ls)
like "image ls lists it with its kernel" "$out" "default +$KVER +busybox"
is "image ls --json" "$(json_get "$(sbx image ls --json)" '[i["name"] for i in d]')" "['default']"

sbx image build tiny --size 4 2> "$T/err"; rc=$?
is "an image too small for its files: exit 1" "$rc" 1
like "it says to give a larger --size" "$(cat "$T/err")" 'mke2fs failed.*larger --size'
check "and leaves nothing behind" test ! -e "$XDG_DATA_HOME/sbxtop/images/tiny"
# A small image: the disk-full checks below fill it.
sbx image build spare --size 160 > /dev/null 2>&1; rc=$?
is "a second, small image: exit 0" "$rc" 0
is "image ls lists both" "$(json_get "$(sbx image ls --json)" 'sorted(i["name"] for i in d)')" "['default', 'spare']"
sbx image build bad --kernel /nonexistent 2> "$T/err"; rc=$?
is "image build with a missing kernel fails" "$rc" 2
like "it names the problem" "$(cat "$T/err")" '--kernel /nonexistent'
echo notakernel > "$T/fake.deb"
sbx image build bad --kernel "$T/fake.deb" 2> "$T/err"; rc=$?
is "image build with a broken kernel package fails" "$rc" 1
like "it says dpkg-deb refused it" "$(cat "$T/err")" 'dpkg-deb failed'
is "failed builds leave nothing behind" "$(ls -A "$XDG_DATA_HOME/sbxtop/images" | tr "\n" " ")" "default spare "
sbx image build 'a/b' 2> "$T/err"; rc=$?
is "image build with a bad name: exit 2" "$rc" 2
sbx image build x --size 0 2> /dev/null; rc=$?
is "image build --size 0: exit 2" "$rc" 2

# --- a microVM ------------------------------------------------------------------------
# Shorter than the default so a hung boot fails this test in reasonable time.
export SBXTOP_QEMU_BOOT_TIMEOUT=150
start=$(date +%s)
id=$(sbx create --backend qemu --network none --memory 256 --max-duration 900 2> "$T/err" < /dev/null); rc=$?
took=$(($(date +%s) - start))
[ -n "$id" ] && at_exit "$SBXTOP destroy $id"
is "create --backend qemu: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || { diag "$(cat "$T/err")"; done_testing; exit 1; }
diag "create took ${took}s: $(cat "$T/err")"
like "create says how long the boot took" "$(cat "$T/err")" "booted in [0-9.]+ s under (KVM|TCG)"
# The first create found no verdict: it decided by booting the image's
# kernel under KVM, and kept the verdict for this host boot.  Where the raw
# check already failed (no /dev/kvm), it kept that verdict and booted nothing.
if [ "$RAW" = 1 ]; then
	like "create kept the raw check's verdict for this host boot" "$(tr '\n' ' ' < "$probe")" \
		"^boot_id=$BOOTID method=boot result=tcg reason=.* kernel= "
else
	like "create kept the verdict of a real boot for this host boot" "$(tr '\n' ' ' < "$probe")" \
		"^boot_id=$BOOTID method=boot result=(kvm|tcg) reason=.* kernel=$XDG_DATA_HOME/sbxtop/images/default/vmlinuz "
fi
VERDICT=$(sed -n 's/^result=//p' "$probe")
REASON=$(sed -n 's/^reason=//p' "$probe")
if [ "$VERDICT" = tcg ]; then
	TCG=1
	like "create says TCG and the speed difference" "$(cat "$T/err")" 'TCG software emulation: guests run about 10-50x slower'
	check "create says why: the verdict's reason ($REASON)" grep -qF "($REASON)" "$T/err"
	if [ -e /dev/kvm ]; then
		like "with /dev/kvm present, the verdict says what the KVM boot did" "$REASON" \
			'^(KVM hangs here|QEMU cannot run a guest under KVM here|/dev/kvm is not usable)'
	fi
else
	TCG=0
	like "create says KVM" "$(cat "$T/err")" 'under KVM'
fi
is "the guest booted under the verdict's accelerator" "$(json_get "$(cat "$SDIR/$id/backend.json")" 'd["accel"]')" "$VERDICT"

# The verdict is reused while the host runs, and decided again for another
# host boot (or a cache from another machine) or a boot-less older verdict.
before=$(stat -c %Y "$probe")
sleep 1.1
sbx doctor --backend qemu > "$T/doctor2" 2>&1
is "doctor reuses the verdict: the file is not rewritten" "$(stat -c %Y "$probe")" "$before"
like "doctor says it is the kept verdict of this host boot" "$(grep acceleration "$T/doctor2")" \
	"(KVM works|TCG: .*) \(the verdict of a real boot, kept for host boot $BOOTID\)"
[ "$TCG" = 1 ] && like "doctor warns of TCG and its speed" "$(grep acceleration "$T/doctor2")" \
	'^warn qemu acceleration: TCG: .*TCG software emulation: guests run about 10-50x slower'
# Decided again: by a real boot, or by the raw check where that already fails.
if [ "$RAW" = 1 ]; then
	AGAIN="TCG: $(printf '%s' "$REASON" | sed 's/[][\\.*^$(){}+?|]/\\&/g') \\(host boot $BOOTID\\)"
else
	AGAIN='\(a real boot just now, [0-9]+ ms\)'
fi
sed -e 's/^boot_id=.*/boot_id=00000000-0000-4000-8000-000000000000/' \
	-e "s/^result=.*/result=$([ "$TCG" = 1 ] && echo kvm || echo tcg)/" "$probe" > "$T/probe.other"
cp "$T/probe.other" "$probe"
sbx doctor --backend qemu > "$T/doctor3" 2>&1
like "a verdict kept for another host boot is not used: doctor decides again" "$(grep acceleration "$T/doctor3")" \
	"$AGAIN"
is "the new verdict is kept for this boot" "$(sed -n 's/^boot_id=//p' "$probe")" "$BOOTID"
is "and it is this host's verdict again" "$(sed -n 's/^result=//p' "$probe")" "$VERDICT"
printf 'boot_id=%s\nresult=kvm\nreason=\n' "$BOOTID" > "$probe"
sbx doctor --backend qemu > "$T/doctor4" 2>&1
like "a verdict without a real boot (the older probe's) is not trusted" "$(grep acceleration "$T/doctor4")" \
	"$AGAIN"
is "and is replaced by a real boot's" "$(sed -n 's/^method=//p;s/^result=//p' "$probe" | tr '\n' ' ')" "boot $VERDICT "

# The nested hang itself, where QEMU refuses -cpu host outright: the same
# kernel under KVM with a CPU model KVM accepts here runs its real-mode setup
# and then never prints a byte of the kernel's.  A boot that shows nothing
# within a few seconds is killed and the verdict is "KVM hangs here".
HANG=0
case "$REASON" in "QEMU cannot run a guest under KVM here: "*MSR*) HANG=1 ;; esac
if [ "$HANG" = 1 ]; then
	mkdir -p "$T/hang"
	cat > "$T/hang/qemu-system-x86_64" <<'EOF2'
#!/bin/sh
for a; do shift; [ "$a" = host ] && a=qemu64; set -- "$@" "$a"; done
exec /usr/bin/qemu-system-x86_64 "$@"
EOF2
	chmod +x "$T/hang/qemu-system-x86_64"
	rm -f "$probe"
	t0=$(date +%s)
	# Three at once (a burst of first creates): one real boot, the others
	# wait for its verdict.
	for i in 5 6 7; do
		PATH="$T/hang:$PATH" sbx --standalone doctor --backend qemu > "$T/doctor$i" 2>&1 &
	done
	wait
	took=$(($(date +%s) - t0))
	is "three doctors at once: one real boot, two kept verdicts" \
		"$(cat "$T/doctor5" "$T/doctor6" "$T/doctor7" | grep acceleration | grep -c 'the verdict of a real boot, kept')" 2
	like "a KVM guest that prints nothing: doctor says KVM hangs here" "$(grep acceleration "$T/doctor5")" \
		'TCG: KVM hangs here: a guest kernel under KVM printed nothing on its console within 6 s'
	check "the hung boot was killed within a few seconds (doctor took ${took}s)" test "$took" -le 15
	is "the verdict is kept" "$(sed -n 's/^result=//p' "$probe")" tcg
	check "no QEMU of the probe is left" sh -c "! pgrep -f '$XDG_CACHE_HOME/sbxtop/[k]vm-probe' | grep -q ."
	is "the probe's console files are removed" "$(ls "$XDG_CACHE_HOME/sbxtop" | grep -c 'kvm-probe\.[0-9]')" 0
	rm -f "$probe"
fi
QPID=$(cat "$SDIR/$id/qemu.pid")
check "QEMU runs (pid $QPID)" pid_alive "$QPID"
check "QEMU is detached in a session of its own" test "$(ps -o sid= -p "$QPID" | tr -d ' ')" != "$(ps -o sid= -p $$ | tr -d ' ')"
guest=$(sbx exec -n "$id" -- uname -r); rc=$?
is "exec uname -r: exit 0" "$rc" 0
is "the guest runs the image's kernel" "$guest" "$KVER"
check "the guest kernel is not the host's ($(uname -r))" test "$guest" != "$(uname -r)"
is "the guest runs commands as the sandbox user" "$(sbx exec -n "$id" -- id -un)" sandbox
# An upload of the user's is the user's, through a link the user planted too.
sbx exec -n "$id" -- 'ln -s /etc /workspace/etcdir' > /dev/null 2>&1
mkdir -p "$T/up/d" && echo x > "$T/up/d/f"
sbx cp "$T/up/d" "$id:/workspace/etcdir/d" > /dev/null 2> "$T/cp.err"; rc=$?
check "cp through the user's link to /etc is refused (exit $rc)" test "$rc" -ne 0
is "  and nothing arrived in /etc" "$(sbx exec -n --root "$id" -- 'test -e /etc/d && echo MADE || echo none')" none
sbx exec -n "$id" -- 'cat /run/sbxtop/secret' > /dev/null 2>&1; rc=$?
check "guest commands cannot read the secret file" test "$rc" -ne 0
secret=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandboxes"][0]["agent_secret"])' \
	"$XDG_STATE_HOME/sbxtop/sandboxes.json" 2>/dev/null || true)
cmdline=$(sbx exec -n "$id" -- cat /proc/cmdline)
check "the secret is not on the kernel command line" test -n "$secret" -a -n "$cmdline" -a \
	"${cmdline#*$secret}" = "$cmdline"
sbx exec -n "$id" -- 'for d in /dev/vd?; do head -c 64 $d; done' > /dev/null 2>&1; rc=$?
check "guest commands cannot read the seed disk" test "$rc" -ne 0

# Exec, streaming, cp both ways, suspend/resume and a forward: the shared
# checks of tests/integration/backends.sh, on ns and on qemu.
like "logs shows the guest console" "$(sbx logs "$id")" 'sbxtop-init: starting the agent'

# Network none: a server on the host's loopback, which user-mode networking
# would otherwise reach at 10.0.2.2, must not be reachable.
python3 - "$T/port" "$T/conns" <<'EOF' &
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(5)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(120)
n = 0
try:
    while True:
        c, _ = s.accept(); n += 1; c.sendall(b"reached\n"); c.close()
        open(sys.argv[2], "w").write(str(n))
except Exception:
    pass
EOF
SRV=$!
at_exit "kill $SRV"
for i in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
PORT=$(cat "$T/port")
out=$(sbx exec -n "$id" -- "nc -w 3 10.0.2.2 $PORT </dev/null; echo rc=\$?" 2>&1)
is "network none: the host's 127.0.0.1 server saw no connection" "$(cat "$T/conns" 2>/dev/null || echo 0)" 0
check "network none: the guest got nothing from it" test "${out#*reached}" = "$out"
out=$(sbx exec -n "$id" -- 'nc -w 3 1.1.1.1 80 </dev/null; echo rc=$?' 2>&1)
like "network none: no route out either" "$out" 'rc=[1-9]'

# --- a PTY, httpd for the snapshot's forward --------------------------------------------
EP=$(json_get "$(sbx ls --json)" 'd[0]["agent_endpoint"]')
sec_of() {	# the agent secret the registry holds for a sandbox
	python3 -c 'import json,sys; print([s for s in json.load(open(sys.argv[1]))["sandboxes"] if s["id"] == sys.argv[2]][0]["agent_secret"])' \
		"$XDG_STATE_HOME/sbxtop/sandboxes.json" "$1"
}
port_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$SDIR/$1/backend.json"; }
# code PORT SECRET: the HTTP status the agent behind PORT answers with SECRET.
code() { curl -s -o /dev/null -m 20 -w '%{http_code}' -H "X-Sandbox-Secret: $2" "http://127.0.0.1:$1/v1/execs"; }
r=$(timeout 60 python3 "$TOP/tests/tools/upgrade-client.py" --sock "$EP" --secret "$(sec_of "$id")" \
	--script '[["send", "echo pty-$((6*7))\n"], ["expect", "pty-(42)"],
	["send", "tty\n"], ["expect", "(/dev/pts/[0-9]+)"], ["send", "exit 4\n"], ["exit", 20]]' pty '/v1/pty' 2>&1)
is "PTY in the guest: typed input runs" "$(json_get "$r" 'd["matches"][0]')" 42
like "PTY in the guest: tty is a pts" "$(json_get "$r" 'd["matches"][1]')" '^/dev/pts/[0-9]+$'
is "PTY in the guest: the exit code" "$(json_get "$r" 'd["exit"]["exit_code"]')" 4

sbx exec -n "$id" -- 'mkdir -p www && echo "hello from the guest" > www/index.html'
sbx exec -n "$id" --background -- 'exec httpd -f -p 127.0.0.1:8000 -h /workspace/www' > /dev/null
# fwd NAME ID PORT: `sbxtop forward ID PORT --foreground` in the background; sets URL.
fwd() {
	"$SBXTOP" forward "$2" "$3" --foreground > "$T/$1.out" 2> "$T/$1.err" &
	at_exit "kill $!"
	URL=""
	for _i in $(seq 100); do URL=$(head -1 "$T/$1.out"); [ -n "$URL" ] && break; sleep 0.05; done
}
# For the full disk below.
head -c 200000 /dev/urandom > "$T/big.bin"
mkdir -p "$T/tree/a/b" && head -c 70000 /dev/urandom > "$T/tree/a/b/bin" && echo top > "$T/tree/top" && : > "$T/tree/a/empty"

# --- snapshots -------------------------------------------------------------------------
sbx exec -n "$id" -- 'echo on-disk > snapfile; echo in-memory > /tmp/memfile'
S1=$(sec_of "$id"); P1=$(port_of "$id")
sbx snapshot "$id" snap1 > "$T/out" 2> "$T/err"; rc=$?
is "snapshot: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || diag "$(cat "$T/err")"
SNAPS="$XDG_DATA_HOME/sbxtop/snapshots"
is "snapshot ls --json: the snapshot and its source" \
	"$(json_get "$(sbx snapshot ls --json)" '[(s["name"], s["source"]) for s in d]')" "[('snap1', '$id')]"
like "snapshot ls" "$(sbx snapshot ls)" "snap1 +$id +default +256 "
S1b=$(sec_of "$id")
check "the source got a new secret" test -n "$S1b" -a "$S1b" != "$S1"
is "the source refuses its old secret" "$(code "$P1" "$S1")" 401
is "the source takes its new one" "$(code "$P1" "$S1b")" 200
is "the source runs on" "$(sbx exec -n "$id" -- cat snapfile)" on-disk
sbx snapshot "$id" snap1 2> "$T/err"; rc=$?
is "a snapshot name taken: exit 2" "$rc" 2
like "it says so" "$(cat "$T/err")" "already a snapshot 'snap1'"
sbx snapshot "$id" 'a/b' 2> "$T/err"; rc=$?
is "a bad snapshot name: exit 2" "$rc" 2
sbx snapshot nope snap2 2> "$T/err"; rc=$?
is "a snapshot of an unknown sandbox: exit 2" "$rc" 2
sbx create --backend qemu --from-snapshot nope < /dev/null 2> "$T/err"; rc=$?
is "create from an unknown snapshot: exit 2" "$rc" 2
like "it says how to list them" "$(cat "$T/err")" "no snapshot 'nope'.*sbxtop snapshot ls"

t0=$(date +%s%N)
id3=$(sbx create --backend qemu --from-snapshot snap1 --max-duration 900 2> "$T/err" < /dev/null); rc=$?
took=$(( ($(date +%s%N) - t0) / 1000000 ))
[ -n "$id3" ] && at_exit "$SBXTOP destroy $id3"
is "create --from-snapshot: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || { diag "$(cat "$T/err")"; done_testing; exit 1; }
diag "restore took ${took} ms: $(cat "$T/err")"
like "create says it restored, and how fast" "$(cat "$T/err")" "restored in [0-9.]+ s under (KVM|TCG)"
check "the restored sandbox has its own id" test "$id3" != "$id"
P3=$(port_of "$id3"); S3=$(sec_of "$id3")
check "and its own host port ($P3, not $P1)" test "$P3" != "$P1"
is "the disk as it was at the snapshot" "$(sbx exec -n "$id3" -- cat snapfile)" on-disk
is "memory as it was: a tmpfs file" "$(sbx exec -n "$id3" -- cat /tmp/memfile)" in-memory
is "the restored guest is named after its own id" "$(sbx exec -n "$id3" -- hostname)" "$id3"
gt=$(sbx exec -n "$id3" -- date +%s)
check "the restored guest's clock is set to now (guest $gt, host $(date +%s))" \
	test "${gt:-0}" -ge $(($(date +%s) - 30)) -a "${gt:-0}" -le $(($(date +%s) + 30))
is "the restored agent refuses the source's secret at the snapshot" "$(code "$P3" "$S1")" 401
is "and the source's new secret" "$(code "$P3" "$S1b")" 401
is "and takes its own" "$(code "$P3" "$S3")" 200
is "the source refuses the restored sandbox's secret" "$(code "$P1" "$S3")" 401
fwd f3 "$id3" 8000
out=""
for i in $(seq 30); do out=$(curl -s -m 10 "$URL/index.html") && [ -n "$out" ] && break; sleep 0.5; done
is "httpd started before the snapshot answers in the restored VM" "$out" "hello from the guest"
sbx exec -n "$id3" -- 'echo mine > only3'
sbx exec -n "$id" -- 'test ! -e only3'; rc=$?
is "the two disks are apart: the source does not see the restored VM's file" "$rc" 0
is "ls: both running" "$(json_get "$(sbx ls --json)" 'sorted(s["state"] for s in d)')" "['running', 'running']"

# A broken snapshot fails clearly and leaves nothing.
cp -r "$SNAPS/snap1" "$SNAPS/broken" && truncate -s 1M "$SNAPS/broken/memory"
# QEMUs of this test (other tests may run their own meanwhile).
our_qemus() { for p in $(pgrep -x qemu-system-x86); do pid_alive "$p" && grep -q "$T" "/proc/$p/cmdline" 2>/dev/null && echo "$p"; done | wc -l; }
nq=$(our_qemus)
sbx create --backend qemu --from-snapshot broken < /dev/null > /dev/null 2> "$T/err"; rc=$?
is "create from a truncated snapshot: exit 1" "$rc" 1
like "it says QEMU could not load it" "$(cat "$T/err")" 'could not load the snapshot|did not load'
is "it leaves no sandbox directory" "$(ls "$SDIR" | sort | tr '\n' ' ')" "$(printf '%s\n' "$id" "$id3" | sort | tr '\n' ' ')"
is "and no QEMU" "$(our_qemus)" "$nq"
# What a killed `sbxtop snapshot` leaves (.tmp-NAME-PID) goes with gc once its
# process is gone, not before.
dead=$(sh -c 'echo $$')
mkdir "$SNAPS/.tmp-x-$dead" "$SNAPS/.tmp-y-$$"
sbx gc > /dev/null 2>&1
check "gc removes a dead snapshot's temporary directory" test ! -e "$SNAPS/.tmp-x-$dead"
check "and leaves a live one's" test -d "$SNAPS/.tmp-y-$$"
rmdir "$SNAPS/.tmp-y-$$"
sbx snapshot rm broken snap1; rc=$?
is "snapshot rm: exit 0" "$rc" 0
is "snapshot rm leaves nothing, no temporary files either" "$(ls -A "$SNAPS")" ""
is "a restored sandbox outlives its snapshot" "$(sbx exec -n "$id3" -- cat snapfile)" on-disk
Q3=$(cat "$SDIR/$id3/qemu.pid")
sbx destroy "$id3"; rc=$?
is "destroy the restored sandbox: exit 0" "$rc" 0
check "its QEMU is gone" sh -c "! { [ -r /proc/$Q3/stat ] && ! sed 's/.*) //' /proc/$Q3/stat | grep -q '^Z'; }"
check "its directory is gone" test ! -e "$SDIR/$id3"

# Destroy leaves no QEMU and no directory.
sbx destroy "$id"; rc=$?
is "destroy: exit 0" "$rc" 0
check "destroy: QEMU is gone" sh -c "! { [ -r /proc/$QPID/stat ] && ! sed 's/.*) //' /proc/$QPID/stat | grep -q '^Z'; }"
check "destroy: the directory is gone" test ! -e "$SDIR/$id"
is "destroy: ls is empty" "$(sbx ls --json)" "[]"
check "no sbxtop-watchdog of this test is left" sh -c "! pgrep -x sbxtop-watchdog | while read -r p; do grep -q '$T' /proc/\$p/environ 2>/dev/null && echo \$p; done | grep -q ."

# --- egress, a full disk, and the host's deadline watchdog ----------------------------------
# With no verdict kept and KVM hanging (above), create decides, kills the hung
# boot and goes on under TCG, saying so.
if [ "$HANG" = 1 ]; then
	rm -f "$probe"
	id2=$(PATH="$T/hang:$PATH" sbx --standalone create --backend qemu --image spare --network egress \
		--memory 256 --max-duration 55 2> "$T/err" < /dev/null); rc=$?
else
	id2=$(sbx create --backend qemu --image spare --network egress --memory 256 --max-duration 55 2> "$T/err" < /dev/null); rc=$?
fi
[ -n "$id2" ] && at_exit "$SBXTOP destroy $id2"
is "create --network egress: exit 0" "$rc" 0
if [ "$HANG" = 1 ]; then
	like "where KVM hangs, create goes on under TCG and says why" "$(cat "$T/err")" \
		'TCG software emulation: .*\(KVM hangs here: a guest kernel under KVM printed nothing.*booted in [0-9.]+ s under TCG'
	is "and keeps that verdict" "$(sed -n 's/^reason=KVM hangs here.*/hangs/p' "$probe")" hangs
fi
if [ "$rc" -eq 0 ]; then
	QPID2=$(cat "$SDIR/$id2/qemu.pid")
	# A full disk (the 160 MiB image): clear errors from exec and from cp.
	out=$(sbx exec -n "$id2" --root -- 'dd if=/dev/zero of=/fill bs=1M 2>&1; echo rc=$?')
	like "a full disk: exec says so" "$(echo $out)" 'No space left on device.*rc=1'
	sbx cp "$T/big.bin" "$id2:big.bin" 2> "$T/err"; rc=$?
	is "a full disk: cp in fails (exit 1)" "$rc" 1
	like "and says why" "$(cat "$T/err")" "cannot extract 'big.bin': No space left on device"
	sbx cp "$T/tree" "$id2:tree" 2> "$T/err"; rc=$?
	like "a directory cp in says why too (exit $rc)" "$(cat "$T/err")" 'No space left on device'
	out=$(sbx exec -n "$id2" -- 'rm -f /fill; echo ok' 2>&1)
	want="rm: can't remove '/fill': Permission denied
ok"
	is "the sandbox still answers" "$out" "$want"
	[ "$out" = "$want" ] || diag "$(sbx exec -n "$id2" -- 'id; ls -ld / /fill' 2>&1)"
	# Egress goes through passt with its gateway mapping off: a server on
	# the host's 127.0.0.1 stays out of reach at 10.0.2.2, while one on the
	# host's own address is reached (so the first check can fail).
	serve_once() {	# serve_once ADDR PORTFILE CONNSFILE: count connections, 60 s
		python3 - "$@" <<'PY' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 0)); s.listen(5)
open(sys.argv[2], "w").write(str(s.getsockname()[1]))
open(sys.argv[3], "w").write("0")
s.settimeout(60)
n = 0
try:
    while True:
        c, _ = s.accept(); n += 1; c.sendall(b"reached\n"); c.close()
        open(sys.argv[3], "w").write(str(n))
except Exception:
    pass
PY
		at_exit "kill $!"
		for i in $(seq 50); do [ -s "$2" ] && break; sleep 0.1; done
	}
	serve_once 127.0.0.1 "$T/lport" "$T/lconns"
	HIP=$(hostname -I | awk '{print $1}')
	serve_once "$HIP" "$T/hport" "$T/hconns"
	sbx exec -n "$id2" -- "nc -w 2 10.0.2.2 $(cat "$T/lport") </dev/null; echo rc=\$?" > "$T/egress" 2>&1
	is "egress: the host's 127.0.0.1 server saw no connection through 10.0.2.2" "$(cat "$T/lconns")" 0
	check "egress: the guest got nothing from it" test -z "$(grep reached "$T/egress")"
	sbx exec -n "$id2" -- "nc -w 3 $HIP $(cat "$T/hport") </dev/null | head -1" > "$T/egress2" 2>&1
	is "egress: a server on the host's own address ($HIP) is reached" "$(head -1 "$T/egress2")" reached
	check "egress: passt carries it" test -S "$SDIR/$id2/passt.sock" -o -s "$SDIR/$id2/passt.pid"
	# The deadline: created_at + 55 s; QEMU is killed by the host even though
	# no sbxtop process is alive meanwhile.
	created=$(json_get "$(sbx ls --json)" 'd[0]["created_at"]//1000')
	wait_s=$((created + 55 + 8 - $(date +%s)))
	[ "$wait_s" -gt 0 ] && sleep "$wait_s"
	check "at the deadline the host killed QEMU" sh -c "! { [ -r /proc/$QPID2/stat ] && ! sed 's/.*) //' /proc/$QPID2/stat | grep -q '^Z'; }"
	like "status says terminated at the deadline" "$(sbx status "$id2")" 'terminated.*deadline'
	sbx destroy "$id2"; rc=$?
	is "destroy of a VM that already stopped: exit 0" "$rc" 0
	check "and its directory is gone" test ! -e "$SDIR/$id2"
fi
sbx image rm spare; rc=$?
is "image rm: exit 0" "$rc" 0
check "image rm removes the directory" test ! -e "$XDG_DATA_HOME/sbxtop/images/spare"
sbx image rm spare 2> "$T/err"; rc=$?
is "image rm of an unknown image: exit 2" "$rc" 2
left=""
for p in $(pgrep -x qemu-system-x86); do
	pid_alive "$p" && grep -q "$T" "/proc/$p/cmdline" 2>/dev/null && left="$left $p"
done
is "no QEMU of this test is left" "$left" ""
done_testing
