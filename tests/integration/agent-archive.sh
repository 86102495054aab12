# The archive routes: tar and tar.gz upload and download round trips, excludes,
# sha256 checks (header and trailer), one-file downloads, hostile archives,
# garbage bodies, against a fake sandbox root ($T/root).
. "$(dirname "$0")/../lib.sh"
R="$T/root"
W="$R/workspace"
mkdir -p "$W" "$T/outside" "$R$T/outside" "$R/etc"
chmod 755 "$R/etc"
agent_start --root "$R" --workspace /workspace
field() { json_get "$1" "$2" 2>/dev/null; }
sha() { sha256sum < "$1" | cut -c1-64; }

# A tree with binary files, an empty file, symlinks, modes, nested dirs and
# directories the default excludes drop.
S="$T/src"
mkdir -p "$S/a/b/c" "$S/.git" "$S/sub/node_modules/m" "$S/sub/target" "$S/keep"
head -c 200000 /dev/urandom > "$S/bin"
head -c $((5 << 20)) /dev/urandom > "$S/a/b/big"
: > "$S/empty"
echo deep > "$S/a/b/c/file"
ln -s a/b/c/file "$S/lnk"
ln -s /etc/passwd "$S/abs"
printf '#!/bin/sh\n' > "$S/run.sh"; chmod 755 "$S/run.sh"
echo s > "$S/suid"; chmod 4755 "$S/suid"
echo g > "$S/.git/config"
echo m > "$S/sub/node_modules/m/index.js"
echo t > "$S/sub/target/out"
echo k > "$S/keep/dist"			# a file named like an excluded dir: excluded too
tar czf "$T/src.tgz" -C "$S" .

# ---- upload ----
b=$(api POST '/v1/archive/upload?path=up/here' --data-binary @"$T/src.tgz" \
	-H 'Content-Type: application/gzip' -H "X-Content-Sha256: $(sha "$T/src.tgz")")
is "upload: 200" "$(status)" 200
is "upload reports the sha256 of the body" "$(field "$b" 'd["sha256"]')" "$(sha "$T/src.tgz")"
is "upload counts" "$(field "$b" 'd["path"], d["files"], d["dirs"], d["symlinks"], d["skipped"]')" \
	"('/workspace/up/here', 10, 9, 2, [])"
is "upload counts bytes" "$(field "$b" 'd["bytes"]')" $((200000 + (5 << 20) + 5 + 10 + 2 * 5))
mv "$S/suid" "$T/suid.saved"
check "extracted tree matches the source (diff -r)" \
	diff -r --no-dereference -x suid "$S" "$W/up/here"
mv "$T/suid.saved" "$S/suid"
is "binary file intact" "$(sha "$W/up/here/a/b/big")" "$(sha "$S/a/b/big")"
check "symlink extracted as a symlink" test -L "$W/up/here/lnk"
is "absolute symlink kept as given" "$(readlink "$W/up/here/abs")" /etc/passwd
is "modes kept" "$(stat -c %a "$W/up/here/run.sh") $(stat -c %a "$W/up/here/bin")" "755 644"
is "set-id bits dropped" "$(stat -c %a "$W/up/here/suid")" 755
check "empty file extracted empty" test -f "$W/up/here/empty" -a ! -s "$W/up/here/empty"

b=$(api POST '/v1/archive/upload?path=bad' --data-binary @"$T/src.tgz" \
	-H "X-Content-Sha256: $(printf '0%.0s' $(seq 64))")
is "wrong X-Content-Sha256: 400" "$(status)" 400
is "mismatch names itself and the real hash" "$(field "$b" 'd["error"], d["sha256"]')" \
	"('sha256_mismatch', '$(sha "$T/src.tgz")')"
is "mismatch says what was extracted" "$(field "$b" 'd["files"], d["path"]')" "(10, '/workspace/bad')"
b=$(api POST '/v1/archive/upload?path=bad2' --data-binary @"$T/src.tgz" -H "X-Content-Sha256: xyz")
is "malformed X-Content-Sha256: 400" "$(status)" 400
check "nothing extracted for a malformed header" test ! -e "$W/bad2/bin"

head -c 100000 /dev/urandom > "$T/garbage"
b=$(api POST '/v1/archive/upload?path=g' --data-binary @"$T/garbage")
is "garbage body: 400" "$(status)" 400
like "garbage: says not a tar.gz" "$b" "not a tar.gz archive: "
b=$(api POST '/v1/archive/upload?path=g' --data-binary 'hello')
is "short garbage body: 400" "$(status)" 400
b=$(api POST '/v1/archive/upload?path=g' -H 'Content-Type: application/gzip' --data-binary @/dev/null)
is "empty body: 400" "$(status)" 400
head -c 60000 "$T/src.tgz" > "$T/cut.tgz"
b=$(api POST '/v1/archive/upload?path=cut' --data-binary @"$T/cut.tgz")
is "truncated archive: 400" "$(status)" 400
b=$(api POST '/v1/archive/upload?path=up/here/bin' --data-binary @"$T/src.tgz")
is "extracting into a file: 409" "$(status)" 409
curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' -X POST \
	--data-binary @"$T/src.tgz" 'http://a/v1/archive/upload?path=noauth' > "$T/st"
is "upload without the secret: 401" "$(cat "$T/st")" 401
check "nothing extracted without the secret" test ! -e "$W/noauth"

# A sparse entry (GNU tar -S): holes come back as holes, the size is kept.
mkdir -p "$T/sp"
printf 'head' > "$T/sp/holes"; truncate -s 8M "$T/sp/holes"; printf 'tail' >> "$T/sp/holes"
truncate -s 12M "$T/sp/holes"
tar -S -cf "$T/sparse.tar" -C "$T/sp" holes
api POST '/v1/archive/upload?path=sparse' --data-binary @"$T/sparse.tar" > /dev/null
is "sparse tar: 200" "$(status)" 200
check "a sparse file comes out byte for byte, its size kept" cmp -s "$T/sp/holes" "$W/sparse/holes"

# ---- a full disk ----
if [ "$(id -u)" -eq 0 ] && mkdir -p "$W/full" && mount -t tmpfs -o size=1m tmpfs "$W/full"; then
	at_exit "umount $W/full"
	b=$(api POST '/v1/archive/upload?path=full/x' --data-binary @"$T/src.tgz")
	is "upload onto a full disk: 507" "$(status)" 507
	like "a full disk is named" "$b" '"error":"extract_failed".*No space left on device'
	umount "$W/full"
else
	ok "# SKIP a full disk needs root to mount a small tmpfs"
fi

# ---- hostile archive ----
python3 - "$T/evil.tgz" "$T/outside" <<'EOF'
import io, sys, tarfile
out, outside = sys.argv[1], sys.argv[2]
def add(t, name, data=b"x", kind=tarfile.REGTYPE, target="", mode=0o644):
    i = tarfile.TarInfo(name)
    i.type, i.linkname, i.mode = kind, target, mode
    i.size = len(data) if kind == tarfile.REGTYPE else 0
    t.addfile(i, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
with tarfile.open(out, "w:gz", format=tarfile.GNU_FORMAT) as t:
    add(t, "ok.txt", b"fine")
    add(t, "../evil")
    add(t, "/abs-evil")
    add(t, "a/../../evil2")
    add(t, "link", kind=tarfile.SYMTYPE, target=outside)
    add(t, "link/escaped", b"through an absolute link")
    add(t, "rel", kind=tarfile.SYMTYPE, target="../../..")
    add(t, "rel/escaped3", b"through a relative link")
    add(t, "dev", kind=tarfile.CHRTYPE)
    add(t, "etcl", kind=tarfile.SYMTYPE, target="/etc")
    add(t, "etcl", kind=tarfile.DIRTYPE, mode=0o777)
    add(t, "ok.txt", b"replaced")
    add(t, "ok.txt/deeper", b"a file is in the way")
EOF
b=$(api POST '/v1/archive/upload?path=ev' --data-binary @"$T/evil.tgz")
is "hostile archive: 200 with entries skipped" "$(status)" 200
is "skipped entries are named" "$(field "$b" 'sorted(s["name"] for s in d["skipped"])')" \
	"['../evil', '/abs-evil', 'a/../../evil2', 'dev', 'ok.txt/deeper']"
like "skip reasons are given" "$(field "$b" '[s["reason"] for s in d["skipped"]]')" "absolute name.*climbs out"
check "../evil not written beside the target" test ! -e "$W/evil"
check "/abs-evil not written at the root" test ! -e "$R/abs-evil" -a ! -e /abs-evil
check "a/../../evil2 not written" test ! -e "$W/evil2"
is "a later entry replaces an earlier one" "$(cat "$W/ev/ok.txt")" replaced
check "write through an absolute link: host untouched" test ! -e "$T/outside/escaped"
is "write through an absolute link: inside the root" "$(cat "$R$T/outside/escaped")" \
	"through an absolute link"
check "write through ../../.. link: not beside the root" test ! -e "$T/escaped3"
is "write through ../../.. link: at the root's top" "$(cat "$R/escaped3")" "through a relative link"
check "no device node created" test ! -e "$W/ev/dev"
check "a directory entry over a symlink keeps the link" test -L "$W/ev/etcl"
is "and leaves its target's mode alone" "$(stat -c %a "$R/etc")" 755

# ---- download ----
curl -s --unix-socket "$SOCK" -H "X-Sandbox-Secret: $SECRET" -D "$T/hdr" -o "$T/dl.tgz" \
	'http://a/v1/archive/download?path=/workspace/up/here'
is "download: 200" "$(sed -n '1s/\r$//p' "$T/hdr")" "HTTP/1.1 200 OK"
like "download is application/gzip" "$(cat "$T/hdr")" "Content-Type: application/gzip"
like "download announces the trailer" "$(cat "$T/hdr")" "Trailer: X-Content-Sha256"
trailer=$(sed -n 's/^X-Content-Sha256: \([0-9a-f]*\).*/\1/p' "$T/hdr")
is "trailer sha256 matches the bytes received" "$trailer" "$(sha "$T/dl.tgz")"
mkdir "$T/dl"
tar xzf "$T/dl.tgz" -C "$T/dl"
names=$(tar tzf "$T/dl.tgz" | sed 's,/$,,' | LC_ALL=C sort | tr '\n' ' ')
is "default excludes drop .git node_modules target dist" "$names" \
	"a a/b a/b/big a/b/c a/b/c/file abs bin empty keep lnk run.sh sub suid "
check "downloaded tree matches the upload (diff -r)" \
	diff -r --no-dereference -x .git -x node_modules -x target -x dist "$W/up/here" "$T/dl"
check "symlinks archived as symlinks" test -L "$T/dl/lnk" -a -L "$T/dl/abs"
is "absolute link not followed" "$(readlink "$T/dl/abs")" /etc/passwd
is "paths are relative to the directory" "$(tar tzf "$T/dl.tgz" | grep -c '^/\|workspace')" 0

api GET '/v1/archive/download?path=up/here&exclude=' > "$T/all.tgz"
is "exclude= (empty): no excludes" "$(tar tzf "$T/all.tgz" | grep -c '\.git/config\|node_modules/m/index.js\|target/out\|keep/dist')" 4
api GET '/v1/archive/download?path=up/here&exclude=bin,c,.git' > "$T/some.tgz"
is "custom excludes replace the defaults" "$(tar tzf "$T/some.tgz" | sed 's,/$,,' | LC_ALL=C sort | tr '\n' ' ')" \
	"a a/b a/b/big abs empty keep keep/dist lnk run.sh sub sub/node_modules sub/node_modules/m sub/node_modules/m/index.js sub/target sub/target/out suid "

b=$(api POST '/v1/archive/upload?path=round' --data-binary @"$T/dl.tgz" \
	-H "X-Content-Sha256: $trailer")
is "the download uploads back with its trailer hash" "$(status)" 200
check "round trip matches" diff -r --no-dereference "$T/dl" "$W/round"

b=$(api GET '/v1/archive/download?path=nope')
is "download a missing dir: 404" "$(status)" 404
is "404 is JSON" "$(field "$b" 'd["error"]')" not_found
curl -s --unix-socket "$SOCK" -H "X-Sandbox-Secret: $SECRET" -D "$T/fhdr" -o "$T/file.tar" \
	'http://a/v1/archive/download?path=up/here/a/b/big&format=tar'
like "download a file: 200" "$(sed -n '1p' "$T/fhdr")" "200 OK"
is "a file's archive holds one entry under its name" "$(tar tf "$T/file.tar")" big
is "and the file's bytes" "$(tar xOf "$T/file.tar" big | sha256sum | cut -c1-64)" "$(sha "$S/a/b/big")"
is "its trailer is the archive's sha256" \
	"$(sed -n 's/^X-Content-Sha256: \([0-9a-f]*\).*/\1/p' "$T/fhdr")" "$(sha "$T/file.tar")"
mkfifo "$W/fifo"
b=$(api GET '/v1/archive/download?path=fifo')
is "download a FIFO: 400, without waiting for a writer" "$(status)" 400
rm "$W/fifo"

# ---- plain tar, and the sha256 as a trailer ----
curl -s --unix-socket "$SOCK" -H "X-Sandbox-Secret: $SECRET" -D "$T/thdr" -o "$T/dl.tar" \
	'http://a/v1/archive/download?path=up/here&format=tar'
like "format=tar is application/x-tar" "$(cat "$T/thdr")" "Content-Type: application/x-tar"
isnt_gzip() { [ "$(head -c 2 "$1" | od -An -tx1 | tr -d ' \n')" != 1f8b ]; }
check "format=tar is not compressed" isnt_gzip "$T/dl.tar"
check "format=tar is a tar" sh -c 'tar tf "$1" > /dev/null' _ "$T/dl.tar"
is "format=tar trailer matches the bytes" \
	"$(sed -n 's/^X-Content-Sha256: \([0-9a-f]*\).*/\1/p' "$T/thdr")" "$(sha "$T/dl.tar")"
is "format=tar holds what tar.gz holds" "$(tar tf "$T/dl.tar" | LC_ALL=C sort | tr '\n' ' ')" \
	"$(tar tzf "$T/dl.tgz" | LC_ALL=C sort | tr '\n' ' ')"
b=$(api GET '/v1/archive/download?path=up/here&format=zip')
is "an unknown format: 400" "$(status)" 400
like "an unknown format names the formats" "$b" "must be tar, tar.gz or tar.zst"

# A chunked upload whose sha256 comes after the body, as sbxtop sends it.
chunked() {	# chunked PATH FILE TRAILER-VALUE: prints "STATUS BODY"
	python3 "$T/chunked.py" "$SOCK" "$SECRET" "$1" "$2" "$3"
}
cat > "$T/chunked.py" <<'EOF'
import socket, sys
sock, secret, path, name, trailer = sys.argv[1:6]
data = open(name, "rb").read()
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
s.sendall(("POST %s HTTP/1.1\r\nHost: a\r\nX-Sandbox-Secret: %s\r\n"
           "Content-Type: application/x-tar\r\nTransfer-Encoding: chunked\r\n"
           "Trailer: X-Content-Sha256\r\nConnection: close\r\n\r\n" % (path, secret)).encode())
for i in range(0, len(data), 100000):
    part = data[i:i + 100000]
    s.sendall(b"%x\r\n" % len(part) + part + b"\r\n")
s.sendall(b"0\r\n" + (b"X-Content-Sha256: " + trailer.encode() + b"\r\n" if trailer else b"") + b"\r\n")
resp = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    resp += b
head, _, body = resp.partition(b"\r\n\r\n")
if b"transfer-encoding: chunked" in head.lower():
    out, rest = b"", body
    while rest:
        n, _, rest = rest.partition(b"\r\n")
        n = int(n, 16)
        if n == 0:
            break
        out, rest = out + rest[:n], rest[n + 2:]
    body = out
print(head.split(b" ")[1].decode(), body.decode())
EOF
r=$(chunked '/v1/archive/upload?path=tr/ok' "$T/dl.tar" "$(sha "$T/dl.tar")")
is "plain tar, sha256 in a trailer: 200" "${r%% *}" 200
is "the trailer's upload reports the sha256" "$(field "${r#* }" 'd["sha256"]')" "$(sha "$T/dl.tar")"
check "plain tar round trip matches" \
	diff -r --no-dereference -x .git -x node_modules -x target -x dist "$W/up/here" "$W/tr/ok"
r=$(chunked '/v1/archive/upload?path=tr/bad' "$T/dl.tar" "$(printf 'f%.0s' $(seq 64))")
is "a wrong trailer: 400" "${r%% *}" 400
is "a wrong trailer is a sha256 mismatch" "$(field "${r#* }" 'd["error"], d["sha256"]')" \
	"('sha256_mismatch', '$(sha "$T/dl.tar")')"
r=$(chunked '/v1/archive/upload?path=tr/mal' "$T/dl.tar" "nothex")
is "a malformed trailer: 400" "${r%% *}" 400
like "a malformed trailer says so" "${r#* }" "trailer X-Content-Sha256 must be 64 hex digits"
r=$(chunked '/v1/archive/upload?path=tr/none' "$T/dl.tar" "")
is "no trailer, no header: taken unchecked" "${r%% *}" 200

# ---- tar.zst, for slow links ----
like "/health lists the archive formats" "$(curl -s --unix-socket "$SOCK" http://a/health)" \
	'"archive_formats":\["tar","tar.gz","tar.zst"\]'
curl -s --unix-socket "$SOCK" -H "X-Sandbox-Secret: $SECRET" -D "$T/zhdr" -o "$T/dl.tar.zst" \
	'http://a/v1/archive/download?path=up/here&format=tar.zst'
like "format=tar.zst is application/zstd" "$(cat "$T/zhdr")" "Content-Type: application/zstd"
is "format=tar.zst is zstd (its magic)" "$(head -c 4 "$T/dl.tar.zst" | od -An -tx1 | tr -d ' \n')" 28b52ffd
is "format=tar.zst holds what tar holds" "$(zstd -dc < "$T/dl.tar.zst" | tar tf - | LC_ALL=C sort | tr '\n' ' ')" \
	"$(tar tf "$T/dl.tar" | LC_ALL=C sort | tr '\n' ' ')"
is "format=tar.zst trailer matches the bytes" \
	"$(sed -n 's/^X-Content-Sha256: \([0-9a-f]*\).*/\1/p' "$T/zhdr")" "$(sha "$T/dl.tar.zst")"
r=$(chunked '/v1/archive/upload?path=zst/ok' "$T/dl.tar.zst" "$(sha "$T/dl.tar.zst")")
is "a tar.zst upload: 200" "${r%% *}" 200
check "tar.zst round trip matches" \
	diff -r --no-dereference -x .git -x node_modules -x target -x dist "$W/up/here" "$W/zst/ok"
like "the agent logs each archive with its format" "$(cat "$T/agent.log")" \
	"archive: received /workspace/zst/ok \(tar.zst, [0-9]+ files"
ln -s ../../.. "$W/esc"
api GET '/v1/archive/download?path=esc' > "$T/esc.tgz"
is "a directory through ../../.. is the sandbox root" \
	"$(tar tzf "$T/esc.tgz" | grep -c '^escaped3$\|^workspace/up/here/bin$\|root/workspace')" 2

ev=$(api GET '/v1/events?from=1&follow=0')
like "archive.uploaded event" "$ev" '"type":"archive.uploaded".*"path":"/workspace/up/here"'
like "archive.downloaded event carries the sha256" "$ev" "\"type\":\"archive.downloaded\".*\"sha256\":\"$trailer\""

# ---- ownership: an upload is made as the user, into the user's workspace ----
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
	kill "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null
	chown nobody "$W"
	agent_start --root "$R" --workspace /workspace --user nobody
	api POST '/v1/archive/upload?path=own' --data-binary @"$T/src.tgz" > /dev/null
	is "extracted files, dirs, links owned by the sandbox user" \
		"$(stat -c %U "$W/own" "$W/own/bin" "$W/own/a/b" | sort -u) $(stat -c %U "$W/own/lnk")" \
		"nobody nobody"
else
	ok "# SKIP ownership needs root and a 'nobody' user"
fi
done_testing
