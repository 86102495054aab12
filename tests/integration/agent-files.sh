# The file routes: read/write round trips, modes, atomic writes, list, stat,
# delete, and escape attempts against a fake sandbox root ($T/root).
. "$(dirname "$0")/../lib.sh"
R="$T/root"
W="$R/workspace"
mkdir -p "$W" "$R/etc" "$T/outside"
echo "sandbox passwd" > "$R/etc/passwd"
echo "host file" > "$T/outside/victim"
agent_start --root "$R" --workspace /workspace

# jpost ROUTE JSON: POST it.  jpost ROUTE PYTHON-EXPR ARGS...: POST the JSON the
# expression builds (ARGS as a[]).
jpost() {
	_r=$1; _e=$2; shift 2
	if [ $# -eq 0 ]; then		# a JSON literal: no need for python
		printf '%s' "$_e" > "$T/req.json"
	else
		python3 -c 'import json,sys; print(json.dumps(eval(sys.argv[1],
		{"a": sys.argv[2:], "true": True, "false": False})))' \
			"$_e" "$@" > "$T/req.json"
	fi
	api POST "/v1/files/$_r" -H 'Content-Type: application/json' --data-binary @"$T/req.json"
}
field() { json_get "$1" "$2" 2>/dev/null; }

# ---- write and read ----
b=$(jpost write '{"path":"a.txt","content":"hello\nworld\n"}')
is "write text: 200" "$(status)" 200
is "write reports the sandbox path and size" "$(field "$b" 'd["path"], d["size"]')" "('/workspace/a.txt', 12)"
is "written bytes are on disk in the root" "$(cat "$W/a.txt")" "$(printf 'hello\nworld')"
b=$(jpost read '{"path":"/workspace/a.txt"}')
is "read text back" "$(field "$b" 'd["content"], d["encoding"], d["size"], d["truncated"]')" \
	"('hello\\nworld\\n', 'utf-8', 12, False)"

head -c 100000 /dev/urandom > "$T/bin"
base64 -w0 "$T/bin" > "$T/bin.b64"
b=$(jpost write '{"path":"d1/d2/bin.dat","content":open(a[0]).read(),"encoding":"base64"}' "$T/bin.b64")
is "write binary (base64) with parents created" "$(status)" 200
is "binary on disk matches" "$(sha256sum < "$W/d1/d2/bin.dat")" "$(sha256sum < "$T/bin")"
jpost read '{"path":"d1/d2/bin.dat"}' > "$T/r.json"
is "binary read defaults to base64" "$(python3 -c 'import json;print(json.load(open("'"$T/r.json"'"))["encoding"])')" base64
python3 -c 'import json,base64,sys; sys.stdout.buffer.write(base64.b64decode(json.load(open(sys.argv[1]))["content"]))' \
	"$T/r.json" > "$T/bin.back"
is "binary read back matches (sha256)" "$(sha256sum < "$T/bin.back")" "$(sha256sum < "$T/bin")"
b=$(jpost read '{"path":"d1/d2/bin.dat","encoding":"utf-8"}')
is "utf-8 asked for binary: 400" "$(status)" 400
like "the error says to ask for base64" "$b" 'base64'

b=$(jpost read '{"path":"a.txt","offset":6}')
is "read from an offset" "$(field "$b" 'd["content"], d["offset"], d["length"], d["size"], d["truncated"]')" \
	"('world\\n', 6, 6, 12, False)"
b=$(jpost read '{"path":"a.txt","offset":2,"max_bytes":3}')
is "read a page: offset, length, more after it" "$(field "$b" 'd["content"], d["offset"], d["length"], d["truncated"]')" \
	"('llo', 2, 3, True)"
b=$(jpost read '{"path":"a.txt","offset":50}')
is "read past the end: nothing, not an error" "$(status) $(field "$b" 'd["content"], d["length"], d["truncated"]')" \
	"200 ('', 0, False)"
printf 'a\303\251\303\251z' > "$W/utf"
b=$(jpost read '{"path":"utf","offset":2}')
is "an offset inside a character starts at the next one" "$(field "$b" 'd["content"], d["offset"], d["length"]')" \
	"('éz', 3, 3)"
b=$(jpost read '{"path":"utf","offset":1,"max_bytes":3}')
is "a page ending inside a character stops before it" "$(field "$b" 'd["content"], d["offset"], d["length"], d["truncated"]')" \
	"('é', 1, 2, True)"
b=$(jpost read '{"path":"utf","offset":2,"max_bytes":2,"encoding":"base64"}')
is "base64 from an offset: the bytes as they are" "$(field "$b" 'd["content"], d["offset"], d["length"]')" \
	"('qcM=', 2, 2)"
b=$(jpost read '{"path":"a.txt","offset":-1}')
is "a negative offset: 400" "$(status)" 400

b=$(jpost write '{"path":"empty","content":""}')
is "empty file written" "$(field "$b" 'd["size"]')" 0
check "empty file exists with size 0" test -f "$W/empty" -a ! -s "$W/empty"
b=$(jpost read '{"path":"empty"}')
is "empty file reads as empty text" "$(field "$b" 'd["content"], d["encoding"], d["size"]')" "('', 'utf-8', 0)"

head -c $((20 << 20)) /dev/urandom > "$T/big"
base64 -w0 "$T/big" > "$T/big.b64"
python3 -c 'import json,sys; print(json.dumps({"path":"big.bin","content":open(sys.argv[1]).read(),"encoding":"base64"}))' \
	"$T/big.b64" > "$T/big.json"
b=$(api POST /v1/files/write --data-binary @"$T/big.json")
is "20 MiB write: 200" "$(status)" 200
is "20 MiB file on disk matches" "$(sha256sum < "$W/big.bin")" "$(sha256sum < "$T/big")"
jpost read '{"path":"big.bin","max_bytes":67108864}' > "$T/r.json"
python3 -c 'import json,base64,sys; sys.stdout.buffer.write(base64.b64decode(json.load(open(sys.argv[1]))["content"]))' \
	"$T/r.json" > "$T/big.back"
is "20 MiB read back matches" "$(sha256sum < "$T/big.back")" "$(sha256sum < "$T/big")"
b=$(jpost read '{"path":"big.bin"}' | python3 -c 'import json,sys,base64; d=json.load(sys.stdin); print(len(base64.b64decode(d["content"])), d["size"], d["truncated"])')
is "default read stops at 10 MiB and says truncated" "$b" "10485760 20971520 True"
b=$(jpost read '{"path":"a.txt","max_bytes":5}')
is "max_bytes cuts text" "$(field "$b" 'd["content"], d["truncated"]')" "('hello', True)"
b=$(jpost read '{"path":"a.txt","max_bytes":67108865}')
is "max_bytes over 64 MiB: 400" "$(status)" 400
like "the error names max_bytes" "$b" "max_bytes"

python3 -c 'print("{\"path\":\"huge\",\"content\":\"" + "A" * (97 << 20) + "\"}")' > "$T/huge.json"
api POST /v1/files/write --data-binary @"$T/huge.json" > /dev/null
is "write body over 96 MiB: 413" "$(status)" 413
rm -f "$T/huge.json" "$T/big" "$T/big.b64" "$T/big.json" "$T/big.back" "$T/r.json"
check "refused write left nothing" test ! -e "$W/huge"

# ---- modes, append, atomicity ----
jpost write '{"path":"run.sh","content":"#!/bin/sh\n","mode":493}' > /dev/null
is "mode 0755 applied" "$(stat -c %a "$W/run.sh")" 755
is "default mode is 0644" "$(stat -c %a "$W/a.txt")" 644
jpost write '{"path":"run.sh","content":"#!/bin/sh\necho hi\n"}' > /dev/null
is "rewrite without mode keeps 0755" "$(stat -c %a "$W/run.sh")" 755
jpost write '{"path":"s.txt","content":"x","mode":2541}' > /dev/null
is "odd mode 04755 kept exactly" "$(stat -c %a "$W/s.txt")" 4755
b=$(jpost write '{"path":"m","content":"x","mode":4096}')
is "mode over 07777: 400" "$(status)" 400
like "the error names mode" "$b" "'mode'"
jpost write '{"path":"log.txt","content":"one\n"}' > /dev/null
b=$(jpost write '{"path":"log.txt","content":"two\n","append":true}')
is "append adds to the end" "$(cat "$W/log.txt" | tr '\n' ' ')" "one two "
is "append reports the new size" "$(field "$b" 'd["size"]')" 8
ino=$(stat -c %i "$W/a.txt")
jpost write '{"path":"a.txt","content":"replaced"}' > /dev/null
isnt_same() { [ "$1" != "$2" ]; }
check "atomic write replaces the inode (rename)" isnt_same "$ino" "$(stat -c %i "$W/a.txt")"
is "no temporary file left behind" "$(find "$R" -name '*.sbx-*' | wc -l)" 0
b=$(jpost write '{"path":"nodir/x","content":"x","create_parents":false}')
is "create_parents false and no parent: 404" "$(status)" 404
like "the error says to pass create_parents" "$b" "create_parents"
b=$(jpost write '{"path":"d1","content":"x"}')
is "writing over a directory: 400" "$(status)" 400
b=$(jpost write '{"path":"a.txt/x","content":"x"}')
is "a file where a parent directory should be: 409" "$(status)" 409

# ---- bad input ----
b=$(jpost read '{"path":5}')
is "path of the wrong type: 400" "$(status)" 400
like "the error names path" "$b" "'path'"
b=$(jpost read '{"path":""}')
is "empty path: 400" "$(status)" 400
b=$(jpost write '{"path":"x","content":"x","colour":"red"}')
like "unknown field is named" "$b" "colour"
b=$(api POST /v1/files/read -d '{"path":')
is "malformed JSON: 400" "$(status)" 400
b=$(jpost write '{"path":"x","content":"!!!","encoding":"base64"}')
like "bad base64 names content" "$b" "'content'"
b=$(jpost read '{"path":"nope"}')
is "missing file: 404" "$(status)" 404
is "404 is not_found" "$(field "$b" 'd["error"]')" not_found
b=$(jpost read '{"path":"d1"}')
is "reading a directory: 400" "$(status)" 400
like "says to use list" "$b" "is a directory \\(use /v1/files/list\\)"

# ---- escapes: everything resolves inside $R ----
b=$(jpost read '{"path":"../../etc/passwd"}')
is "../../etc/passwd reads the sandbox's file" "$(field "$b" 'd["content"]')" "sandbox passwd"
ln -s /etc/passwd "$W/pw"
b=$(jpost read '{"path":"pw"}')
is "absolute symlink to /etc/passwd resolves in the root" "$(field "$b" 'd["content"]')" "sandbox passwd"
mkdir -p "$W/c"
ln -s ../../../../../../c2 "$W/c/c1"
ln -s ../../../../etc/passwd "$R/c2"
b=$(jpost read '{"path":"c/c1"}')
is "relative symlink chain stays in the root" "$(field "$b" 'd["content"]')" "sandbox passwd"
ln -s "$T/outside/victim" "$W/wl"
b=$(jpost write '{"path":"wl","content":"through the link"}')
is "write through an absolute symlink: 200" "$(status)" 200
is "the host file is untouched" "$(cat "$T/outside/victim")" "host file"
is "the write landed inside the root" "$(cat "$R$T/outside/victim")" "through the link"
check "the link itself is still a link" test -L "$W/wl"
ln -s ../.. "$W/up"
jpost write '{"path":"up/escaped.txt","content":"x"}' > /dev/null
check "write through a ../.. directory link lands in the root" test -f "$R/escaped.txt"
check "and not beside the root" test ! -e "$T/escaped.txt"
jpost write '{"path":"../../../../escaped2","content":"x"}' > /dev/null
check "write to ../../../../escaped2 lands at the root's top" test -f "$R/escaped2"
b=$(jpost read '{"path":"up/root/etc/passwd"}')
is "no path reaches the host through ../.." "$(status)" 404

# ---- list ----
mkdir -p "$W/t/sub/deeper"
echo 1 > "$W/t/f1"; echo 22 > "$W/t/.hidden"; echo 3 > "$W/t/sub/f3"; echo 4 > "$W/t/sub/deeper/f4"
mkdir -p "$T/outside/dir"; echo o > "$T/outside/dir/of"
ln -s "$T/outside/dir" "$W/t/outlink"
ln -s sub "$W/t/sublink"
names() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(" ".join(e["path"].replace("/workspace/t/","") for e in d["entries"]))' "$1"; }
b=$(jpost list '{"path":"t"}')
is "list: sorted, no hidden" "$(names "$b")" "f1 outlink sub sublink"
is "list: not truncated" "$(field "$b" 'd["truncated"]')" False
is "list: entry fields" "$(field "$b" '[(e["type"],e["size"],e["mode"],e.get("target")) for e in d["entries"] if e["name"] in ("f1","sublink")]')" \
	"[('file', 2, 420, None), ('symlink', 3, 511, 'sub')]"
like "list: mtime_ms present" "$(field "$b" 'd["entries"][0]["mtime_ms"]')" '^[0-9]{13}$'
b=$(jpost list '{"path":"t","hidden":true}')
is "list hidden" "$(names "$b")" ".hidden f1 outlink sub sublink"
b=$(jpost list '{"path":"t","recursive":true}')
is "list recursive, symlinked dirs not followed" "$(names "$b")" "f1 outlink sub sub/deeper sub/deeper/f4 sub/f3 sublink"
b=$(jpost list '{"path":"t","recursive":true,"max_entries":3}')
is "max_entries caps and says truncated" "$(field "$b" 'len(d["entries"]), d["truncated"]')" "(3, True)"
b=$(jpost list '{}')
is "list defaults to the workspace" "$(field "$b" 'd["path"]')" /workspace
b=$(jpost list '{"path":"a.txt"}')
is "list a file: 400" "$(status)" 400
b=$(jpost list '{"path":"missing"}')
is "list a missing dir: 404" "$(status)" 404
b=$(jpost list '{"path":"t","max_entries":100001}')
is "max_entries over 100000: 400" "$(status)" 400

# Breadth first: level by level, counts, the workspace first, folding, pages.
mkdir -p "$R/big" "$W/t/node_modules/pkg" "$R/opt/a/b"
for i in 1 2 3 4 5 6 7 8; do echo "$i" > "$R/big/f$i"; done
echo x > "$W/t/node_modules/pkg/index.js"
echo y > "$R/opt/a/b/c"
b=$(jpost list '{"path":"t","order":"breadth"}')
is "breadth, one level: the entries and each directory's count" \
	"$(field "$b" '[(e["name"], e.get("entries")) for e in d["entries"]], d["total"], d["truncated"]')" \
	"([('f1', None), ('node_modules', 1), ('outlink', None), ('sub', 2), ('sublink', None)], 5, False)"
q='{"path":"/","recursive":true,"order":"breadth","fold":6,"fold_names":["node_modules"]'
jpost list "$q}" > "$T/bfs.json"
# What a breadth-first listing is, checked on what came back against the tree
# itself: every entry of the tree once (but below folded directories), the
# workspace's first, then by depth, each directory's names in order.
is "breadth from /: the workspace first, by level, each directory sorted, nothing missing" "$(python3 - "$T/bfs.json" "$R" <<'PYEOF'
import json, os, sys
d = json.load(open(sys.argv[1])); root = sys.argv[2]
e = d["entries"]; paths = [x["path"] for x in e]
ws = [p for p in paths if p == "/workspace" or p.startswith("/workspace/")]
assert paths[:len(ws)] == ws, "workspace first"
def depth(p): return p.count("/")
for part in (paths[:len(ws)], paths[len(ws):]):
    assert [depth(p) for p in part] == sorted(depth(p) for p in part), "by level"
folded = {x["path"]: x["folded"] for x in e if "folded" in x}
want = set()
for dp, dns, fns in os.walk(root):
    rel = "/" + os.path.relpath(dp, root) if dp != root else "/"
    if rel != "/" and any(rel == f or rel.startswith(f + "/") for f in folded): continue
    for n in dns + fns:
        if not n.startswith("."):
            want.add((rel.rstrip("/") + "/" + n))
    dns[:] = [n for n in dns if not n.startswith(".")]
assert set(paths) == want, (set(paths) ^ want)
assert len(paths) == len(set(paths)) == d["total"]
for p in set(os.path.dirname(p) for p in paths):
    kids = [x for x in paths if os.path.dirname(x) == p and x != "/workspace"]
    assert kids == sorted(kids), p
print("ok", folded.get("/big"), folded.get("/workspace/t/node_modules"),
      [x["entries"] for x in e if x["path"] == "/big"], d["truncated"], d["total_capped"])
PYEOF
)" "ok big name [8] False False"
all=$(field "$(cat "$T/bfs.json")" '" ".join(e["path"] for e in d["entries"])')
total=$(field "$(cat "$T/bfs.json")" 'd["total"]')
pages="" off=0 more=True
while [ "$more" = True ] && [ "$off" -lt 1000 ]; do
	b=$(jpost list "$q"',"offset":'"$off"',"max_entries":10}')
	pages="$pages $(field "$b" '" ".join(e["path"] for e in d["entries"])')"
	more=$(field "$b" 'd["truncated"]')
	[ "$off" = 0 ] && is "a page says more follows, and the total" "$(field "$b" 'd["truncated"], d["total"]')" "(True, $total)"
	off=$((off + 10))
done
is "pages by offset make the whole listing, the last saying nothing follows" "${pages# }" "$all"
b=$(jpost list '{"path":"/","order":"sideways"}')
is "an unknown order: 400" "$(status)" 400
b=$(jpost list '{"path":"/","offset":3}')
like "offset without breadth: 400 saying so" "$(status) $b" "^400 .*breadth"
rm -rf "$R/big" "$R/opt" "$W/t/node_modules"

# ---- stat ----
b=$(jpost stat '{"path":"t/f1"}')
is "stat a file" "$(field "$b" 'd["exists"], d["type"], d["size"], d["path"]')" "(True, 'file', 2, '/workspace/t/f1')"
b=$(jpost stat '{"path":"t/sublink"}')
is "stat a symlink (not followed)" "$(field "$b" 'd["type"], d["target"]')" "('symlink', 'sub')"
b=$(jpost stat '{"path":"t/none/deeper"}')
is "stat missing: 200" "$(status)" 200
is "stat missing: exists false" "$(field "$b" 'd["exists"]')" False
b=$(jpost stat '{"path":"/"}')
is "stat /" "$(field "$b" 'd["exists"], d["type"]')" "(True, 'dir')"

# ---- delete ----
b=$(jpost delete '{"path":"t/f1"}')
is "delete a file" "$(field "$b" 'd["deleted"]')" 1
check "file is gone" test ! -e "$W/t/f1"
b=$(jpost delete '{"path":"t/sub"}')
is "delete a non-empty dir without recursive: 409" "$(status)" 409
like "the error says to pass recursive" "$b" "recursive"
check "nothing deleted" test -f "$W/t/sub/f3"
mkdir "$W/t/sub/emptydir"
b=$(jpost delete '{"path":"t/sub/emptydir"}')
is "delete an empty dir" "$(status)" 200
b=$(jpost delete '{"path":"t","recursive":true}')
is "delete recursive" "$(status)" 200
is "recursive delete counts entries" "$(field "$b" 'd["deleted"]')" 8
check "the tree is gone" test ! -e "$W/t"
check "a symlinked directory outside was not followed" test -f "$T/outside/dir/of"
b=$(jpost delete '{"path":"t"}')
is "delete missing: 404" "$(status)" 404
for p in /workspace . /workspace/ / .. ../.. up/workspace; do
	b=$(jpost delete '{"path":a[0],"recursive":true}' "$p")
	is "refuses to delete '$p'" "$(status)" 400
done
like "the refusal says why" "$b" "workspace"
check "the workspace is still there" test -f "$W/a.txt"
b=$(jpost delete '{"path":"pw"}')
check "deleting a symlink removes the link only" test ! -L "$W/pw" -a -f "$R/etc/passwd"

# ---- events ----
ev=$(api GET '/v1/events?from=1&follow=0')
like "file.written event" "$ev" '"type":"file.written".*"path":"/workspace/a.txt"'
like "file.deleted event" "$ev" '"type":"file.deleted".*"path":"/workspace/t"'

# ---- ownership: files belong to the sandbox user unless as_root ----
# A write of the user's is made as the user, into the user's workspace.
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
	kill "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null
	chown nobody "$W"
	agent_start --root "$R" --workspace /workspace --user nobody
	jpost write '{"path":"own/u.txt","content":"x"}' > /dev/null
	is "written file owned by the sandbox user" "$(stat -c %U "$W/own/u.txt")" nobody
	is "created parent owned by the sandbox user" "$(stat -c %U "$W/own")" nobody
	jpost write '{"path":"r.txt","content":"x","as_root":true}' > /dev/null
	is "as_root: owned by root" "$(stat -c %U "$W/r.txt")" root
else
	ok "# SKIP ownership needs root and a 'nobody' user"
fi
done_testing
