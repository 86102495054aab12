# sbxtop diff and sandbox_diff against what a hostile sandbox can hold, on the
# core server:
# - junk elsewhere (more entries than a walk looks at) never hides a file added
#   under the path asked for, nor the agent's /workspace from the summary;
# - 5000 files of 256 KiB of text and diffs with the biggest limits the tool
#   takes grow the core server's peak memory (VmHWM) by at most 64 MiB, while
#   an exec in another sandbox stays fast (timed against the same exec alone);
# - every answer's text keeps within the budget and every line under 1 MiB;
# - file names and lines with escapes, C1 controls and newlines in them reach
#   the terminal escaped, from `diff`, `diff --stat` and `diff --json`;
# - the same listing and escaping as ordinary users, with and without a
#   subordinate range.
. "$(dirname "$0")/../lib.sh"

destroy_left_at_exit
J() { json_get "$1" "$2"; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
BUDGET=20000

# mcp ARGS_JSON...: sandbox_diff with each argument object in turn through
# `sbxtop --mcp`, one answer a line, in $T/answers.
mcp() {
	_a=""
	for _j in "$@"; do
		_a="$_a tools/call {\"name\":\"sandbox_diff\",\"arguments\":$_j}"
	done
	# shellcheck disable=SC2086
	python3 "$TOP/tests/tools/mcp-calls.py" "$SBXTOP" 300 $_a > "$T/answers"
}
# What the answers hold: text of answer N (from 0), and checks on them all.
answer_text() { sed -n "$(($1 + 1))p" "$T/answers" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["content"][0]["text"])'; }
answers_fit() {
	python3 - "$T/answers" "$BUDGET" <<'EOF'
import json, sys
bad = []
for n, line in enumerate(open(sys.argv[1], "rb")):
    if len(line) >= 1 << 20:
        bad.append("answer %d is a line of %d bytes" % (n, len(line)))
    r = json.loads(line).get("result", {})
    t = r.get("content", [{}])[0].get("text", "")
    s = json.dumps(r.get("structuredContent"), ensure_ascii=False, separators=(",", ":"))
    if r.get("isError") or len(t) > int(sys.argv[2]) or len(s) > int(sys.argv[2]):
        bad.append("answer %d: error %s, text %d, structured %d" % (n, r.get("isError"), len(t), len(s)))
print("; ".join(bad))
EOF
}
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$(cat "$XDG_RUNTIME_DIR/sbxtop/server.lock")/status"; }
# raw_controls FILE: the C0 controls (but newline and tab), DEL and C1 controls
# (as UTF-8) FILE holds, as escapes; nothing when none.
raw_controls() {
	python3 -c 'import re,sys; d=open(sys.argv[1],"rb").read(); print(" ".join(sorted(set(repr(m) for m in re.findall(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", d)))))' "$1"
}

# --- a hostile sandbox -------------------------------------------------------------
id=$("$SBXTOP" create --max-duration 1800 2> "$T/err")
case "$id" in sbx-*) ok "a sandbox to fill" ;; *) not_ok "create"; diag "$(cat "$T/err")"; exit 1 ;; esac
other=$("$SBXTOP" create --max-duration 1800 2> "$T/err")
case "$other" in sbx-*) ok "and another beside it" ;; *) not_ok "create"; diag "$(cat "$T/err")"; exit 1 ;; esac
"$SBXTOP" exec --root "$id" -- 'python3 -c "
import os
os.makedirs(\"/srv/junk\")
for i in range(210000):
    os.close(os.open(\"/srv/junk/%d\" % i, os.O_CREAT | os.O_WRONLY, 0o644))
line = (\"x\" * 63 + \"\\n\").encode()
os.makedirs(\"/workspace/big\")
for i in range(5000):
    with open(\"/workspace/big/f%04d.txt\" % i, \"wb\") as f:
        f.write(line * 4096)
"
mkdir -p /workspace/src && echo mine > /workspace/src/added.txt && chown -R sandbox: /workspace' \
	> "$T/fill.out" 2>&1
is "it holds 210000 files elsewhere and 5000 of 256 KiB in /workspace/big" \
	"$("$SBXTOP" exec "$id" -- 'ls /srv/junk | wc -l; ls /workspace/big | wc -l; stat -c %s /workspace/big/f0042.txt')" \
	"$(printf '210000\n5000\n262144')"

# The core server's peak memory before any diff of it.
before=$(hwm)

# --- a path walks its subtree only ----------------------------------------------------
is "diff ID /workspace/src finds the file added there, whatever lies elsewhere" \
	"$("$SBXTOP" diff "$id" /workspace/src --stat 2> "$T/err")" \
	"$(printf 'A /workspace/src/added.txt  5 bytes\n1 added, 0 changed, 0 removed; 5 bytes in files added or changed')"
is "and says nothing was cut" "$(cat "$T/err")" ""
mcp "{\"sandbox_id\":\"$id\",\"path\":\"src\"}" "{\"sandbox_id\":\"$id\"}"
like "sandbox_diff with path src names it" "$(answer_text 0)" '^A /workspace/src/added.txt  5 B$'
sum=$(answer_text 1)
like "the summary lists the agent's file though the walk stopped" "$sum" '^A /workspace/src/added.txt  5 B$'
like "and folds /workspace/big, 5000 files" "$sum" '^A /workspace/big/  5000 files, 1.3 GB \(many entries\)$'
like "and says the walk stopped at its limit" "$sum" 'The walk stopped at its limit of entries'
is "each answer within the budget, each line under 1 MiB" "$(answers_fit)" ""

# --- memory, and another sandbox's exec, under the biggest diffs ------------------
# The same exec alone first: its median over 9 runs.
exec_p50() {
	for _i in 1 2 3 4 5 6 7 8 9; do
		_t=$(ms); "$SBXTOP" exec "$other" -- true > /dev/null 2>&1; echo $(( $(ms) - _t ))
	done | sort -n | sed -n 5p
}
base=$(exec_p50)
big="{\"sandbox_id\":\"$id\",\"content\":true,\"max_files\":5000}"
bigpath="{\"sandbox_id\":\"$id\",\"path\":\"/workspace/big\",\"content\":true,\"max_files\":5000}"
( mcp "$big" "$bigpath" "$big" "{\"sandbox_id\":\"$id\",\"max_files\":5000}" "$bigpath" \
	"$big" "$big" "$bigpath" "$big" "$big" "$big" "$big"; echo $? > "$T/diffs.rc" ) &
dpid=$!
sleep 1
busy=$(exec_p50)
running=no; kill -0 "$dpid" 2>/dev/null && running=yes
wait "$dpid"
after=$(hwm)
diag "core server VmHWM: $before kB before the diffs, $after kB after ($(( (after - before) / 1024 )) MiB more)"
diag "exec in another sandbox: p50 $base ms alone, $busy ms while the diffs ran"
is "the diffs were still running when the last exec ended" "$running" yes
is "12 diffs with the biggest limits answered" "$(cat "$T/diffs.rc") $(wc -l < "$T/answers")" "0 12"
is "each within the budget, each line under 1 MiB" "$(answers_fit)" ""
check "the core server's peak memory grew by at most 64 MiB" test $((after - before)) -le 65536
check "an exec in another sandbox stays fast meanwhile (p50 $busy ms, $base ms alone)" \
	test "$busy" -le $((base * 4 + 1000))
like "a page of contents says how to go on" "$(answer_text 1)" \
	'More: items 1-1 of 5000 are shown; call sandbox_diff again with cursor "d1\.0\.[0-9]+\.[0-9a-f]{8}"'
cur=$(sed -n 2p "$T/answers" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["structuredContent"]["next_cursor"])')
mcp "{\"sandbox_id\":\"$id\",\"path\":\"/workspace/big\",\"content\":true,\"cursor\":\"$cur\"}"
like "the next page goes on with the same file's diff" "$(answer_text 0)" \
	'^A /workspace/big/f0000.txt  262.1 KB  \(its diff from line [0-9]+ of [0-9]+\)$'
"$SBXTOP" exec "$id" -- 'rm -rf /workspace/big' > /dev/null
"$SBXTOP" exec --root "$id" -- 'rm -rf /srv/junk' > /dev/null

# --- hostile names and lines on the terminal ----------------------------------------
"$SBXTOP" exec "$id" -- 'mkdir -p /workspace/evil && cd /workspace/evil &&
	printf "title \033]2;pwned\007 red \033[31mred\033[0m csi \302\233m\n" > "$(printf "t\033]0;x\007.txt")" &&
	printf "a\n" > "$(printf "c1\302\2332Jname")" && printf "b\n" > "$(printf "nl\nname")" &&
	printf "c\n" > "$(printf "cr\rname del\177")"' > /dev/null
for args in "" "--stat" "--json" "/workspace/evil"; do
	# shellcheck disable=SC2086
	"$SBXTOP" diff "$id" $args > "$T/out" 2>&1
	is "diff $args: no raw C0 or C1 control reaches the terminal" "$(raw_controls "$T/out")" ""
done
"$SBXTOP" diff "$id" /workspace/evil > "$T/out" 2>&1
like "the escape in a name is shown as text" "$(cat "$T/out")" '\+\+\+ b/workspace/evil/t\\x1b\]0;x\\x07\.txt'
like "and in a line" "$(cat "$T/out")" '^\+title \\x1b\]2;pwned\\x07 red \\x1b\[31mred\\x1b\[0m csi \\u009bm$'
like "a newline in a name stays in its line" "$(cat "$T/out")" '^\+\+\+ b/workspace/evil/nl\\x0aname$'
"$SBXTOP" diff "$id" --json > "$T/out"
is "--json keeps the names (escaped as JSON)" "$(python3 -c 'import json,sys; print(sorted(c["path"] for c in json.load(open(sys.argv[1]))["changes"] if "evil" in c["path"])[2])' "$T/out")" \
	"$(printf '/workspace/evil/nl\nname')"

# --- the CLI's own bounds -----------------------------------------------------------
"$SBXTOP" exec "$id" -- 'seq 1 20000 > /workspace/long.txt' > /dev/null
"$SBXTOP" diff "$id" /workspace/long.txt --max-bytes 20K > "$T/out" 2> "$T/err"
n=$(wc -c < "$T/out")
check "--max-bytes 20K stops near 20 KiB ($n bytes)" test "$n" -ge 20000 -a "$n" -le 21000
like "and says how to go on" "$(cat "$T/err")" "stopped after --max-bytes of output \(items 1-1 of 1\); the rest: sbxtop diff $id '/workspace/long.txt' --cursor d1\.0\.[0-9]+\."
c=$(sed -n 's/.*--cursor \(d1[^ ]*\).*/\1/p' "$T/err")
"$SBXTOP" diff "$id" /workspace/long.txt --cursor "$c" > "$T/out2" 2> "$T/err"
is "the cursor gives the rest: the two parts are the whole diff" \
	"$(cat "$T/out" "$T/out2" | grep -c '^+[0-9]')" 20000
"$SBXTOP" diff "$id" --max-bytes 0 > /dev/null 2> "$T/err"; rc=$?
is "a bad --max-bytes: exit 2" "$rc" 2
like "saying what it wants" "$(cat "$T/err")" 'wants a size from 1 to 1G'
"$SBXTOP" diff "$id" --cursor bogus > /dev/null 2> "$T/err"; rc=$?
is "a cursor no diff made: exit 2, saying to start again" "$rc $(cat "$T/err")" \
	"2 sbxtop: not a cursor a diff gave: bogus (start again without a cursor, or pass the next_cursor a diff gave, unchanged)"
"$BUILD/sbxtop-core" --diff-walker < /dev/null > "$T/out" 2> "$T/err"; rc=$?
is "the walker run by hand with no request: exit 2, nothing on stdout" "$rc $(wc -c < "$T/out")" "2 0"
like "saying what it wants" "$(cat "$T/err")" 'the core sends a request on standard input'

# --- as ordinary users ---------------------------------------------------------------
if [ "$(id -u)" -ne 0 ] || ! command -v useradd > /dev/null; then
	ok "# SKIP ordinary users: needs root and useradd"
	done_testing
	exit
fi
users_init
cp "$TOP/tests/tools/mcp-calls.py" "$U/" && chmod 0644 "$U/mcp-calls.py"
for range in yes no; do
	u=sbxd$$$range
	user_make "$u" "$range" || { not_ok "$u: useradd"; continue; }
	R() { "$U/run-$u" "$@"; }
	uid=$(R "$S" create --max-duration 900 2> "$T/err")
	case "$uid" in sbx-*) ok "$u (range $range): create" ;;
	*) not_ok "$u: create"; diag "$(cat "$T/err")"; continue ;; esac
	hm=$(R "$S" exec -n "$uid" -- 'printf %s "$HOME"')
	R "$S" exec -n "$uid" -- 'mkdir -p /workspace/src ~/.npm/_cacache && echo hi > /workspace/src/a.txt &&
		for i in 1 2 3; do echo $i > ~/.npm/_cacache/$i; done && chmod 700 ~/.npm &&
		printf "x\n" > "/workspace/src/$(printf "e\033[2Jvil")"' > /dev/null
	R "$S" diff "$uid" --stat > "$T/out" 2> "$T/err"
	is "$u: every directory read, a 0700 one of the sandbox's user too" "$(grep -v folded "$T/err")" ""
	is "$u: diff --stat lists the edits, /workspace first, the cache folded" \
		"$(cat "$T/out")" "$(printf 'A /workspace/src/a.txt  3 bytes\nA /workspace/src/e\\x1b[2Jvil  2 bytes\nA %s/.npm/  3 files, 6 bytes (cache)\n5 added, 0 changed, 0 removed; 11 bytes in files added or changed; 1 directory folded' "$hm")"
	is "$u: no raw control reaches the terminal" "$(raw_controls "$T/out")" ""
	R python3 "$U/mcp-calls.py" "$S" 60 tools/call \
		"{\"name\":\"sandbox_diff\",\"arguments\":{\"sandbox_id\":\"$uid\"}}" > "$T/answers"
	like "$u: sandbox_diff's summary through the core server" "$(answer_text 0)" \
		"^A $hm/.npm/  3 files, 6 B \\(cache\\)\$"
	R "$S" destroy "$uid" > /dev/null 2>&1
done
done_testing
