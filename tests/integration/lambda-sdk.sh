# The lambda backend held to the official AWS SDK for JavaScript v3
# (@aws-sdk/client-lambda-microvms, pinned in tests/aws/package-lock.json):
#   - every request sbxtop sends in create, status, ls, a shell, suspend, resume,
#     destroy, doctor and `setup aws` is recorded on its way to the fake, matched to the
#     operation of the SDK's model with that method and path, its body checked
#     against the SDK's input schema, then sent again through the SDK and the two
#     compared (method, path, query, Content-Type, JSON body, SigV4 scope);
#   - the SDK against the fake: answers fit the SDK's output schemas, errors
#     parse into the SDK's exceptions with their fields;
#   - the same errors name the same exception in sbxtop's messages, whether the
#     name comes in x-amzn-ErrorType or only in the body's namespaced __type;
#   - with no endpoint override, sbxtop names the endpoint the SDK's rules
#     resolve for each region and signs for "lambda" (its debug log, no network).
. "$(dirname "$0")/../lib.sh"

need_botocore
command -v node > /dev/null || { echo "ok 1 # SKIP node is not installed"; exit 0; }
[ -d "$TOP/tests/aws/node_modules/@aws-sdk/client-lambda-microvms" ] ||
	{ echo "ok 1 # SKIP the SDK is not installed: npm ci --prefix tests/aws"; exit 0; }
command -v zip > /dev/null || { echo "ok 1 # SKIP zip is not installed"; exit 0; }

REGION=us-west-2
ACCT=123456789012
IMG="arn:aws:lambda:$REGION:$ACCT:microvm-image:sbxtop"
AK=AKIAFAKEFAKEFAKE0001
SK='fake/secret+key/0123456789abcdefghijklm'
export HOME="$T/home"
mkdir -p "$HOME"
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_REGION AWS_DEFAULT_REGION \
	AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_CREDENTIALS_FULL_URI \
	AWS_CONTAINER_AUTHORIZATION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_LAMBDA_MICROVMS \
	AWS_ENDPOINT_URL_STS AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN SBXTOP_LAMBDA_IMAGE_VERSION
export AWS_EC2_METADATA_DISABLED=true SBXTOP_AWS_BACKOFF_MS=5 SBXTOP_AWS_ROLE_SETTLE_S=0
export AWS_ACCESS_KEY_ID="$AK" AWS_SECRET_ACCESS_KEY="$SK"
# The SDK's notice about future Node versions is not a test failure.
export AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE=1 NODE_NO_WARNINGS=1
O="$TOP/tests/aws/oracle.mjs"
L="$SBXTOP"

# tap FILE: the oracle's PASS/FAIL lines as TAP.
tap() {
	while IFS= read -r _l; do
		case $_l in
		PASS\ *) ok "${_l#PASS }" ;;
		FAIL\ *) not_ok "${_l#FAIL }" ;;
		esac
	done < "$1"
}
wait_port() { for _i in $(seq 250); do [ -s "$1" ] && break; sleep 0.02; done; }

"$PY" "$TOP/tests/fakes/aws_microvms.py" --agent "$AGENT" --dir "$T/mv" --port-file "$T/mv.port" \
	--region $REGION --access-key "$AK" --secret-key "$SK" --image "$IMG" --max-page 1 \
	> "$T/mv.log" 2>&1 &
_p=$!
at_exit "kill $_p; wait $_p"
"$PY" "$TOP/tests/fakes/aws_s3_iam.py" --port-file "$T/s3.port" --region $REGION \
	--access-key "$AK" --secret-key "$SK" > "$T/s3.log" 2>&1 &
_p=$!
at_exit "kill $_p; wait $_p"
wait_port "$T/mv.port"
wait_port "$T/s3.port"
MV="http://127.0.0.1:$(cat "$T/mv.port")"
S3="http://127.0.0.1:$(cat "$T/s3.port")"
node "$O" proxy "$MV" "$T/rec.jsonl" "$T/px.port" > "$T/px.log" 2>&1 &
_p=$!
at_exit "kill $_p; wait $_p"
wait_port "$T/px.port"
PX="http://127.0.0.1:$(cat "$T/px.port")"
mvctl() { curl -s -X POST -d "${2:-}" "$MV/_fake/$1"; }

# --- sbxtop's requests, recorded ---------------------------------------------------
# Lambda MicroVMs through the recording proxy; STS, S3 and IAM straight to the fakes.
export AWS_ENDPOINT_URL_LAMBDA_MICROVMS="$PX" AWS_ENDPOINT_URL_STS="$MV" \
	AWS_ENDPOINT_URL_S3="$S3" AWS_ENDPOINT_URL_IAM="$S3" SBXTOP_LAMBDA_IMAGE="$IMG" \
	SBXTOP_LAMBDA_SHELL_INGRESS=1	# shells by shell token: CreateMicrovmShellAuthToken sent
id1=$($L create --backend lambda --name sdk1 --env A=1 2> "$T/err")
is "create (network none)" "$?" 0
at_exit "$L destroy $id1"
id2=$(SBXTOP_LAMBDA_IMAGE_VERSION=1 $L create --backend lambda --name sdk2 --network egress \
	--idle 120 2>> "$T/err")
is "create (egress, an image version, an idle limit)" "$?" 0
at_exit "$L destroy $id2"
[ -n "$id1" ] && [ -n "$id2" ] || cat "$T/err"
$L status "$id1" > /dev/null
$L ls > "$T/ls"
like "ls lists both" "$(cat "$T/ls")" "$id2"
out=$(SBXTOP="$L" python3 "$TOP/tests/tools/core-client.py" pty "$id1" 2>&1)
is "a shell (sbxtop/pty), authorised by a shell token" "$(json_get "$out" 'd["mark"]')" True
$L suspend "$id1" > /dev/null
is "suspend" "$?" 0
$L resume "$id1" > /dev/null
is "resume" "$?" 0
$L destroy "$id1" > /dev/null && $L destroy "$id2" > /dev/null
is "destroy both" "$?" 0
AWS_REGION=$REGION $L doctor --backend lambda > "$T/doctor" 2>&1
is "doctor" "$?" 0
HOSTB="$BUILD/agent-bundle"
[ -x "$HOSTB/sbxtop-agent" ] || "$TOP/scripts/agent-bundle.sh" "$AGENT" "$HOSTB" > /dev/null
AWS_REGION=$REGION $L setup aws --arch x86_64 --bundle "$HOSTB" --name sdkimg --yes \
	> "$T/setup" 2>&1
is "setup aws" "$?" 0 || cat "$T/setup"
mvctl fail-builds '{"reason": "Dockerfile: step 2 failed"}' > /dev/null
AWS_REGION=$REGION $L setup aws --arch x86_64 --bundle "$HOSTB" --name sdkfail --yes \
	> "$T/setup2" 2>&1
is "setup aws with an image build that fails: an error" "$?" 1
like "it says why, from ListMicrovmImageBuilds" "$(cat "$T/setup2")" \
	'the image build failed: CREATE_FAILED, version 1; build build-1 \(ARM_64\): Dockerfile: step 2 failed'
mvctl fail-builds '{}' > /dev/null
like "the fake saw DELETE for TerminateMicrovm" "$(mvctl log)" '"TerminateMicrovm", 200'

# --- each of them through the SDK, compared --------------------------------------
node "$O" compare "$T/rec.jsonl" > "$T/compare" 2>&1
tap "$T/compare"
ops=$(sed -n 's/^OPS //p' "$T/compare")
for op in RunMicrovm GetMicrovm ListMicrovms SuspendMicrovm ResumeMicrovm TerminateMicrovm \
	CreateMicrovmAuthToken CreateMicrovmShellAuthToken GetMicrovmImage GetMicrovmImageVersion \
	CreateMicrovmImage ListMicrovmImageBuilds; do
	case " $ops " in
	*" $op "*) ok "compared with the SDK: $op" ;;
	*) not_ok "compared with the SDK: $op (sbxtop sent none)" ;;
	esac
done
grep -q '^FAIL oracle' "$T/compare" && cat "$T/compare"

# The comparison itself catches what it is for: the requests sbxtop used to send.
A='AWS4-HMAC-SHA256 Credential=AK/20260101/us-west-2/lambda-microvms/aws4_request, SignedHeaders=host;x-amz-date, Signature=0'
B='AWS4-HMAC-SHA256 Credential=AK/20260101/us-west-2/lambda/aws4_request, SignedHeaders=host;x-amz-date, Signature=0'
{
	printf '{"method": "POST", "url": "/2025-09-09/microvms/mvm-1/terminate", "headers": {"authorization": "%s"}, "body": ""}
' "$B"
	printf '{"method": "GET", "url": "/2025-09-09/microvms/mvm-1", "headers": {"authorization": "%s"}, "body": ""}
' "$A"
	printf '{"method": "POST", "url": "/2025-09-09/microvms", "headers": {"authorization": "%s", "content-type": "application/json"}, "body": "{\"imageIdentifier\": \"x\", \"name\": \"n\", \"idlePolicy\": {\"autoResumeEnabled\": true}}"}
' "$B"
	printf '{"method": "POST", "url": "/2025-09-09/microvms/mvm-1/suspend", "headers": {"authorization": "%s", "content-type": "application/x-www-form-urlencoded"}, "body": ""}
' "$B"
} > "$T/old.jsonl"
node "$O" compare "$T/old.jsonl" > "$T/old.out" 2>&1
like "the oracle refuses POST .../terminate: no such operation" "$(cat "$T/old.out")" \
	'FAIL POST /2025-09-09/microvms/mvm-1/terminate: no operation'
like "the oracle refuses the lambda-microvms signing name" "$(cat "$T/old.out")" \
	'FAIL GetMicrovm .*SigV4 scope'
like "the oracle refuses a member the model lacks" "$(cat "$T/old.out")" \
	'FAIL RunMicrovm .*RunMicrovmRequest schema: RunMicrovm.name: not a member of RunMicrovmRequest'
like "the oracle refuses an idlePolicy without its required members" "$(cat "$T/old.out")" \
	'idlePolicy.maxIdleDurationSeconds: required, missing'
like "the oracle refuses a Content-Type the SDK does not send" "$(cat "$T/old.out")" \
	'FAIL SuspendMicrovm .*Content-Type'

# --- the SDK reading the fake ------------------------------------------------------
node "$O" parse "$MV" "$IMG" $REGION "$AK" "$SK" > "$T/parse" 2>&1
tap "$T/parse"
n=$(grep -c '^PASS' "$T/parse")
[ "$n" -ge 40 ] && ok "the SDK's reading of the fake: $n checks" || { not_ok "parse ran $n checks"; cat "$T/parse"; }

# --- the same errors, named alike ---------------------------------------------------
# sdk_err OP JSON: the exception the SDK raises against the fake.
sdk_err() { node "$O" error "$MV" $REGION "$AK" "$SK" "$1" "$2" 2>/dev/null; }
for style in header body; do
	mvctl error-style "{\"style\": \"$style\"}" > /dev/null
	nope="arn:aws:lambda:$REGION:$ACCT:microvm-image:nope"
	err=$(SBXTOP_LAMBDA_IMAGE=$nope $L create --backend lambda 2>&1)
	sdk=$(sdk_err RunMicrovm "{\"imageIdentifier\": \"$nope\"}")
	is "error in the $style: a missing image is $sdk to the SDK" "$sdk" ResourceNotFoundException
	like "error in the $style: and to sbxtop" "$err" "RunMicrovm: $sdk:"
	err=$(SBXTOP_LAMBDA_IMAGE_VERSION=9 $L create --backend lambda 2>&1)
	sdk=$(sdk_err RunMicrovm "{\"imageIdentifier\": \"$IMG\", \"imageVersion\": \"9\"}")
	is "error in the $style: an inactive version is $sdk to the SDK" "$sdk" ValidationException
	like "error in the $style: and to sbxtop" "$err" "RunMicrovm: $sdk:"
	mvctl throttle '{"op": "RunMicrovm", "count": 5}' > /dev/null
	err=$($L create --backend lambda 2>&1)
	mvctl throttle '{"op": "RunMicrovm", "count": 1}' > /dev/null
	sdk=$(sdk_err RunMicrovm "{\"imageIdentifier\": \"$IMG\"}")
	is "error in the $style: throttling is $sdk to the SDK" "$sdk" ThrottlingException
	like "error in the $style: and to sbxtop, after its retries" "$err" "RunMicrovm: $sdk:"
done
mvctl error-style '{"style": "header"}' > /dev/null

# --- the default endpoint, no network -----------------------------------------------
# Each region's endpoint as the SDK's rules resolve it, and sbxtop's debug log
# when nothing overrides it (the host does not resolve here: create fails fast).
unset AWS_ENDPOINT_URL_LAMBDA_MICROVMS
node "$O" endpoint us-east-1 eu-central-1 cn-north-1 us-gov-west-1 us-isob-east-1 \
	> "$T/endpoints" 2>/dev/null
is "the SDK resolved five endpoints" "$(wc -l < "$T/endpoints" | tr -d ' ')" 5
while read -r region url; do
	log=$(SBXTOP_LOG_LEVEL=debug SBXTOP_AWS_BACKOFF_MS=1 \
		SBXTOP_LAMBDA_IMAGE="arn:aws:lambda:$region:$ACCT:microvm-image:x" \
		timeout 60 $L --standalone create --backend lambda 2>&1)
	like "$region: sbxtop calls $url, as the SDK" "$log" \
		"AWS RunMicrovm: POST ${url}/2025-09-09/microvms, signed for service lambda in $region"
done < "$T/endpoints"
