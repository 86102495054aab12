# SigV4 against an oracle: botocore (Debian's python3-botocore) signs the same
# requests as backends/lambda/sigv4.c, and every Authorization header must match.  Paths
# with ARNs, queries with reserved characters and repeated keys, bodies, empty
# bodies, session tokens, several regions, services and dates; and S3's variant
# (the path signed as sent, X-Amz-Content-SHA256, UNSIGNED-PAYLOAD) against
# botocore's S3SigV4Auth.
. "$(dirname "$0")/../lib.sh"

need_botocore
diag "oracle: $("$PY" -c 'import botocore; print("botocore", botocore.__version__, botocore.__file__)')"
"$PY" "$TOP/tests/fakes/sigv4_oracle.py" gen 400 > "$T/cases"
"$BUILD/tests/sigv4" --oracle < "$T/cases" > "$T/ours"
"$PY" "$TOP/tests/fakes/sigv4_oracle.py" sign < "$T/cases" > "$T/theirs"
n=$(wc -l < "$T/cases")
is "600 generated requests (200 of them S3)" "$n" 600
is "as many signatures from us" "$(wc -l < "$T/ours")" "$n"
bad=$(paste -d '\n' "$T/ours" "$T/theirs" | paste - - | awk -F '\t' '$1 != $2' | wc -l)
is "every Authorization header equals botocore's" "$bad" 0
if [ "$bad" != 0 ]; then
	paste -d '\n' "$T/cases" "$T/ours" "$T/theirs" | paste - - - | awk -F '\t' '$2 != $3' | head -3 |
		while IFS= read -r l; do diag "$l"; done
fi
# The hard cases are in the mix, not left to chance.
like "an ARN path is among them" "$(cat "$T/cases")" 'microvm-images/arn%3Aaws'
like "a repeated query key is among them" "$(cat "$T/cases")" '\["tag", "[^"]*"\], \["tag"'
like "a session token is among them" "$(cat "$T/cases")" '"token": "[A-Za-z0-9]'
check "an S3 key with a space is among them" \
	sh -c "grep '\"s3\": true' '$T/cases' | grep -q '\"path\": \"[^\"]*%20'"
like "an unsigned S3 payload is among them" "$(cat "$T/cases")" '"unsigned": true'
s3bad=$(paste -d '\n' "$T/cases" "$T/ours" "$T/theirs" | paste - - - | grep '"s3": true' |
	awk -F '\t' '$2 != $3' | wc -l)
is "every S3 signature equals S3SigV4Auth's" "$s3bad" 0
done_testing
