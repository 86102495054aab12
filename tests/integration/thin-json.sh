#!/bin/sh
# The thin sbxtop's own cJSON (cli/cjson.c) against the system's, the oracle:
# tests/tools/json-driver.c, built once with each, reads the same documents
# (valid, broken, cut short, mutated at random, nested to cJSON's limit and
# past it, numbers of every form) and must print the same thing for each:
# both parsers' verdicts, both printers' layouts, lookups, copies, detaches.
# Then the thin binary itself: static, and the commands that read JSON work.
. "$(dirname "$0")/../lib.sh"

THIN="$BUILD/tools/json-thin"
ORACLE="$BUILD/tools/json-cjson"
for b in "$THIN" "$ORACLE"; do
	[ -x "$b" ] || { not_ok "no $b: make unit builds it"; exit 1; }
done

/usr/bin/python3 - "$T/cases" <<'PY'
import json, random, sys
rnd = random.Random(20261203)
cases = []
def add(s):
    cases.append(s if isinstance(s, bytes) else s.encode("utf-8", "surrogatepass"))
fixed = [
    '{}', '[]', '""', 'null', 'true', 'false', '0', '-0', '1', '-1', '1.5', '1e3', '1E-3', '1.', '.5',
    '01', '+1', '-', '1e', '1e+', '0x10', '1e400', '-1e400', '4e-330', '2147483647', '2147483648',
    '-2147483648', '-2147483649', '9007199254740993', '0.1', '0.30000000000000004', '1e21', '123456789012345678901234567890123456789012345678901234567890123456789',
    '{"a":1,"A":2,"b":[1,2,{"c":null}]}', '{"k":"v","k":"w"}', ' \t\r\n {"x" : [ ] , "y" : { } } ',
    '"\\u00e9\\u20ac\\ud83d\\ude00"', '"\\ud83d"', '"\\ude00"', '"\\ud83d\\u0041"', '"\\uZZZZ"',
    '"\\u0000x"', '"a\\qb"', '"tab\there"', '"\\b\\f\\n\\r\\t\\"\\\\\\/"', '"\x01\x1f\x7f"',
    '"unterminated', '"ends in backslash\\', '[1,]', '[,1]', '{"a"}', '{"a":}', '{a:1}', '{"a":1,}',
    '[1 2]', 'nul', 'tru', 'fals', 'nullx', 'truefalse', '[true,false,null]', '{"":""}',
    '\xef\xbb\xbf{"bom":1}', '\xef\xbb\xbf', '[1]garbage', '{"a":1} {"b":2}', '\x00', ' ', '',
    '{"id":"sbx-1","limits":{"memory_mib":512,"cpus":1.5},"env":{"A":"b"},"forwards":[]}',
]
for s in fixed:
    add(s)
add(b'"raw \xff\xfe bytes"')
add(b'[1,\x00 2]')
for d in (999, 1000, 1001):
    add("[" * d + "]" * d)
    add('{"a":' * d + "1" + "}" * d)
def value(depth):
    k = rnd.randrange(9 if depth < 6 else 5)
    if k == 0:
        return rnd.choice([None, True, False])
    if k == 1:
        return rnd.randint(-2**40, 2**40)
    if k == 2:
        return rnd.choice([rnd.uniform(-1e6, 1e6), rnd.uniform(-1, 1) * 10 ** rnd.randint(-320, 308),
                           float(rnd.randint(-10**17, 10**17)), rnd.random()])
    if k in (3, 4):
        alphabet = "abcXYZ \"\\/\b\f\n\r\t\x01\x1f\x7f\u00e9\u20ac\U0001F600"
        return "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(12)))
    if k in (5, 6):
        return [value(depth + 1) for _ in range(rnd.randrange(5))]
    return {rnd.choice(["a", "A", "b", "key", "KEY", "", "\u00e9", "x y"]) + str(rnd.randrange(3)): value(depth + 1)
            for _ in range(rnd.randrange(5))}
def spaced(text):
    return "".join(c + rnd.choice(["", "", "", " ", "\n", "\t"]) if c in ",:[]{}" else c for c in text)
for _ in range(3000):
    text = json.dumps(value(0), ensure_ascii=rnd.random() < 0.5)
    if rnd.random() < 0.3:
        text = spaced(text)
    add(text)
    b = text.encode("utf-8", "surrogatepass")
    if rnd.random() < 0.3 and len(b) > 1:
        add(b[:rnd.randrange(len(b))])
    if rnd.random() < 0.3 and b:
        m = bytearray(b)
        for _ in range(rnd.randint(1, 3)):
            m[rnd.randrange(len(m))] = rnd.choice(b'{}[]",:\\ 0123456789.eE-+tfnu\x00\xff')
        add(bytes(m))
with open(sys.argv[1], "wb") as f:
    for c in cases:
        f.write(b"%d\n" % len(c) + c)
print("# %d documents" % len(cases))
PY
"$THIN" < "$T/cases" > "$T/thin.out" 2> "$T/thin.err"
rc_thin=$?
"$ORACLE" < "$T/cases" > "$T/oracle.out" 2> "$T/oracle.err"
rc_oracle=$?
is "the driver over cli/cjson.c ran to the end" "$rc_thin" 0
is "the driver over the system's cJSON ran to the end" "$rc_oracle" 0
n=$(grep -c '^--- ' "$T/oracle.out")
check "it read every document ($n)" test "$n" -gt 2000
parsed=$(grep -c '^pretty ' "$T/oracle.out")
check "the oracle parsed some ($parsed) and refused some" \
	test "$parsed" -gt 1000 -a "$parsed" -lt "$n"
if cmp -s "$T/thin.out" "$T/oracle.out"; then
	ok "cli/cjson.c answers as cJSON does, call for call ($n documents)"
else
	not_ok "cli/cjson.c answers as cJSON does, call for call"
	diff "$T/oracle.out" "$T/thin.out" | head -n 20 | sed 's/^/# /'
fi

# --- the thin binary ---------------------------------------------------------------
case "$BUILD" in
*/san) ok "# SKIP a sanitizer build links the thin sbxtop dynamically" ;;
*)
	like "the thin sbxtop is linked statically" "$(file -L "$SBXTOP")" 'static'
	check "... and needs no shared library" sh -c "! readelf -d '$SBXTOP' | grep -q NEEDED"
	;;
esac
id=$("$SBXTOP" create --name json-one 2> "$T/create.err")
like "create through it (a request and an answer in JSON)" "$id" '^sbx-'
at_exit "'$SBXTOP' destroy '$id'"
out=$("$SBXTOP" ls --json)
is "ls --json: the core server's list, read and written again" \
	"$(json_get "$out" '[s["name"] for s in d]')" "['json-one']"
is "exec: the answer's exit status and output" "$("$SBXTOP" exec "$id" -- 'printf "é\t\"x\""; exit 3'; echo " $?")" "é	\"x\" 3"
like "status reads the record" "$("$SBXTOP" status "$id")" 'name: +json-one'
env -u HOME "$SBXTOP" ls > "$T/nohome.out" 2>&1
like "without HOME it runs the full binary, which finds the home directory" \
	"$(cat "$T/nohome.out")" 'json-one'
done_testing
