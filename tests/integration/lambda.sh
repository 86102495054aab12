# The lambda backend end to end against tests/fakes/aws_microvms.py, a strict
# stand-in for AWS Lambda MicroVMs that checks every SigV4 signature and runs a
# real sbxtop-agent per MicroVM behind a token-checking endpoint proxy served over
# HTTPS, as AWS's is, with a CA this test makes (trusted through AWS_CA_BUNDLE).
# create -> exec -> cp -> a shell -> forward (direct HTTP and tunnels) -> suspend -> resume ->
# destroy; an untrusted certificate; a port the token does not allow; a tampered signature; token expiry; throttling; a vanished VM; a
# missing image; an oversized payload; max_duration over the limit; doctor;
# credentials from each source of the chain.  `setup aws`: lambda-setup.sh.
. "$(dirname "$0")/../lib.sh"

need_botocore

REGION=us-west-2
IMG="arn:aws:lambda:$REGION:123456789012:microvm-image:sbxtop"
AK=AKIAFAKEFAKEFAKE0001
SK='fake/secret+key/0123456789abcdefghijklm'
export HOME="$T/home"
mkdir -p "$HOME"
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_REGION AWS_DEFAULT_REGION \
	AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_CREDENTIALS_FULL_URI \
	AWS_CONTAINER_AUTHORIZATION_TOKEN AWS_ENDPOINT_URL_LAMBDA_MICROVMS AWS_ENDPOINT_URL_STS
export AWS_EC2_METADATA_DISABLED=true SBXTOP_AWS_BACKOFF_MS=20

# A CA of the test's own, and the endpoints' certificate for the loopback
# address the fake gives them (127.0.0.1, with localhost too).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 \
	-subj "/CN=sbxtop test CA" > "$T/openssl.log" 2>&1 &&
openssl req -newkey rsa:2048 -nodes -keyout "$T/ep.key" -out "$T/ep.csr" \
	-subj "/CN=127.0.0.1" >> "$T/openssl.log" 2>&1 &&
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' > "$T/ep.ext" &&
openssl x509 -req -in "$T/ep.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
	-out "$T/ep.pem" -days 2 -extfile "$T/ep.ext" >> "$T/openssl.log" 2>&1 ||
	{ cat "$T/openssl.log"; echo "Bail out! cannot make the test CA"; exit 1; }
export AWS_CA_BUNDLE="$T/ca.pem"

# fake_start NAME [ARGS...]: a fake AWS on a random port, endpoints on HTTPS; sets URL.
fake_start() {
	_fn=$1; shift
	"$PY" "$TOP/tests/fakes/aws_microvms.py" --agent "$AGENT" --dir "$T/$_fn" \
		--port-file "$T/$_fn.port" --region "$REGION" --access-key "$AK" --secret-key "$SK" \
		--tls-cert "$T/ep.pem" --tls-key "$T/ep.key" "$@" > "$T/$_fn.log" 2>&1 &
	_pid=$!
	at_exit "kill $_pid; wait $_pid"
	for _i in $(seq 250); do [ -s "$T/$_fn.port" ] && break; sleep 0.02; done
	URL="http://127.0.0.1:$(cat "$T/$_fn.port")"
}
ctl() { curl -s -X POST -d "${2:-}" "$URL/_fake/$1"; }

fake_start aws --image "$IMG" --max-page 2
export AWS_ENDPOINT_URL="$URL" AWS_ACCESS_KEY_ID="$AK" AWS_SECRET_ACCESS_KEY="$SK"
export SBXTOP_LAMBDA_IMAGE="$IMG"
# Shells through shell tokens need the SHELL_INGRESS connector, which is opt-in
# (its ARN is unconfirmed on AWS); the endpoint-token path is checked below too.
export SBXTOP_LAMBDA_SHELL_INGRESS=1
L="$SBXTOP"

# --- create, exec, files ----------------------------------------------------
t0=$(date +%s%N)
id=$($L create --backend lambda --name lam1 --env GREETING=hello 2>"$T/err")
rc=$?
t1=$(date +%s%N)
is "create --backend lambda succeeds" "$rc" 0
[ $rc -eq 0 ] || cat "$T/err"
at_exit "$L destroy $id"
diag "create took $(( (t1 - t0) / 1000000 )) ms (RunMicrovm, RUNNING, token, agent health)"
like "an sbx id" "$id" '^sbx-[0-9a-f]{6}$'
out=$($L exec "$id" -- 'echo "$GREETING from $(pwd)"')
like "exec through the endpoint proxy, env from the run hook" "$out" '^hello from /'
st=$($L status "$id")
like "status: running on lambda" "$st" 'backend: +lambda'
like "status: agent answering through the HTTPS endpoint" "$st" 'agent: +https://127\.0\.0\.1:[0-9]+ \(answering'
vms=$(ctl vms)
mvm=$(json_get "$vms" 'list(d)[0]')
body=$(json_get "$vms" 'json.dumps(d[list(d)[0]]["body"], sort_keys=True)')
like "RunMicrovm: idlePolicy with all three fields" "$body" \
	'"idlePolicy": \{"autoResumeEnabled": true, "maxIdleDurationSeconds": [0-9]+, "suspendedDurationSeconds": [0-9]+\}'
like "RunMicrovm: ingress connector ARN" "$body" "network-connector:aws-network-connector:ALL_INGRESS"
like "RunMicrovm: a clientToken" "$body" '"clientToken": "sbxtop-sbx-'
like "RunMicrovm: maximumDurationInSeconds from max_duration" "$body" '"maximumDurationInSeconds": 14400'
like "the run hook payload carries the secret" "$body" 'runHookPayload": "\{\\"secret\\":\\"[0-9a-f]{16,}'
hooks=$(ctl hooks)
like "lifecycle hooks called: ready, run" "$hooks" '\["ready", "run"'
grep -q "$AK" "$XDG_STATE_HOME/sbxtop/sandboxes.json"
is "no AWS key in the registry" "$?" 1
if $L exec "$id" -- 'env' | grep -q AWS_; then not_ok "no AWS variable reaches the sandbox"
else ok "no AWS variable reaches the sandbox"; fi

printf 'data 123\n' > "$T/f.txt"
$L cp "$T/f.txt" "$id:f.txt"
is "cp a file in" "$($L exec "$id" -- cat f.txt)" "data 123"
mkdir -p "$T/tree/a"; echo deep > "$T/tree/a/b"
$L cp "$T/tree" "$id:tree" && $L cp "$id:tree" "$T/back"
is "cp a directory in and back out" "$(cat "$T/back/a/b" 2>&1)" "deep"

# --- shells: the agent's PTY through the HTTPS endpoint, a shell token ----------
# The same client and the same frames as on the other backends (core-server.sh).
t0=$(date +%s%N)
out=$(SBXTOP="$L" python3 "$TOP/tests/tools/core-client.py" pty "$id" 2>&1)
t1=$(date +%s%N)
diag "the pty scenario (two shells through the TLS endpoint, five refusals) took $(( (t1 - t0) / 1000000 )) ms"
ms=$(SBXTOP="$L" python3 - "$TOP/tests/tools/core-client.py" "$id" <<'PYEOF'
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("cc", sys.argv[1])
cc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cc)
t = time.monotonic()
p = cc.Pty()
p.call('sbxtop/pty', {'sandbox': sys.argv[2], 'cols': 80, 'rows': 24})
p.frame(0, b'echo OPENED$((6*7))\n')
ok = p.read_until(b'OPENED42')
opened = time.monotonic() - t
lat = []
for i in range(20):
    t = time.monotonic()
    p.frame(0, b'echo K%d\n' % i)
    p.read_until(b'K%d\r\n' % i)
    lat.append(time.monotonic() - t)
p.frame(0, b'exit\n')
lat.sort()
print("%d %d %.1f" % (ok, opened * 1000, lat[10] * 1000))
PYEOF
)
set -- $ms
is "a shell opened through the endpoint answers its first command" "${1:-0}" 1
diag "shell through the TLS endpoint: open to first output ${2:-?} ms, a typed line echoed back ${3:-?} ms (median of 20)"
is "sbxtop/pty on a lambda sandbox answers" "$(json_get "$out" 'd["answer"]["result"]')" "{}"
is "shell: input runs, at the size asked for" "$(json_get "$out" 'd["mark"]')" True
is "shell: a resize frame reaches the terminal" "$(json_get "$out" 'd["resized"]')" True
is "shell: the exit frame comes with the shell's status" "$(json_get "$out" 'd["exit"]')" \
	"{'exit_code': 3, 'signal': None}"
is "shell: and the connection closes" "$(json_get "$out" 'd["closed_after_exit"]')" True
is "shell: a client that goes away" "$(json_get "$out" 'd["started"]')" True
like "RunMicrovm attached the SHELL_INGRESS connector" "$(json_get "$(ctl vms)" \
	'json.dumps(d["'"$(json_get "$(ctl vms)" 'list(d)[0]')"'"]["body"]["ingressNetworkConnectors"])')" \
	'aws-network-connector:ALL_INGRESS", "arn:aws:lambda:us-west-2:aws:network-connector:aws-network-connector:SHELL_INGRESS'
like "the shell was authorised by CreateMicrovmShellAuthToken" "$(ctl log)" \
	'"CreateMicrovmShellAuthToken", 200'
like "and went through the endpoint as a shell upgrade to the agent" "$(ctl log)" \
	'"proxy", 200, "shell port 8080 upgrade"'
ctl shell-mode '{"mode": "refuse"}' > /dev/null
out=$(SBXTOP="$L" python3 "$TOP/tests/tools/core-client.py" pty "$id" 2>&1)
ctl shell-mode '{"mode": "agent"}' > /dev/null
is "an endpoint that refuses the shell token: the shell still opens" "$(json_get "$out" 'd["mark"]')" True
like "with the endpoint token, after the refusal" "$(ctl log)" \
	'"proxy", 403, "shell token refused"\], \["proxy", 200, "port 8080 upgrade"'
hung() { $L exec -n "$id" -- 'for f in /proc/[0-9]*/cmdline; do tr "\0" " " < $f; echo; done 2>/dev/null | grep -c "^sleep 777"'; }
n=1; for _i in $(seq 50); do n=$(hung); [ "$n" = 0 ] && break; sleep 0.2; done
is "shell: whose client went away is hung up" "$n" 0

# --- the endpoint refuses what AWS's proxy refuses ---------------------------
ep=$(json_get "$($L status "$id" --json 2>/dev/null || echo '{}')" 'd.get("agent_endpoint","")' 2>/dev/null)
[ -n "$ep" ] || ep=$(sed -n 's/.*"agent_endpoint":[ ]*"\([^"]*\)".*/\1/p' "$XDG_STATE_HOME/sbxtop/sandboxes.json" | head -1)
like "the endpoint is HTTPS" "$ep" '^https://127\.0\.0\.1:'
is "endpoint without a token: 403" "$(curl -s --cacert "$T/ca.pem" -o /dev/null -w '%{http_code}' "$ep/health")" 403
is "endpoint with a made-up token: 403" \
	"$(curl -s --cacert "$T/ca.pem" -o /dev/null -w '%{http_code}' -H 'X-aws-proxy-auth: forged' "$ep/health")" 403

# --- forwards through the HTTPS endpoint ---------------------------------------
# The fake's MicroVM runs its processes on this host, so its servers listen on
# this host's loopback; the forwards still go the whole way: TLS to the endpoint,
# the token, then the agent's tunnel (or, with --http, straight to the port).
FT="$TOP/tests/forward"
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
up() { "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $1), timeout=1)" 2>/dev/null; }
rec() {	# rec EXPR: EXPR over the sandbox's registry record r
	"$PY" -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))["sandboxes"] if x["id"]==sys.argv[2]][0]; print(eval(sys.argv[3]))' \
		"$XDG_STATE_HOME/sbxtop/sandboxes.json" "$id" "$1"
}
WP=$(free_port); EP=$(free_port); HP=$(free_port); SP=$(free_port)
$L cp "$FT/echo.py" "$id:echo.py"
$L cp "$TOP/tests/fakes/sum_server.py" "$id:sum_server.py"
$L exec -n "$id" -- 'mkdir -p www sums && echo hello-from-the-microvm > www/index.html'
$L exec -n "$id" --background -- "cd www && exec python3 -m http.server $WP --bind 127.0.0.1" > /dev/null
$L exec -n "$id" --background -- "exec python3 echo.py $EP sums" > /dev/null
$L exec -n "$id" --background -- "cd www && exec python3 -m http.server $HP --bind 0.0.0.0" > /dev/null
$L exec -n "$id" --background -- "exec python3 sum_server.py $SP" > /dev/null
until_ok 20 up "$WP" && until_ok 20 up "$EP" && until_ok 20 up "$HP" && until_ok 20 up "$SP"
is "servers inside the MicroVM listen (http, echo, http on 0.0.0.0)" "$?" 0

out=$($L forward "$id" "$WP" "$EP" 2> "$T/fwd.err")
is "forward through the HTTPS endpoint starts" "$?" 0
at_exit "$L forward --stop $id"
WF=$(echo "$out" | sed -n 1p); EF=$(echo "$out" | sed -n 2p)
is "HTTP through the TLS tunnel: the MicroVM's page" \
	"$(curl -s -m 10 "$WF/index.html")" "hello-from-the-microvm"
out=$(for i in 1 2 3 4 5; do curl -s -m 10 -o /dev/null -w '%{http_code} ' "$WF/index.html"; done)
is "five requests in a row" "$out" "200 200 200 200 200 "
like "the tunnel went through the endpoint as a WebSocket upgrade to the agent's port" \
	"$(ctl log)" '"proxy", 200, "port 8080 upgrade"'
set -- $("$PY" "$FT/tcp-client.py" "${EF##*:}" bulk 8)
is "8 MB raw TCP through the TLS tunnel: what came back is what was sent (sha256)" "${2:-}" "${1:-x}"
is "8 MB raw TCP: every byte came back" "${3:-0}" 8388608
sent=${1:-x}
server_got() { $L exec -n "$id" -- 'cat sums/*.sha256 2>/dev/null' | grep -qx "$sent"; }
check "8 MB raw TCP: what the server got is what was sent (sha256)" until_ok 10 server_got
like "forward --list counts the bytes" "$($L forward --list "$id")" "127\.0\.0\.1:${EF##*:} +$EP "
# A 101 whose Sec-WebSocket-Accept does not answer our key (a man in the middle
# swapped it) carries nothing.
ctl ws-key '{"key": "dGhlIHNhbXBsZSBub25jZQ=="}' > /dev/null
out=$(curl -s -m 10 "$WF/index.html")
is "a 101 with the wrong Sec-WebSocket-Accept relays nothing" "$out" ""
says_why() { $L forward --list --json "$id" | grep -q 'wrong Sec-WebSocket-Accept'; }
check "and the forward says why (its last error)" until_ok 5 says_why
ctl ws-key '{}' > /dev/null
is "with the key left alone the tunnel works again" "$(curl -s -m 10 "$WF/index.html")" \
	"hello-from-the-microvm"

# Straight to a port (--http): X-aws-proxy-port, and a token that allows it.
tok=$(rec 'r["agent_headers"]["X-aws-proxy-auth"]')
code() { curl -s --cacert "$T/ca.pem" -o /dev/null -w '%{http_code}' -H "X-aws-proxy-auth: $1" \
	-H "X-aws-proxy-port: $2" "$ep/index.html"; }
is "the endpoint refuses a port the token does not allow (403)" "$(code "$tok" "$HP")" 403
like "the fake says which port" "$(ctl log)" "\"proxy\", 403, \"port $HP\""
out=$($L forward "$id" "$HP" --http 2> "$T/fwd2.err")
is "forward --http starts" "$?" 0
[ -n "$out" ] || diag "$(cat "$T/fwd2.err")"
is "the token was re-minted with the new port" "$(rec 'sorted(r["backend_data"]["tokenPorts"])')" "[8080, $HP]"
tok2=$(rec 'r["agent_headers"]["X-aws-proxy-auth"]')
is "the re-minted token opens that port" "$(code "$tok2" "$HP")" 200
is "direct HTTP forward: the page" "$(curl -s -m 10 "$out/index.html")" "hello-from-the-microvm"
out2=$($L forward "$id" "$SP" --http 2> "$T/fwd3.err")
head -c 3000000 /dev/urandom > "$T/body"
want="$(sha256sum < "$T/body" | cut -d' ' -f1) 3000000 -"
is "direct HTTP: a 3 MB POST (Content-Length) arrives whole, no proxy header or secret leaks" \
	"$(curl -s -m 20 --data-binary @"$T/body" "$out2/")" "$want"
is "direct HTTP: a 3 MB chunked POST arrives whole" \
	"$(curl -s -m 20 -H 'Transfer-Encoding: chunked' --data-binary @"$T/body" "$out2/")" "$want"
is "direct HTTP: the client's own X-aws-proxy-port is dropped, not obeyed" \
	"$(curl -s -m 20 -H "X-aws-proxy-port: $WP" --data-binary @"$T/body" "$out2/")" "$want"
like "direct requests carried X-aws-proxy-port" "$(ctl log)" "\"proxy\", 200, \"port $HP\""

# A token the endpoint refuses: the tunnel's 403 makes the forward re-mint.
ctl expire-tokens > /dev/null
n0=$(json_get "$(ctl log)" 'sum(1 for x in d["log"] if x[0]=="CreateMicrovmAuthToken")')
fwd_page() { [ "$(curl -s -m 5 "$WF/index.html")" = hello-from-the-microvm ]; }
check "after the endpoint refused the token, the forward works again" until_ok 15 fwd_page
n1=$(json_get "$(ctl log)" 'sum(1 for x in d["log"] if x[0]=="CreateMicrovmAuthToken")')
check "it re-minted (CreateMicrovmAuthToken called again)" [ "$n1" -gt "$n0" ]
$L forward --stop "$id" > /dev/null 2>&1

# --- an endpoint certificate this host does not trust ---------------------------
err=$(env -u AWS_CA_BUNDLE $L exec "$id" -- echo hi 2>&1)
is "untrusted endpoint certificate: exec refused" "$?" 125
like "the error says the certificate is not trusted" "$err" 'TLS certificate is not trusted'
like "the error names AWS_CA_BUNDLE" "$err" 'AWS_CA_BUNDLE'
env -u AWS_CA_BUNDLE $L forward "$id" "$WP" --foreground > "$T/untrusted.out" 2> "$T/untrusted.err" &
upid=$!
at_exit "kill $upid"
for _i in $(seq 100); do [ -s "$T/untrusted.out" ] && break; sleep 0.05; done
UF=$(head -1 "$T/untrusted.out")
is "untrusted certificate: a forward's connection gets nothing" "$(curl -s -m 10 "$UF/index.html")" ""
le() { $L forward --list --json "$id" | grep -q 'not trusted.*AWS_CA_BUNDLE'; }
check "untrusted certificate: forward --list says why, naming AWS_CA_BUNDLE" until_ok 5 le
kill $upid; wait $upid 2>/dev/null

# --- token expiry: re-minted, not surfaced ------------------------------------
ctl expire-tokens > /dev/null
out=$($L exec "$id" -- echo still-here 2>&1)
is "an expired endpoint token is re-minted transparently" "$out" "still-here"

# --- throttling ------------------------------------------------------------------
ctl throttle '{"op": "GetMicrovm", "count": 2, "status": 429}' > /dev/null
$L status "$id" > "$T/st" 2>&1
like "GetMicrovm throttled twice: retried, status works" "$(cat "$T/st")" 'state: +running'
n429=$(json_get "$(ctl log)" 'sum(1 for x in d["log"] if x[0]=="GetMicrovm" and x[1]==429)')
is "the fake answered 429 twice" "$n429" 2

# --- suspend and resume ----------------------------------------------------------
$L suspend "$id"
is "suspend" "$?" 0
like "ls says suspended" "$($L ls)" "$id +lam1 +lambda +suspended"
$L resume "$id"
is "resume" "$?" 0
is "exec after resume" "$($L exec "$id" -- echo back)" "back"
like "suspend and resume hooks called" "$(ctl hooks)" '"suspend", "resume"'

# --- a tampered signature: the fake refuses, the client says what to do --------
err=$(AWS_SECRET_ACCESS_KEY="not-the-key" $L suspend "$id" 2>&1)
rc=$?
is "a wrong secret key: refused" "$rc" 1
like "the error names the AWS exception" "$err" 'InvalidSignatureException'
like "the hint points at doctor" "$err" 'sbxtop doctor --backend lambda'
err=$(AWS_SESSION_TOKEN=bogus $L suspend "$id" 2>&1)
like "a session token this account does not know: refused" "$err" 'UnrecognizedClientException'
err=$(AWS_ACCESS_KEY_ID=AKIAUNKNOWN $L suspend "$id" 2>&1)
like "an unknown access key: refused" "$err" 'UnrecognizedClientException'
like "the sandbox is still running after refused calls" "$($L ls)" "$id +lam1 +lambda +running"

# --- validation, client side and server side -----------------------------------
err=$($L create --backend lambda --max-duration 28801 2>&1)
is "max_duration over 28800: refused" "$?" 2
like "the message gives the range" "$err" '1 to 28800 seconds'
big=$(head -c 5000 /dev/zero | tr '\0' x)
err=$($L create --backend lambda --env "BIG=$big" 2>&1)
is "an oversized run hook payload: refused" "$?" 2
like "the message gives the limit" "$err" 'over the 4096-byte limit'
err=$(SBXTOP_LAMBDA_IMAGE="arn:aws:lambda:$REGION:123456789012:microvm-image:nope" \
	$L create --backend lambda 2>&1)
is "a missing image: refused" "$?" 2
like "a missing image: ResourceNotFoundException" "$err" 'ResourceNotFoundException'
like "a missing image: run sbxtop setup aws" "$err" 'sbxtop setup aws'
err=$(SBXTOP_LAMBDA_IMAGE= $L create --backend lambda 2>&1)
like "no image configured: run sbxtop setup aws" "$err" 'sbxtop setup aws'
err=$(SBXTOP_LAMBDA_IMAGE="not-an-arn" AWS_REGION=$REGION $L create --backend lambda 2>&1)
like "a malformed image ARN: ValidationException from the service" "$err" 'ValidationException'
is "nothing left from the failed creates" "$(json_get "$(ctl vms)" 'len(d)')" 1

# --- a vanished VM: reported once, with its reason ------------------------------
id2=$($L create --backend lambda --name lam2 2>"$T/err2")
at_exit "$L destroy $id2"
m2=$(json_get "$(ctl vms)" '[k for k in d if k != "'"$mvm"'"][0]')
ctl vanish "{\"microvmId\": \"$m2\", \"reason\": \"Maximum duration reached\"}" > /dev/null
$L ls > "$T/ls1" 2> "$T/ls1.err"
like "ls: the vanished VM is terminated" "$(cat "$T/ls1")" "$id2 +lam2 +lambda +terminated"
like "ls: reported with AWS's reason" "$(cat "$T/ls1.err")" 'Maximum duration reached'
$L ls > /dev/null 2> "$T/ls2.err"
is "reported once" "$(grep -c 'Maximum duration' "$T/ls2.err")" 0
$L destroy "$id2"
is "destroy a vanished sandbox: ok" "$?" 0

# --- pagination ---------------------------------------------------------------------
n=$(json_get "$(ctl vms)" 'len(d)')
is "the fake holds every VM made" "$n" 2
ids=""
for k in 3 4; do
	x=$($L create --backend lambda --name "lam$k") && ids="$ids $x"
done
at_exit "for x in $ids; do $L destroy \$x; done"

# --- doctor -----------------------------------------------------------------------
d=$(AWS_REGION=$REGION $L doctor --backend lambda 2>&1)
is "doctor passes against the fake" "$?" 0
like "doctor: credential source" "$d" 'ok +lambda: credentials: environment'
like "doctor: STS identity" "$d" 'identity: arn:aws:iam::123456789012:user/'
like "doctor: endpoint reachable" "$d" 'ok +lambda: endpoint \(ListMicrovms\)'
like "doctor: image CREATED with its latest active version" "$d" 'ok +lambda: image: .*: CREATED, active version 1'
like "doctor: ListMicrovms followed nextToken over every page" "$d" 'ok +lambda: MicroVMs: 4 in us-west-2 \(3 running'
nl=$(json_get "$(ctl log)" 'sum(1 for x in d["log"] if x[0]=="ListMicrovms")')
check "ListMicrovms was called page by page (pages of 2)" [ "$nl" -ge 3 ]
d=$(AWS_REGION=$REGION SBXTOP_LAMBDA_IMAGE= $L doctor --backend lambda 2>&1)
is "doctor without an image: exit 1" "$?" 1
like "doctor without an image: says run setup" "$d" 'FAIL lambda: image.*sbxtop setup aws'

# --- destroy ------------------------------------------------------------------------
$L destroy "$id"
is "destroy" "$?" 0
like "terminate hook called" "$(ctl hooks)" '"terminate"'
# TerminateMicrovm is asynchronous (TERMINATING, then TERMINATED once the
# terminate hook has stopped what ran, the test's servers included).
terminated() { [ "$(json_get "$(ctl vms)" 'd["'"$mvm"'"]["state"]')" = TERMINATED ]; }
check "the VM is TERMINATED in AWS" until_ok 15 terminated

# --- credentials from each source ---------------------------------------------------
# Each one runs a status call against the fake (signed with what the source gave).
cred_check() {	# cred_check "what" ENV... : a signed ListMicrovms works
	_w=$1; shift
	if env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_REGION=$REGION "$@" \
		$L doctor --backend lambda > "$T/cred.out" 2>&1; then ok "credentials: $_w"
	else not_ok "credentials: $_w"; cat "$T/cred.out"; fi
}
mkdir -p "$HOME/.aws"
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$AK" "$SK" \
	> "$HOME/.aws/credentials"
cred_check "shared credentials file, default profile"
like "doctor names the source" "$(cat "$T/cred.out")" 'shared credentials \(profile default\)'
printf '[dev]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$AK" "$SK" > "$T/creds2"
printf '[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n' > "$HOME/.aws/credentials"
cred_check "AWS_SHARED_CREDENTIALS_FILE with AWS_PROFILE" AWS_SHARED_CREDENTIALS_FILE="$T/creds2" AWS_PROFILE=dev
rm -f "$HOME/.aws/credentials"
cat > "$T/proc.sh" <<EOF
#!/bin/sh
printf '{"Version": 1, "AccessKeyId": "$AK", "SecretAccessKey": "$SK", "Expiration": "2099-01-01T00:00:00Z"}'
EOF
chmod +x "$T/proc.sh"
printf '[profile sso]\nregion = %s\ncredential_process = %s\n' "$REGION" "$T/proc.sh" > "$T/awsconfig"
cred_check "credential_process (config file profile)" AWS_CONFIG_FILE="$T/awsconfig" AWS_PROFILE=sso
like "doctor names credential_process" "$(cat "$T/cred.out")" 'credential_process \(profile sso\)'
printf '#!/bin/sh\necho "{\\"Version\\": 1, \\"AccessKeyId\\": \\"a\\", \\"SecretAccessKey\\": \\"b\\", \\"Expiration\\": \\"2001-01-01T00:00:00Z\\"}"\n' > "$T/old.sh"
chmod +x "$T/old.sh"
printf '[profile old]\ncredential_process = %s\n' "$T/old.sh" > "$T/config2"
out=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_REGION=$REGION AWS_CONFIG_FILE="$T/config2" \
	AWS_PROFILE=old $L doctor --backend lambda 2>&1)
like "credential_process: expired credentials are an error" "$out" 'expired at 2001-01-01'
# Container and instance metadata: a loopback fake of each (tests/fakes/aws_metadata.py).
"$PY" "$TOP/tests/fakes/aws_metadata.py" --port-file "$T/md.port" --access-key "$AK" \
	--secret-key "$SK" --container-token tok-123 > "$T/md.log" 2>&1 &
mdpid=$!
at_exit "kill $mdpid"
for _i in $(seq 250); do [ -s "$T/md.port" ] && break; sleep 0.02; done
MD="http://127.0.0.1:$(cat "$T/md.port")"
cred_check "container credentials (FULL_URI + authorization token)" \
	AWS_CONTAINER_CREDENTIALS_FULL_URI="$MD/container/creds" AWS_CONTAINER_AUTHORIZATION_TOKEN=tok-123
out=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_REGION=$REGION \
	AWS_CONTAINER_CREDENTIALS_FULL_URI="$MD/container/creds" AWS_CONTAINER_AUTHORIZATION_TOKEN=bad \
	$L doctor --backend lambda 2>&1)
like "container credentials: a wrong token is refused" "$out" 'container credentials: .* answered 401'
cred_check "instance metadata, IMDSv2" AWS_EC2_METADATA_DISABLED=false \
	AWS_EC2_METADATA_SERVICE_ENDPOINT="$MD"
like "doctor names IMDSv2 and the role" "$(cat "$T/cred.out")" 'instance metadata \(IMDSv2, role sbxtop-role\)'
like "IMDSv2: the token PUT came before the GETs" "$(curl -s "$MD/_log")" 'PUT /latest/api/token,GET /latest/meta-data/iam/security-credentials/,GET /latest/meta-data/iam/security-credentials/sbxtop-role'
out=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_REGION=$REGION \
	AWS_EC2_METADATA_SERVICE_ENDPOINT="$MD" AWS_EC2_METADATA_DISABLED=true $L doctor --backend lambda 2>&1)
like "AWS_EC2_METADATA_DISABLED=true: no credentials" "$out" 'no AWS credentials found'

# --- create with an endpoint certificate this host does not trust ---------------
t0=$(date +%s)
err=$(env -u AWS_CA_BUNDLE $L create --backend lambda --name untrusted 2>&1)
rc=$?
t1=$(date +%s)
is "create with an untrusted endpoint certificate: refused" "$rc" 1
like "it names AWS_CA_BUNDLE" "$err" 'AWS_CA_BUNDLE'
check "it fails at once rather than waiting out the health check" [ $((t1 - t0)) -lt 20 ]
like "and terminates the MicroVM it started" "$err" 'MicroVM mvm-[0-9a-f]+ was terminated'
# --- SHELL_INGRESS is opt-in ----------------------------------------------------
# Without the option a create asks for ALL_INGRESS alone, and shells take the
# endpoint token.
id0=$(SBXTOP_LAMBDA_SHELL_INGRESS=0 $L create --backend lambda --name lam0 2>"$T/err0")
conn=$(json_get "$(ctl vms)" 'json.dumps([v["body"]["ingressNetworkConnectors"] for v in d.values() if v["body"].get("clientToken","").startswith("sbxtop-'"$id0"'-")])')
like "SHELL_INGRESS is opt-in: a create without it asks for ALL_INGRESS only" "$conn" \
	'^\[\["arn:aws:lambda:us-west-2:aws:network-connector:aws-network-connector:ALL_INGRESS"\]\]$'
out=$(SBXTOP_LAMBDA_SHELL_INGRESS=0 SBXTOP="$L" python3 "$TOP/tests/tools/core-client.py" pty "$id0" 2>&1)
is "without SHELL_INGRESS the shell opens through the endpoint token" "$(json_get "$out" 'd["mark"]')" True
SBXTOP_LAMBDA_SHELL_INGRESS=0 $L destroy "$id0" > /dev/null 2>&1
done_testing
