# The agent against what a sandbox's user lays down before or around it: file
# names that are not UTF-8 (the listing stays valid JSON and names them exactly)
# and a background log directory made by someone else before the agent started.
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
done_testing
