# sbxtop cp with a real ns sandbox, both directions: every file's sha256, modes,
# symlinks, empty directories and a file over 64 MiB come through byte for byte;
# a stream damaged on the way is caught by the sha256 and leaves nothing behind;
# a full host disk and an agent killed in the middle give a clear error and no
# partial copy presented as done.
. "$(dirname "$0")/../lib.sh"
sbx() { "$SBXTOP" "$@"; }

# manifest DIR: one line per entry: type, mode, sha256 or link target, path.
cat > "$T/manifest.py" <<'EOF'
import hashlib, os, stat, sys
root = sys.argv[1]
for d, dirs, files in os.walk(root):
    dirs.sort()
    for n in sorted(dirs + files):
        p = os.path.join(d, n)
        r = os.path.relpath(p, root)
        st = os.lstat(p)
        m = "%o" % stat.S_IMODE(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            print("l", m, os.readlink(p), r)
        elif stat.S_ISDIR(st.st_mode):
            print("d", m, "-", r)
        else:
            h = hashlib.sha256()
            with open(p, "rb") as f:
                for b in iter(lambda: f.read(1 << 20), b""):
                    h.update(b)
            print("f", m, h.hexdigest(), r)
EOF
manifest() { python3 "$T/manifest.py" "$1"; }
# Directory modes on the host depend on the umask where they are made; links'
# modes are always 777.  Compare files and links fully, directories by name.
strip_dirs() { sed 's/^d [0-7]* /d /'; }

id=$(sbx create --name copy --memory 0 --max-duration 600 2> "$T/err" < /dev/null); rc=$?
if [ "$rc" -ne 0 ]; then
	diag "create: $(cat "$T/err")"
	echo "ok 1 # SKIP no ns backend"
	exit 0
fi
at_exit "$SBXTOP destroy $id"
WS="$XDG_STATE_HOME/sbxtop/sandboxes/$id/workspace"

# The tree.
A="$T/tree"
mkdir -p "$A/src/deep/er/still" "$A/empty" "$A/nest/empty2/empty3" "$A/sp ace"
head -c $((70 << 20)) /dev/urandom > "$A/big.bin"		# over 64 MiB
for i in $(seq 40); do head -c $((i * 3000)) /dev/urandom > "$A/src/f$i"; done
echo deep > "$A/src/deep/er/still/file"
: > "$A/src/empty-file"
printf '#!/bin/sh\necho hi\n' > "$A/src/run.sh"; chmod 755 "$A/src/run.sh"
echo secret > "$A/src/private"; chmod 600 "$A/src/private"
echo ro > "$A/src/readonly"; chmod 444 "$A/src/readonly"
echo x > "$A/sp ace/é ü"
ln -s f1 "$A/src/rel-link"
ln -s ../big.bin "$A/src/up-link"
ln -s /etc/passwd "$A/abs-link"
ln -s nowhere "$A/dangling"
manifest "$A" | strip_dirs > "$T/want"
# Coming out, a link that points outside the copied tree is not made (docs:
# the trust boundaries): the rest is the same.
grep -v ' abs-link$' "$T/want" > "$T/want-out"

# ---- in ----
t0=$(date +%s%N)
sbx cp "$A" "$id:/workspace/in"; rc=$?
t1=$(date +%s%N)
is "cp a tree in: exit 0" "$rc" 0
diag "cp in of $(du -sm "$A" | cut -f1) MB: $(( (t1 - t0) / 1000000 )) ms"
# The sandbox's /workspace, seen from the host.
manifest "$WS/in" | strip_dirs > "$T/got-in"
is "inside, every entry has its type, mode, sha256 or target" "$(diff "$T/want" "$T/got-in")" ""
is "the empty directories are there" "$(sbx exec -n "$id" -- 'find /workspace/in/empty /workspace/in/nest -type d | sort | tr "\n" " "')" \
	"/workspace/in/empty /workspace/in/nest /workspace/in/nest/empty2 /workspace/in/nest/empty2/empty3 "
is "the big file inside is byte for byte" "$(sbx exec -n "$id" -- 'sha256sum /workspace/in/big.bin' | cut -c1-64)" \
	"$(sha256sum < "$A/big.bin" | cut -c1-64)"

like "to a local sandbox the archive is plain tar" "$(sbx logs "$id" | grep 'archive: received')" \
	"archive: received /workspace/in \(tar, 4[0-9] files"

# ---- out ----
sbx cp "$id:/workspace/in" "$T/out"; rc=$?
is "cp a tree out to a new directory: exit 0" "$rc" 0
manifest "$T/out" | strip_dirs > "$T/got-out"
is "out, every entry has its type, mode, sha256 or target" "$(diff "$T/want-out" "$T/got-out")" ""
check "the link to /etc/passwd is not made on the host" test ! -e "$T/out/abs-link" -a ! -L "$T/out/abs-link"
is "no staging directory is left beside it" "$(ls -A "$T" | grep -c sbxtop-)" 0
like "and from it too" "$(sbx logs "$id" | grep 'archive: sent')" "archive: sent /workspace/in \(tar, "
mkdir "$T/into"; echo old > "$T/into/keep"
sbx cp "$id:/workspace/in" "$T/into"; rc=$?
is "cp a tree out into an existing directory: exit 0" "$rc" 0
is "it lands under its own name" "$(manifest "$T/into/in" | strip_dirs | diff "$T/want-out" -)" ""
is "what was there stays, nothing else is added" "$(ls -A "$T/into" | tr '\n' ' ')" "in keep "
# Again into the same place: files replaced, directories merged.
echo changed > "$WS/in/src/f1"
mkdir -p "$T/into/in/src/local-only"
sbx cp "$id:/workspace/in" "$T/into"; rc=$?
is "cp over an earlier copy: exit 0" "$rc" 0
is "a changed file is replaced" "$(cat "$T/into/in/src/f1")" changed
check "a directory only on the host is kept" test -d "$T/into/in/src/local-only"
is "no staging directory is left inside" "$(find "$T/into" -name '*.sbxtop-*' | wc -l)" 0

# A link on the host where the sandbox has a directory: replaced, never followed.
mkdir -p "$T/victim" "$T/linked/in/src"
ln -s "$T/victim" "$T/linked/in/src/deep"
sbx exec -n "$id" -- 'ln -sfn /etc /workspace/in/etc-link' > /dev/null
sbx cp "$id:/workspace/in" "$T/linked"; rc=$?
is "cp over a host symlink standing for a directory: exit 0" "$rc" 0
is "nothing was written through the link" "$(ls -A "$T/victim")" ""
check "the link was replaced by the sandbox's directory" \
	test ! -L "$T/linked/in/src/deep" -a -f "$T/linked/in/src/deep/er/still/file"
check "a sandbox link to /etc does not come back" test ! -L "$T/linked/in/etc-link" -a ! -e "$T/linked/in/etc-link"
sbx exec -n "$id" -- 'rm /workspace/in/etc-link' > /dev/null

# One file over 64 MiB each way, streamed (files/read stops at 64 MiB).
sbx cp "$id:/workspace/in/big.bin" "$T/big-out.bin"; rc=$?
is "cp a 70 MiB file out: exit 0" "$rc" 0
check "the 70 MiB file out is byte for byte" cmp -s "$A/big.bin" "$T/big-out.bin"
sbx cp "$A/big.bin" "$id:/workspace/big2.bin"; rc=$?
is "cp a 70 MiB file in: exit 0" "$rc" 0
check "the 70 MiB file in is byte for byte" cmp -s "$A/big.bin" "$WS/big2.bin"
is "a single file keeps its mode" "$(sbx cp "$id:/workspace/in/src/run.sh" "$T/run.sh" && stat -c %a "$T/run.sh")" 755

# ---- a damaged stream ----
# The test hook flips one byte 1 MiB into the stream, after it was hashed
# (in) or before (out), as a bad link would; --standalone runs the core here,
# where the hook is set.
SBXTOP_TEST_COPY_CORRUPT=in sbx --standalone cp "$A" "$id:/workspace/damaged" 2> "$T/e"; rc=$?
is "a damaged stream in: exit 1" "$rc" 1
like "a damaged stream in: the sha256 says so" "$(cat "$T/e")" "sha256"
SBXTOP_TEST_COPY_CORRUPT=out sbx --standalone cp "$id:/workspace/in" "$T/damaged" 2> "$T/e"; rc=$?
is "a damaged stream out: exit 1" "$rc" 1
like "a damaged stream out: the sha256 says so" "$(cat "$T/e")" "arrived damaged \\(sha256 [0-9a-f]{64}, the agent sent [0-9a-f]{64}\\)"
like "and says nothing was written" "$(cat "$T/e")" "nothing was written to $T/damaged"
check "a damaged stream out leaves no destination" test ! -e "$T/damaged"
is "nor any staging" "$(ls -A "$T" | grep -c sbxtop-)" 0
SBXTOP_TEST_COPY_CORRUPT=out sbx --standalone cp "$id:/workspace/in" "$T/into" 2> "$T/e"; rc=$?
is "a damaged stream into a directory: exit 1" "$rc" 1
is "the earlier copy there is untouched" "$(cat "$T/into/in/src/f1")" changed
is "no staging left inside" "$(find "$T/into" -name '*.sbxtop-*' | wc -l)" 0
SBXTOP_TEST_COPY_CORRUPT=out sbx --standalone cp "$id:/workspace/in/big.bin" "$T/damaged.bin" 2> "$T/e"; rc=$?
is "a damaged file out: exit 1" "$rc" 1
check "a damaged file out leaves no file" test ! -e "$T/damaged.bin"

# ---- a full host disk ----
if [ "$(id -u)" -eq 0 ] && mkdir "$T/small" && mount -t tmpfs -o size=16m tmpfs "$T/small"; then
	at_exit "umount $T/small"
	sbx cp "$id:/workspace/in" "$T/small/full" 2> "$T/e"; rc=$?
	is "cp out onto a full disk: exit 1" "$rc" 1
	like "a full disk: the error says so" "$(cat "$T/e")" "No space left on device"
	is "a full disk: nothing is left there" "$(ls -A "$T/small" | tr '\n' ' ')" ""
	umount "$T/small"
else
	echo "ok $((_n = _n + 1)) # SKIP a full disk needs root to mount a small tmpfs"
fi

# ---- an agent killed in the middle ----
# The init (the agent) is killed once the copy is under way: out, as soon as
# the staging directory holds something; in, once the first entry has landed
# (waiting for src/ could let the rest of a small remainder land first).
pid=$(json_get "$(cat "$XDG_STATE_HOME/sbxtop/sandboxes/$id/backend.json")" 'd["pid"]')
cat > "$T/killer.py" <<'EOF'
import glob, os, sys, time
pattern, pid, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
open(ready, "w").close()
end, seen = time.time() + 30, None
while time.time() < end:
    for d in glob.glob(pattern):
        seen = seen or time.time()
        if (os.path.isdir(d) and len(os.listdir(d)) > 0) or time.time() - seen > 0.05:
            os.kill(pid, 9)
            print("killed")
            sys.exit(0)
    time.sleep(0.0002)
print("never started")
EOF
killer() {	# killer PATTERN PID: in the background, ready when it returns
	rm -f "$T/ready"
	python3 "$T/killer.py" "$1" "$2" "$T/ready" > "$T/k" &
	kp=$!
	while [ ! -e "$T/ready" ]; do sleep 0.01; done
}
killer "$T/.killed.sbxtop-*" "$pid"
sbx cp "$id:/workspace/in" "$T/killed" 2> "$T/e"; rc=$?
wait "$kp"
is "the agent was killed mid-copy" "$(cat "$T/k")" killed
is "a killed agent: exit 1" "$rc" 1
like "a killed agent: the error names the sandbox and the cause" "$(cat "$T/e")" \
	"sandbox $id|not answering|connection"
check "a killed agent: no destination presented as a copy" test ! -e "$T/killed"
is "a killed agent: no staging left" "$(ls -A "$T" | grep -c sbxtop-)" 0

id2=$(sbx create --name copy2 --memory 0 --max-duration 600 < /dev/null)
at_exit "$SBXTOP destroy $id2"
pid=$(json_get "$(cat "$XDG_STATE_HOME/sbxtop/sandboxes/$id2/backend.json")" 'd["pid"]')
killer "$XDG_STATE_HOME/sbxtop/sandboxes/$id2/workspace/in" "$pid"
sbx cp "$A" "$id2:/workspace/in" 2> "$T/e"; rc=$?
wait "$kp"
is "the agent was killed mid-upload" "$(cat "$T/k")" killed
is "a killed agent, in: exit 1" "$rc" 1
like "a killed agent, in: the error says so" "$(cat "$T/e")" "sandbox $id2"
done_testing
