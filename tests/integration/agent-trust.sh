# The agent against what a sandbox's user lays down before or around it: file
# names that are not UTF-8 (the listing stays valid JSON and names them exactly),
# a background log directory made by someone else before the agent started, and
# (as root, with a sandbox user) links the user planted to root's files, which a
# write, an upload or a delete of the user's must not go through.
. "$(dirname "$0")/../lib.sh"
R="$T/root"
mkdir -p "$R/workspace" "$R/tmp"
chmod 1777 "$R/tmp"
# Left by someone else (an image, a snapshot): world-writable, not the agent's.
mkdir -m 0777 "$R/tmp/sbxtop"
chown nobody "$R/tmp/sbxtop"
ln -s /etc/passwd "$R/tmp/sbxtop/planted"
agent_start --root "$R" --workspace /workspace

# --- names that are not UTF-8 ----------------------------------------------------
printf 'x' > "$R/workspace/$(printf 'bad\377\376name')"
printf 'x' > "$R/workspace/good-é"
ln -s "$(printf '/tmp/\377target')" "$R/workspace/badlink"
curl -s --unix-socket "$SOCK" -H "X-Sandbox-Secret: $SECRET" -H 'Content-Type: application/json' \
	-d '{"path":"/workspace"}' http://a/v1/files/list > "$T/list"
out=$(python3 - "$T/list" <<'PY'
import base64, json, sys
raw = open(sys.argv[1], "rb").read()
d = json.loads(raw.decode("utf-8"))          # strict: fails on invalid UTF-8
for e in d["entries"]:
    n = e["name"]
    b = base64.b64decode(e["name_b64"]) if "name_b64" in e else n.encode()
    t = base64.b64decode(e["target_b64"]) if "target_b64" in e else None
    print(repr(n), repr(b), repr(t), "path_b64" in e)
PY
)
rc=$?
is "the listing is valid UTF-8 JSON" "$rc" 0
like "a bad name shows with U+FFFD" "$out" "'bad\\\\ufffd\\\\ufffdname'|'bad��name'"
like "... and its bytes in name_b64, exactly" "$out" "b'bad\\\\xff\\\\xfename' None True"
like "a bad link target is in target_b64" "$out" "b'/tmp/\\\\xfftarget'"
like "a valid name has no _b64 field" "$out" "'good-é' b'good-\\\\xc3\\\\xa9' None False"

# --- the background log directory -------------------------------------------------
check "the agent moved the directory it did not make aside" test -L "$(ls -d "$R"/tmp/sbxtop.stale-*)/planted"
is "and made its own, 0755, its own uid" "$(stat -c '%a %u' "$R/tmp/sbxtop")" "755 $(id -u)"
like "the agent said so in its log" "$(cat "$T/agent.log")" 'was not the agent.s .*moved to /tmp/sbxtop.stale-'
b=$(api POST /v1/exec -H 'Content-Type: application/json' -d '{"command":"echo bg","background":true}')
is "a background exec starts" "$(status)" 200
like "its log is in the agent's directory" "$b" '"log_path":"/tmp/sbxtop/exec-'

# --- the identity of a call: the user's writes go where the user may write -------
if [ "$(id -u)" -ne 0 ] || ! id nobody > /dev/null 2>&1; then
	ok "# SKIP the user's identity needs root and the user nobody"
	done_testing
	exit
fi
kill "$AGENT_PID"; wait "$AGENT_PID" 2> /dev/null
rm -f "$T/agent.sock"
mkdir -p "$R/etc" "$R/workspace/mine"
echo root-file > "$R/etc/passwd"
chown -R nobody "$R/workspace"
# What the user lays down: a link to a file of root's, one to root's directory.
ln -s /etc/passwd "$R/workspace/planted"
ln -s /etc "$R/workspace/etcdir"
chown -h nobody "$R/workspace/planted" "$R/workspace/etcdir"
agent_start --root "$R" --workspace /workspace --user nobody
w() { api POST /v1/files/write -H 'Content-Type: application/json' -d "$1"; }
b=$(w '{"path":"/workspace/planted","content":"pwned"}')
is "a write through a link the user planted to root's file: 403" "$(status)" 403
like "  saying permission denied" "$b" 'permission denied'
is "  root's file is unchanged" "$(cat "$R/etc/passwd")" root-file
is "  and still root's" "$(stat -c %U "$R/etc/passwd")" root
w '{"path":"/workspace/etcdir/new","content":"x"}' > /dev/null
is "a write through a link to root's directory: 403" "$(status)" 403
check "  nothing was made there" test ! -e "$R/etc/new"
w '{"path":"/workspace/etcdir/passwd","content":"x","append":true}' > /dev/null
is "an append through it: 403" "$(status)" 403
is "  root's file is unchanged" "$(cat "$R/etc/passwd")" root-file
w '{"path":"/workspace/etcdir/sub/f","content":"x","create_parents":true}' > /dev/null
check "no directory made in root's directory either" test ! -e "$R/etc/sub"
mkdir -p "$T/src/d" && echo up > "$T/src/d/f"
tar -C "$T/src" -czf "$T/src.tgz" d
b=$(api POST '/v1/archive/upload?path=/workspace/etcdir' --data-binary @"$T/src.tgz")
is "an upload into a link to root's directory: 403" "$(status)" 403
check "  nothing arrived there" test ! -e "$R/etc/d"
api POST /v1/files/delete -H 'Content-Type: application/json' \
	-d '{"path":"/workspace/etcdir/passwd"}' > /dev/null
is "a delete through it: 403" "$(status)" 403
check "  root's file is still there" test -f "$R/etc/passwd"
b=$(w '{"path":"/workspace/mine/ok","content":"ok"}')
is "a write where the user may: 200" "$(status)" 200
is "  the file is the user's" "$(stat -c %U "$R/workspace/mine/ok")" nobody
b=$(api POST '/v1/archive/upload?path=/workspace/mine/up' --data-binary @"$T/src.tgz")
is "an upload where the user may: 200" "$(status)" 200
is "  its directories and files are the user's" \
	"$(stat -c %U "$R/workspace/mine/up" "$R/workspace/mine/up/d" "$R/workspace/mine/up/d/f" | sort -u)" nobody
b=$(w '{"path":"/workspace/planted","content":"by root","as_root":true}')
is "as_root, the same write is root's to make: 200" "$(status)" 200
is "  and lands in root's file, still root's" "$(cat "$R/etc/passwd") $(stat -c %U "$R/etc/passwd")" \
	"by root root"
b=$(w '{"path":"/workspace/mine/after","content":"x"}')
is "and the next call of the user's is the user's again" "$(stat -c %U "$R/workspace/mine/after")" nobody
done_testing
