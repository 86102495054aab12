# The credential chain of the lambda backend against botocore's resolver, the
# oracle of which source wins: the same environment and files for both, STS and
# the IAM Identity Center portal faked by tests/fakes/aws_sts_sso.py (which
# issues credentials as a function of what was asked, so both get the same
# key).  sbxtop's answer is the key that signed its STS GetCallerIdentity in
# `doctor`; botocore's is what tests/fakes/creds_oracle.py prints.  Assume-role
# profiles (source_profile chains, external_id, a source with keys and a role),
# web identity (the environment's and a profile's), sso_session and the older
# sso_start_url profiles with the cached token (refreshed when near its end), credential_process against the
# config file's keys; and the refusals: mfa_serial, an expired SSO token, a
# wrong external_id, a missing source.
. "$(dirname "$0")/../lib.sh"

need_botocore

REGION=us-west-2
ACCT=123456789012
BASE_AK=AKIABASEBASEBASE0001; BASE_SK=base-secret
ENV_AK=AKIAENVENVENVENV0002; ENV_SK=env-secret
CONF_AK=AKIACONFCONFCONF0003; CONF_SK=conf-secret
PROC_AK=AKIAPROCPROCPROC0004; PROC_SK=proc-secret
export HOME="$T/home"
mkdir -p "$HOME/.aws/sso/cache"
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN \
	AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN \
	AWS_ROLE_SESSION_NAME AWS_CONTAINER_CREDENTIALS_RELATIVE_URI \
	AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_ENDPOINT_URL AWS_ENDPOINT_URL_LAMBDA_MICROVMS
export AWS_EC2_METADATA_DISABLED=true AWS_REGION=$REGION AWS_DEFAULT_REGION=$REGION

"$PY" "$TOP/tests/fakes/aws_sts_sso.py" --port-file "$T/sts.port" --region $REGION \
	--account $ACCT --key "$BASE_AK:$BASE_SK" --key "$ENV_AK:$ENV_SK" \
	--key "$CONF_AK:$CONF_SK" --key "$PROC_AK:$PROC_SK" --web-token "ci-oidc-token" \
	--sso-token "sso-cached-token" \
	--external-id "arn:aws:iam::$ACCT:role/guarded=ext-123" > "$T/sts.log" 2>&1 &
_p=$!
at_exit "kill $_p; wait $_p"
for _i in $(seq 250); do [ -s "$T/sts.port" ] && break; sleep 0.02; done
STS="http://127.0.0.1:$(cat "$T/sts.port")"
# STS and the portal at the fake, by the variables the SDKs read; the MicroVMs
# API is not needed (doctor's later checks fail there, which is not tested here).
export AWS_ENDPOINT_URL_STS="$STS" AWS_ENDPOINT_URL_SSO="$STS" AWS_ENDPOINT_URL_SSO_OIDC="$STS" \
	SBXTOP_LAMBDA_ENDPOINT_URL="$STS" SBXTOP_AWS_BACKOFF_MS=1
L="$SBXTOP"
last_signer() { json_get "$(curl -s "$STS/_fake/log")" '[x[1] for x in d["log"] if x[0] == "GetCallerIdentity"][-1]'; }
calls() { json_get "$(curl -s "$STS/_fake/log")" 'len(d["log"])'; }

# same WHAT [VAR=VALUE...]: botocore and sbxtop, same environment; both keys equal.
same() {
	_w=$1; shift
	_b=$(env "$@" setsid "$PY" "$TOP/tests/fakes/creds_oracle.py" "$STS" < /dev/null 2>&1)
	_n0=$(calls)
	env "$@" $L doctor --backend lambda > "$T/doctor" 2>&1
	_src=$(sed -n 's/.*lambda: credentials: //p' "$T/doctor")
	if [ "$(calls)" = "$_n0" ] || ! grep -q 'lambda: identity:' "$T/doctor"; then
		not_ok "$_w: sbxtop got credentials (botocore: $_b)"; cat "$T/doctor"; return
	fi
	is "$_w: the key botocore resolves (${_b#* }) is the one sbxtop signs with" \
		"$(last_signer)" "${_b%% *}"
}
# both_refuse WHAT PATTERN [VAR=VALUE...]: botocore raises, sbxtop says PATTERN.
both_refuse() {
	_w=$1; _pat=$2; shift 2
	_b=$(env "$@" setsid "$PY" "$TOP/tests/fakes/creds_oracle.py" "$STS" < /dev/null 2>&1)
	like "$_w: botocore refuses too" "$_b" 'ERROR '
	_o=$(env "$@" $L doctor --backend lambda 2>&1)
	like "$_w: sbxtop says why" "$_o" "$_pat"
}

# --- files ----------------------------------------------------------------------
cat > "$HOME/.aws/credentials" <<EOF
[base]
aws_access_key_id = $BASE_AK
aws_secret_access_key = $BASE_SK

[both]
aws_access_key_id = $BASE_AK
aws_secret_access_key = $BASE_SK
EOF
printf '#!/bin/sh\nprintf '"'"'{"Version": 1, "AccessKeyId": "%s", "SecretAccessKey": "%s"}'"'"'\n' \
	"$PROC_AK" "$PROC_SK" > "$T/proc.sh"
chmod +x "$T/proc.sh"
printf 'ci-oidc-token' > "$T/web.jwt"
cat > "$HOME/.aws/config" <<EOF
[profile base]
region = $REGION

[profile dev]
role_arn = arn:aws:iam::$ACCT:role/dev
source_profile = base
role_session_name = sbxtop-test

[profile chained]
role_arn = arn:aws:iam::$ACCT:role/deploy
source_profile = dev

[profile both]
role_arn = arn:aws:iam::$ACCT:role/ignored-as-source
source_profile = base

[profile via-both]
role_arn = arn:aws:iam::$ACCT:role/dev
source_profile = both

[profile guarded]
role_arn = arn:aws:iam::$ACCT:role/guarded
source_profile = base
external_id = ext-123

[profile guarded-wrong]
role_arn = arn:aws:iam::$ACCT:role/guarded
source_profile = base
external_id = nope

[profile mfa]
role_arn = arn:aws:iam::$ACCT:role/dev
source_profile = base
mfa_serial = arn:aws:iam::$ACCT:mfa/me

[profile nosource]
role_arn = arn:aws:iam::$ACCT:role/dev

[profile webprof]
role_arn = arn:aws:iam::$ACCT:role/ci
web_identity_token_file = $T/web.jwt

[profile proc]
credential_process = $T/proc.sh
aws_access_key_id = $CONF_AK
aws_secret_access_key = $CONF_SK

[profile conf]
aws_access_key_id = $CONF_AK
aws_secret_access_key = $CONF_SK

[sso-session corp]
sso_start_url = https://corp.awsapps.com/start
sso_region = $REGION
sso_registration_scopes = sso:account:access

[profile sso]
sso_session = corp
sso_account_id = $ACCT
sso_role_name = Developer

[profile sso-legacy]
sso_start_url = https://legacy.awsapps.com/start
sso_region = $REGION
sso_account_id = $ACCT
sso_role_name = ReadOnly

[profile sso-expired]
sso_session = stale
sso_account_id = $ACCT
sso_role_name = Developer

[profile sso-renew]
sso_session = renew
sso_account_id = $ACCT
sso_role_name = Renewed

[sso-session renew]
sso_start_url = https://renew.awsapps.com/start
sso_region = $REGION

[sso-session stale]
sso_start_url = https://stale.awsapps.com/start
sso_region = $REGION
EOF
# The token cache `aws sso login` writes: ~/.aws/sso/cache/<sha1 of the session
# name, or of the start URL for the older form>.json.
cache() {
	_f="$HOME/.aws/sso/cache/$(printf '%s' "$1" | sha1sum | cut -d' ' -f1).json"
	printf '{"startUrl": "%s", "region": "%s", "accessToken": "sso-cached-token", "expiresAt": "%s"}\n' \
		"$2" $REGION "$3" > "$_f"
}
later=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)
cache corp https://corp.awsapps.com/start "$later"
cache https://legacy.awsapps.com/start https://legacy.awsapps.com/start "$later"
cache stale https://stale.awsapps.com/start 2001-01-01T00:00:00Z

# --- which source wins ---------------------------------------------------------------
same "static keys of a profile" AWS_PROFILE=base
same "assume role: role_arn + source_profile" AWS_PROFILE=dev
like "doctor names the role and its source" "$(cat "$T/doctor")" \
	"credentials: assume role arn:aws:iam::$ACCT:role/dev \\(profile dev, from shared credentials \\(profile base\\)\\)"
like "doctor says they are temporary, and until when" "$(cat "$T/doctor")" \
	'credentials: assume role .*; temporary, until 20[0-9-]+ [0-9:]+ UTC'
like "AssumeRole was signed by the source profile's key, with role_session_name" \
	"$(curl -s "$STS/_fake/log")" "\"AssumeRole\", \"$BASE_AK\", \\{\"RoleArn\": \"arn:aws:iam::$ACCT:role/dev\", \"RoleSessionName\": \"sbxtop-test\""
same "assume role through two profiles" AWS_PROFILE=chained
same "a source profile with keys and a role: its keys" AWS_PROFILE=via-both
same "external_id sent" AWS_PROFILE=guarded
same "the environment's keys over an assume-role profile" AWS_PROFILE=dev \
	AWS_ACCESS_KEY_ID=$ENV_AK AWS_SECRET_ACCESS_KEY=$ENV_SK
same "web identity from the environment" \
	AWS_WEB_IDENTITY_TOKEN_FILE="$T/web.jwt" AWS_ROLE_ARN="arn:aws:iam::$ACCT:role/ci"
like "doctor names web identity" "$(cat "$T/doctor")" 'credentials: web identity \(role arn:aws:iam::123456789012:role/ci'
same "web identity over the profile's keys" AWS_PROFILE=base \
	AWS_WEB_IDENTITY_TOKEN_FILE="$T/web.jwt" AWS_ROLE_ARN="arn:aws:iam::$ACCT:role/ci"
same "an assume-role profile over web identity" AWS_PROFILE=dev \
	AWS_WEB_IDENTITY_TOKEN_FILE="$T/web.jwt" AWS_ROLE_ARN="arn:aws:iam::$ACCT:role/ci"
same "web identity from a profile" AWS_PROFILE=webprof
same "AWS_ROLE_ARN over a web identity profile's role_arn" AWS_PROFILE=webprof \
	AWS_ROLE_ARN="arn:aws:iam::$ACCT:role/other"
same "sso_session with the cached token" AWS_PROFILE=sso
like "doctor names SSO" "$(cat "$T/doctor")" 'credentials: SSO \(profile sso, role Developer in 123456789012\)'
like "GetRoleCredentials had the account and role" "$(curl -s "$STS/_fake/log")" \
	"\"GetRoleCredentials\", \"-\", \\{\"account_id\": \"$ACCT\", \"role_name\": \"Developer\"\\}"
same "the older sso_start_url profile" AWS_PROFILE=sso-legacy
same "credential_process over the config file's keys" AWS_PROFILE=proc
same "the config file's keys" AWS_PROFILE=conf

# An sso_session token near its end, with the registration to refresh it: both
# refresh it through SSO OIDC CreateToken and write it back; each starts from
# the same stale cache.
stale_renew() {
	printf '{"startUrl": "https://renew.awsapps.com/start", "region": "%s", "accessToken": "old-token", "expiresAt": "%s", "clientId": "client-1", "clientSecret": "client-secret-1", "registrationExpiresAt": "%s", "refreshToken": "refresh-1"}\n' \
		$REGION "$(date -u -d '+5 minutes' +%Y-%m-%dT%H:%M:%SZ)" "$later" \
		> "$HOME/.aws/sso/cache/$(printf renew | sha1sum | cut -d' ' -f1).json"
}
stale_renew
_b=$(AWS_PROFILE=sso-renew setsid "$PY" "$TOP/tests/fakes/creds_oracle.py" "$STS" < /dev/null 2>&1)
stale_renew
AWS_PROFILE=sso-renew $L doctor --backend lambda > "$T/doctor" 2>&1
is "an SSO token about to expire, refreshed: the key botocore resolves (${_b#* }) is sbxtop's" \
	"$(last_signer)" "${_b%% *}"
is "both refreshed it with CreateToken" \
	"$(json_get "$(curl -s "$STS/_fake/log")" 'sum(1 for x in d["log"] if x[0] == "CreateToken" and "denied" not in x[2])')" 2
renewed="$HOME/.aws/sso/cache/$(printf renew | sha1sum | cut -d' ' -f1).json"
is "sbxtop wrote the new token and refresh token back to the cache" \
	"$(json_get "$(cat "$renewed")" '(d["accessToken"], d["refreshToken"], d["clientId"])')" \
	"('sso-cached-token', 'refresh-1-next', 'client-1')"
check "the cache file stays private" test "$(stat -c %a "$renewed")" = 600

# --- refusals ---------------------------------------------------------------------------
both_refuse "AWS_PROFILE naming no profile, even with keys in the environment" \
	"the AWS profile 'missing' is in neither" AWS_PROFILE=missing \
	AWS_ACCESS_KEY_ID=$ENV_AK AWS_SECRET_ACCESS_KEY=$ENV_SK
both_refuse "mfa_serial" 'sets mfa_serial: assuming a role with an MFA code is not supported' \
	AWS_PROFILE=mfa
both_refuse "a wrong external_id" 'AssumeRole arn:aws:iam::123456789012:role/guarded: AccessDenied' \
	AWS_PROFILE=guarded-wrong
both_refuse "role_arn without a source" 'sets role_arn but not where the credentials' \
	AWS_PROFILE=nosource
both_refuse "an expired SSO token" 'SSO token of profile sso-expired expired at 2001-01-01' \
	AWS_PROFILE=sso-expired
like "an expired SSO token: the hint says how to log in again" \
	"$(AWS_PROFILE=sso-expired $L doctor --backend lambda 2>&1)" 'aws sso login --sso-session stale'
printf 'not-the-token' > "$T/bad.jwt"
both_refuse "a web identity token STS refuses" 'AssumeRoleWithWebIdentity arn:aws:iam::123456789012:role/ci: InvalidIdentityToken' \
	AWS_WEB_IDENTITY_TOKEN_FILE="$T/bad.jwt" AWS_ROLE_ARN="arn:aws:iam::$ACCT:role/ci"
