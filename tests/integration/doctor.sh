# sbxtop doctor: exit 0 when the default backend works, whatever the others lack
# (lambda with no region warns); a backend named with --backend, or made the
# default, fails when it cannot work; a broken configuration file is a FAIL line
# with its file and line while the other checks still run; --json says the same
# as the lines.
. "$(dirname "$0")/../lib.sh"

# No AWS configuration from the machine: lambda has no region here.
export HOME="$T/home"
mkdir -p "$HOME"
unset AWS_REGION AWS_DEFAULT_REGION AWS_PROFILE AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY \
	AWS_SESSION_TOKEN AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE SBXTOP_BACKEND \
	SBXTOP_LAMBDA_REGION SBXTOP_LAMBDA_IMAGE 2>/dev/null

"$SBXTOP" doctor > "$T/d" 2>&1; rc=$?
if grep -q '^FAIL' "$T/d"; then
	not_ok "doctor on this host (ns works): no FAIL line"; sed 's/^/# /' "$T/d"
else
	ok "doctor on this host (ns works): no FAIL line"
fi
is "... and exit status 0" "$rc" 0
like "... ns's checks ran" "$(cat "$T/d")" '^ok   user namespaces: '
like "... lambda without a region is a warning, saying why it does not fail" \
	"$(grep 'lambda' "$T/d")" \
	'^warn lambda: credentials and region: no AWS region configured \(only the lambda backend needs this; the default is ns\) \(fix: '
like "... the configuration line says there is no file" "$(head -n 1 "$T/d")" \
	"^ok   configuration: $XDG_CONFIG_HOME/sbxtop/sbxtop.conf absent: the defaults"

out=$("$SBXTOP" doctor --backend lambda 2>&1); rc=$?
is "doctor --backend lambda with no region: exit status 1" "$rc" 1
like "... a FAIL line with the fix" "$out" '^FAIL lambda: credentials and region: .*\(fix: set lambda_region'

out=$(SBXTOP_BACKEND=lambda "$SBXTOP" doctor 2>&1); rc=$?
is "lambda as the default backend (all checks): exit status 1" "$rc" 1
like "... its missing region is a FAIL" "$out" '^FAIL lambda: credentials and region: '

# A configuration file with an error on line 3.
mkdir -p "$XDG_CONFIG_HOME/sbxtop"
printf 'memory = 512\n# a comment\nno_such_option = 1\n' > "$XDG_CONFIG_HOME/sbxtop/sbxtop.conf"
out=$("$SBXTOP" doctor --backend ssh 2>&1); rc=$?
like "a broken config file: a FAIL line with the file and line" "$out" \
	"^FAIL configuration: $XDG_CONFIG_HOME/sbxtop/sbxtop.conf:3: unknown option 'no_such_option' \(fix: "
like "... the other checks still run" "$out" "ok   state directory: $XDG_STATE_HOME/sbxtop"
is "... exit status 1" "$rc" 1
out=$("$SBXTOP" ls 2>&1); rc=$?
like "other commands still stop at it" "$rc:$out" "^2:sbxtop: $XDG_CONFIG_HOME/sbxtop/sbxtop.conf:3: "

# --json: one object, the same checks as the lines.
"$SBXTOP" doctor --backend ssh --json > "$T/j" 2>"$T/j.err"; rc=$?
"$SBXTOP" doctor --backend ssh > "$T/t" 2>&1
is "--json with the broken file: exit status 1" "$rc" 1
is "--json: stdout is one JSON object, checks in the order of the lines" "$(python3 - "$T/j" "$T/t" <<'EOS'
import json, sys
d = json.load(open(sys.argv[1]))
lines = [l for l in open(sys.argv[2]).read().splitlines() if l]
tag = {'ok': 'ok  ', 'warn': 'warn', 'fail': 'FAIL'}
assert d['ok'] is False, d['ok']
assert len(d['checks']) == len(lines), (len(d['checks']), len(lines))
for c, l in zip(d['checks'], lines):
    assert set(c) == {'level', 'what', 'detail', 'fix'}, c
    assert l.startswith('%s %s: %s' % (tag[c['level']], c['what'], c['detail'])), (c, l)
    assert (c['fix'] is None) == (c['level'] == 'ok' or ' (fix: ' not in l), (c, l)
print('same')
EOS
)" same
like "--json: the configuration check carries file and line" "$(cat "$T/j")" \
	'"level":"fail","what":"configuration","detail":"[^"]*sbxtop.conf:3: unknown option'
rm "$XDG_CONFIG_HOME/sbxtop/sbxtop.conf"
out=$("$SBXTOP" doctor --backend ssh --json); rc=$?
is "--json with nothing wrong: exit 0" "$rc" 0
is "... and \"ok\": true" "$(json_get "$out" 'd["ok"]')" True
out=$("$SBXTOP" doctor --json --nope 2>&1); rc=$?
is "an unknown option: exit status 2" "$rc" 2
done_testing
