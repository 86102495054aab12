# `sbxtop setup aws` against strict fakes of AWS: tests/fakes/aws_s3_iam.py (S3
# and IAM: SigV4 checked, S3's variant for S3; AWS's validation and errors) and
# tests/fakes/aws_microvms.py (Lambda MicroVMs and STS).  A dry run changes
# nothing; a run interrupted after the bucket resumes; what it makes is private,
# encrypted and least-privilege, and the object is the artifact; a second run is
# a no-op that says so; doctor passes after it; refusals say what to do.  The
# fakes themselves are checked with botocore as a client.
. "$(dirname "$0")/../lib.sh"

need_botocore
command -v zip > /dev/null || { echo "ok 1 # SKIP zip is not installed"; exit 0; }

REGION=us-west-2
ACCT=123456789012
AK=AKIAFAKEFAKEFAKE0001
SK='fake/secret+key/0123456789abcdefghijklm'
export HOME="$T/home"
mkdir -p "$HOME"
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_DEFAULT_REGION \
	AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_CREDENTIALS_FULL_URI \
	AWS_ENDPOINT_URL_LAMBDA_MICROVMS AWS_ENDPOINT_URL_STS SBXTOP_LAMBDA_IMAGE
export AWS_EC2_METADATA_DISABLED=true SBXTOP_AWS_BACKOFF_MS=20 SBXTOP_AWS_ROLE_SETTLE_S=0
export AWS_ACCESS_KEY_ID="$AK" AWS_SECRET_ACCESS_KEY="$SK" AWS_REGION=$REGION

wait_port() { for _i in $(seq 250); do [ -s "$1" ] && break; sleep 0.02; done; }
"$PY" "$TOP/tests/fakes/aws_microvms.py" --agent "$AGENT" --dir "$T/mv" --port-file "$T/mv.port" \
	--region $REGION --access-key "$AK" --secret-key "$SK" > "$T/mv.log" 2>&1 &
MVPID=$!
at_exit "kill $MVPID; wait $MVPID"
"$PY" "$TOP/tests/fakes/aws_s3_iam.py" --port-file "$T/s3.port" --region $REGION \
	--access-key "$AK" --secret-key "$SK" --foreign-bucket taken-bucket > "$T/s3.log" 2>&1 &
S3PID=$!
at_exit "kill $S3PID; wait $S3PID"
wait_port "$T/mv.port"
wait_port "$T/s3.port"
MV="http://127.0.0.1:$(cat "$T/mv.port")"
S3="http://127.0.0.1:$(cat "$T/s3.port")"
# The standard per-service variables: Lambda MicroVMs and STS fall back on
# AWS_ENDPOINT_URL, S3 and IAM have their own.
export AWS_ENDPOINT_URL="$MV" AWS_ENDPOINT_URL_S3="$S3" AWS_ENDPOINT_URL_IAM="$S3"
s3ctl() { curl -s -X POST -d "${2:-}" "$S3/_fake/$1"; }
mvctl() { curl -s -X POST -d "${2:-}" "$MV/_fake/$1"; }
# mutations: S3/IAM calls that changed something and succeeded.
mutations() {
	json_get "$(s3ctl log)" 'sum(1 for x in d["log"] if x[2] == 200 and not x[1].startswith(("Get", "Head")))'
}
L="$SBXTOP"
BUCKET="sbxtop-$ACCT-$REGION"
HOSTB="$BUILD/agent-bundle"
[ -x "$HOSTB/sbxtop-agent" ] || "$TOP/scripts/agent-bundle.sh" "$AGENT" "$HOSTB"
S="$L setup aws --arch x86_64 --bundle $HOSTB"

# --- refusals before anything is sent -------------------------------------------
out=$($S < /dev/null 2>&1)
is "without --yes and no terminal: refused" "$?" 2
like "it says to pass --yes" "$out" 'pass --yes'
out=$($L setup aws --bundle "$HOSTB" --yes 2>&1)
is "aarch64 is the default: an x86_64 bundle is refused" "$?" 1
like "it says how to build the aarch64 bundle" "$out" 'make agent-bundle ARCH=aarch64'
out=$($L setup aws --arch sparc --yes 2>&1)
is "an unknown --arch: usage error" "$?" 2
out=$($S --yes --bucket Bad_Bucket 2>&1)
like "a bucket name S3 would refuse: refused here" "$out" "'Bad_Bucket' is not a bucket name"
is "nothing sent to S3 or IAM so far" "$(json_get "$(s3ctl log)" 'len(d["log"])')" 0

# --- dry run: read-only -----------------------------------------------------------
out=$($S --dry-run 2>&1)
is "--dry-run exits 0" "$?" 0
like "the plan names the default bucket" "$out" "S3 bucket $BUCKET: private .*encrypted"
like "the plan names the role and its limits" "$out" "IAM role sbxtop-build: Lambda may assume it; it may read s3://$BUCKET/sbxtop/\\*"
like "dry run: the bucket would be created" "$out" "$BUCKET: would be created"
like "dry run: the role would be created" "$out" 'role: would be created'
like "dry run: the artifact would be uploaded" "$out" 'artifact: would be uploaded'
like "dry run: the CreateMicrovmImage request, hooks on 9000" "$out" '"port":[[:space:]]*9000'
like "dry run: says nothing changed" "$out" 'dry run: nothing was changed'
is "dry run: no S3 or IAM call changed anything" "$(mutations)" 0
is "dry run: no bucket, no role" "$(json_get "$(s3ctl state)" 'len(d["buckets"]) - 1, len(d["roles"])')" "(0, 0)"
is "dry run: no CreateMicrovmImage" \
	"$(json_get "$(mvctl log)" 'sum(1 for x in d["log"] if x[0]=="CreateMicrovmImage")')" 0
zip="$XDG_CACHE_HOME/sbxtop/aws/sbxtop.zip"
like "the artifact holds the Dockerfile and the agent bundle" \
	"$(unzip -l "$zip" 2>&1)" 'Dockerfile.*|agent-bundle/sbxtop-agent'
check "the artifact's agent bundle runs" sh -c "unzip -qo '$zip' -d '$T/unz' && '$T/unz/agent-bundle/sbxtop-agent' --version >/dev/null"
# From here on a slim bundle (the binary alone): zipping the whole one (48 MB of
# libraries) takes seconds a run, and the fakes do not run what they store.
mkdir -p "$T/slim/bin"
cp "$HOSTB/bin/sbxtop-agent" "$T/slim/bin/"
cp "$HOSTB/sbxtop-agent" "$T/slim/"
S="$L setup aws --arch x86_64 --bundle $T/slim"

# --- interrupted after the bucket, then resumed ----------------------------------
s3ctl fail '{"op": "PutPublicAccessBlock", "count": 1, "status": 403, "code": "AccessDenied"}' > /dev/null
out=$($S --yes 2>&1)
is "a run that fails after creating the bucket exits 1" "$?" 1
like "it names the step and the permission" "$out" 'PutPublicAccessBlock: AccessDenied.*s3:PutBucketPublicAccessBlock'
is "the bucket is there, not yet private" \
	"$(json_get "$(s3ctl state)" 'd["buckets"]["'"$BUCKET"'"]["pab"]')" None
out=$($S --yes 2>&1)
rc=$?
is "the rerun completes" "$rc" 0
[ $rc -eq 0 ] || diag "$out"
like "it finds the bucket" "$out" "$BUCKET: exists"
like "it makes it private" "$out" "$BUCKET: all public access blocked"
like "it encrypts it" "$out" "$BUCKET: encrypted by default \\(SSE-S3"
like "it creates the role" "$out" 'role: created'
like "it writes the role policy" "$out" 'role policy sbxtop-build: written'
like "it uploads the artifact" "$out" 'artifact: uploaded'
like "it waits for an ACTIVE version" "$out" 'image sbxtop: an ACTIVE version'
like "it prints the image ARN" "$out" "image: arn:aws:lambda:$REGION:$ACCT:microvm-image:sbxtop"
is "CreateBucket succeeded once in all" \
	"$(json_get "$(s3ctl log)" 'sum(1 for x in d["log"] if x[1]=="CreateBucket" and x[2]==200)')" 1

# --- what was made ----------------------------------------------------------------
st=$(s3ctl state)
b='d["buckets"]["'"$BUCKET"'"]'
is "the bucket blocks all public access" \
	"$(json_get "$st" "sorted($b[\"pab\"].items())")" \
	"[('BlockPublicAcls', True), ('BlockPublicPolicy', True), ('IgnorePublicAcls', True), ('RestrictPublicBuckets', True)]"
is "the bucket is encrypted by default (SSE-S3)" "$(json_get "$st" "$b[\"sse\"]")" AES256
is "the bucket is this account's, in the region, ACLs off" \
	"$(json_get "$st" "$b[\"owner\"], $b[\"region\"], $b[\"ownership\"]")" \
	"('$ACCT', '$REGION', 'BucketOwnerEnforced')"
sha=$(sha256sum "$zip" | cut -d' ' -f1)
key="sbxtop/sbxtop-$(printf %.16s "$sha").zip"
is "one object, named after the artifact's digest" "$(json_get "$st" "list($b[\"objects\"])")" "['$key']"
is "the object is the artifact (sha256)" "$(json_get "$st" "$b[\"objects\"][\"$key\"][\"sha256\"]")" "$sha"
is "its x-amz-meta-sha256 says so" "$(json_get "$st" "$b[\"objects\"][\"$key\"][\"meta\"][\"sha256\"]")" "$sha"
r='d["roles"]["sbxtop-build"]'
is "the role trusts lambda.amazonaws.com only" \
	"$(json_get "$st" "[s[\"Principal\"] for s in $r[\"trust\"][\"Statement\"]]")" \
	"[{'Service': 'lambda.amazonaws.com'}]"
is "to assume it and tag the session" \
	"$(json_get "$st" "sorted($r[\"trust\"][\"Statement\"][0][\"Action\"])")" \
	"['sts:AssumeRole', 'sts:TagSession']"
is "for this account only" \
	"$(json_get "$st" "$r[\"trust\"][\"Statement\"][0][\"Condition\"]")" \
	"{'StringEquals': {'aws:SourceAccount': '$ACCT'}}"
is "one inline policy" "$(json_get "$st" "list($r[\"policies\"])")" "['sbxtop-build']"
pol="$r[\"policies\"][\"sbxtop-build\"][\"doc\"][\"Statement\"]"
is "it may read the artifacts of this bucket only" \
	"$(json_get "$st" "[(s[\"Action\"], s[\"Resource\"]) for s in $pol if \"s3\" in str(s[\"Action\"])]")" \
	"[('s3:GetObject', 'arn:aws:s3:::$BUCKET/sbxtop/*')]"
is "and write logs in this account and region" \
	"$(json_get "$st" "[s[\"Resource\"] for s in $pol if \"logs\" in str(s[\"Action\"])]")" \
	"['arn:aws:logs:$REGION:$ACCT:log-group:*']"
is "nothing else: every action named, no wildcard" \
	"$(json_get "$st" "sorted(a for s in $pol for a in ([s[\"Action\"]] if isinstance(s[\"Action\"], str) else s[\"Action\"]))")" \
	"['logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:PutLogEvents', 's3:GetObject']"
img=$(mvctl images)
ia='d["arn:aws:lambda:'"$REGION:$ACCT"':microvm-image:sbxtop"]'
is "the image is built from that object" "$(json_get "$img" "$ia[\"codeArtifact\"][\"uri\"]")" "s3://$BUCKET/$key"
is "by that role" "$(json_get "$img" "$ia[\"buildRoleArn\"]")" "arn:aws:iam::$ACCT:role/sbxtop-build"
is "for the bundle's architecture" "$(json_get "$img" "$ia[\"cpuConfigurations\"]")" "[{'architecture': 'X86_64'}]"

# --- a second run: nothing to do ----------------------------------------------------
before=$(mutations)
out=$($S --yes 2>&1)
is "a second run exits 0" "$?" 0
like "and says there was nothing to do" "$out" 'nothing to do: the bucket, the role, the artifact and the image were all in place'
like "it checked the artifact" "$out" "artifact $key: uploaded already"
is "it changed nothing in S3 or IAM" "$(mutations)" "$before"
is "CreateMicrovmImage was called once in all (201 Created, as the model says)" \
	"$(json_get "$(mvctl log)" 'sum(1 for x in d["log"] if x[0]=="CreateMicrovmImage" and x[1]==201)')" 1

# --- doctor after setup -------------------------------------------------------------
d=$(SBXTOP_LAMBDA_IMAGE="arn:aws:lambda:$REGION:$ACCT:microvm-image:sbxtop" $L doctor --backend lambda 2>&1)
is "doctor passes after setup" "$?" 0
like "doctor: the image setup made is CREATED with an active version" "$d" \
	'ok +lambda: image: .*: CREATED, active version 1'
like "doctor: the active version is ACTIVE" "$d" 'ok +lambda: image version: 1: SUCCESSFUL, ACTIVE'
like "doctor: the bucket of the image's artifact is ours, private, encrypted" "$d" \
	"ok +lambda: bucket: $BUCKET \\(the image's code artifact\\): this account's, public access blocked, encrypted with AES256"
like "doctor: the image's build role may be assumed by Lambda" "$d" \
	"ok +lambda: build role: arn:aws:iam::$ACCT:role/sbxtop-build \\(the image's build role\\): Lambda may assume it"
is "doctor made no change in S3 or IAM" "$(mutations)" "$before"

# --- a sandbox from the image setup made ---------------------------------------------
id=$(SBXTOP_LAMBDA_IMAGE="arn:aws:lambda:$REGION:$ACCT:microvm-image:sbxtop" \
	$L create --backend lambda --name from-setup 2> "$T/create.err")
at_exit "$L destroy $id"
is "a sandbox from the image setup made runs commands" \
	"$($L exec "$id" -- echo made-by-setup 2>&1)" made-by-setup
$L destroy "$id" > /dev/null 2>&1

# --- a role of the user's: no IAM call, the image built by it ------------------------
niam=$(json_get "$(s3ctl log)" 'sum(1 for x in d["log"] if x[0] == "iam")')
out=$($S --yes --name byo --build-role-arn "arn:aws:iam::$ACCT:role/mine" 2>&1)
is "--build-role-arn: setup completes" "$?" 0
is "--build-role-arn: no IAM call" "$(json_get "$(s3ctl log)" 'sum(1 for x in d["log"] if x[0] == "iam")')" "$niam"
is "--build-role-arn: the image is built by that role" \
	"$(json_get "$(mvctl images)" 'd["arn:aws:lambda:'"$REGION:$ACCT"':microvm-image:byo"]["buildRoleArn"]')" \
	"arn:aws:iam::$ACCT:role/mine"
out=$($S --yes --name byo2 --build-role-arn not-a-role 2>&1)
like "a malformed role ARN: the service's ValidationException" "$out" 'CreateMicrovmImage: ValidationException'

# --- a bucket of another account, a role that is not ours ---------------------------
out=$($S --yes --name other --bucket taken-bucket 2>&1)
is "another account's bucket: refused" "$?" 1
like "it says whose it is not and what to do" "$out" "taken-bucket exists but is not account $ACCT's.*--bucket"
is "nothing was written to it" "$(json_get "$(s3ctl state)" 'd["buckets"]["taken-bucket"]["pab"], d["buckets"]["taken-bucket"]["objects"]')" "(None, {})"

# The fakes answer a real SDK as AWS would: botocore as the client.
"$PY" - "$S3" "$REGION" > "$T/sdk.out" 2>&1 <<'EOF'
import sys
import botocore.session
from botocore.exceptions import ClientError
url, region = sys.argv[1], sys.argv[2]
s = botocore.session.get_session()
s3 = s.create_client("s3", region_name=region, endpoint_url=url)
iam = s.create_client("iam", region_name="us-east-1", endpoint_url=url)
def code(f, **kw):
    try:
        f(**kw)
        return "ok"
    except ClientError as e:
        return e.response["Error"]["Code"]
print("nolc", code(s3.create_bucket, Bucket="no-constraint-bucket"))
print("wronglc", code(s3.create_bucket, Bucket="wrong-constraint-bucket",
                      CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}))
print("badname", code(s3.head_bucket, Bucket="xn--bad"))
print("taken", code(s3.create_bucket, Bucket="taken-bucket",
                    CreateBucketConfiguration={"LocationConstraint": region}))
print("mine", code(s3.create_bucket, Bucket="sbxtop-123456789012-" + region,
                   CreateBucketConfiguration={"LocationConstraint": region}))
print("exists", code(iam.create_role, RoleName="sbxtop-build", AssumeRolePolicyDocument=(
    '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":'
    '{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}')))
print("malformed", code(iam.create_role, RoleName="r2", AssumeRolePolicyDocument="{not json"))
print("norole", code(iam.get_role, RoleName="nobody"))
print("role", iam.get_role(RoleName="sbxtop-build")["Role"]["Arn"])
print("policy", code(iam.put_role_policy, RoleName="sbxtop-build", PolicyName="p",
                     PolicyDocument='{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*"}]}'))
bad = s.create_client("s3", region_name=region, endpoint_url=url,
                      aws_access_key_id="AKIAFAKEFAKEFAKE0001", aws_secret_access_key="wrong")
print("badsig", code(bad.get_bucket_encryption, Bucket="sbxtop-123456789012-" + region))
EOF
sdk=$(cat "$T/sdk.out")
like "S3: no LocationConstraint outside us-east-1" "$sdk" 'nolc IllegalLocationConstraintException'
like "S3: a LocationConstraint of another region" "$sdk" 'wronglc IllegalLocationConstraintException'
like "S3: a name S3 refuses" "$sdk" 'badname (InvalidBucketName|400)'
like "S3: a name another account has" "$sdk" 'taken BucketAlreadyExists'
like "S3: a bucket of ours again" "$sdk" 'mine BucketAlreadyOwnedByYou'
like "IAM: a role that exists" "$sdk" 'exists EntityAlreadyExists'
like "IAM: a trust policy that is not JSON" "$sdk" 'malformed MalformedPolicyDocument'
like "IAM: no such role" "$sdk" 'norole NoSuchEntity'
like "IAM: GetRole's answer parses in botocore" "$sdk" "role arn:aws:iam::$ACCT:role/sbxtop-build"
like "IAM: a policy without Resource" "$sdk" 'policy MalformedPolicyDocument'
like "S3: a wrong secret key" "$sdk" 'badsig SignatureDoesNotMatch'
grep -qv '^[a-z]* ' "$T/sdk.out" && diag "$(cat "$T/sdk.out")"

# A role of that name that Lambda may not assume is not one setup made: refused.
"$PY" - "$S3" <<'EOF' > /dev/null 2>&1
import sys, botocore.session
iam = botocore.session.get_session().create_client("iam", region_name="us-east-1",
                                                   endpoint_url=sys.argv[1])
iam.create_role(RoleName="ec2-role", AssumeRolePolicyDocument=(
    '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":'
    '{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}'))
EOF
out=$($S --yes --name other2 --role-name ec2-role 2>&1)
is "a role Lambda may not assume: refused" "$?" 1
like "it says why and what to pass" "$out" 'ec2-role exists and Lambda may not assume it.*--build-role-arn'
is "its policies were left alone" "$(json_get "$(s3ctl state)" 'd["roles"]["ec2-role"]["policies"]')" "{}"

# --- the aarch64 default, where the cross-built bundle exists --------------------------
ARMB="$TOP/build/aarch64/agent-bundle"
if [ -x "$ARMB/sbxtop-agent" ]; then
	out=$($L setup aws --dry-run --name armimg --bundle "$ARMB" 2>&1)
	is "the aarch64 bundle: dry run exits 0" "$?" 0
	like "the plan ships the aarch64 bundle" "$out" 'Dockerfile \+ aarch64 agent bundle'
	like "the image is ARM_64" "$out" '"architecture":[[:space:]]*"ARM_64"'
else
	ok "# SKIP no build/aarch64/agent-bundle (make agent-bundle ARCH=aarch64)"
fi
done_testing
