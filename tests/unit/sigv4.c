/* Unit tests of the SigV4 signer: AWS's published example, the canonical pieces
 * (double-encoded ARN paths, sorted and encoded queries with repeated keys,
 * trimmed headers, session token), and error cases.  TAP lines.
 *
 * With --oracle it instead reads one JSON request per line on stdin and prints
 * the Authorization header for each: tests/integration/sigv4-oracle.sh compares
 * those with botocore's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tap.h"
#include "backends/lambda/sigv4.h"
#include "lib/util.h"

static void
is_str(const char *got, const char *want, const char *what)
{
	if (!check(got != NULL && strcmp(got, want) == 0, "%s", what)) {
		printf("# got:  %s\n# want: %s\n", got ? got : "(null)", want);
	}
}

/* 2015-08-30T12:36:00Z, the date of AWS's documented example. */
#define T_EXAMPLE 1440938160

static void
test_aws_example(void)
{
	/* AWS General Reference, "Signature Version 4 signing process" example:
	 * GET https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08 */
	struct sigv4_param q[] = { { "Version", "2010-05-08" }, { "Action", "ListUsers" } };
	struct sigv4_header h[] = {
		{ "Content-Type", "application/x-www-form-urlencoded; charset=utf-8" },
	};
	struct sigv4_request r = { "GET", "iam.amazonaws.com", "/", q, 2, h, 1, NULL, 0, 0, 0, NULL };
	struct sigv4_key k = { "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", NULL,
	    "us-east-1", "iam" };
	struct sigv4_out out;
	struct sbx_err e;
	char *cr = NULL, *sts = NULL, hash[65];

	check(sigv4_canonical(&r, &k, T_EXAMPLE, &cr, &sts, &e) == 0, "canonical of the example");
	sigv4_sha256_hex(cr, strlen(cr), hash);
	is_str(hash, "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59",
	    "the example's canonical request hashes as documented");
	check(sigv4_sign(&r, &k, T_EXAMPLE, &out, &e) == 0, "sign the example");
	is_str(out.authorization, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/"
	    "iam/aws4_request, SignedHeaders=content-type;host;x-amz-date, "
	    "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
	    "the example's Authorization header is the documented one");
	is_str(out.amz_date, "20150830T123600Z", "X-Amz-Date");
	is_str(out.query, "Action=ListUsers&Version=2010-05-08", "query sorted on the wire too");
	sigv4_out_free(&out);
	free(cr);
	free(sts);
}

static void
test_canonical_pieces(void)
{
	const char *arn = "arn:aws:lambda:us-east-1:123456789012:microvm-image:sbx/x y";
	char *seg = sigv4_escape(arn, 0);
	char *path = xasprintf("/2025-09-09/microvm-images/%s", seg);
	struct sigv4_param q[] = {
		{ "nextToken", "a+b/c=d" }, { "maxResults", "5" }, { "tag", "b" }, { "tag", "a" },
		{ "empty", NULL }, { "ünï", "~x y*" },
	};
	struct sigv4_header h[] = {
		{ "Content-Type", "  application/json   " },
		{ "X-Multi", "a   b\tc" },
		{ "x-multi", "second" },
	};
	struct sigv4_request r = { "POST", "127.0.0.1:8443", path, q, 6, h, 3, "{}", 2, 0, 0, NULL };
	struct sigv4_key k = { "AKIA", "secret", "tok en", "eu-west-1", "lambda-microvms" };
	struct sbx_err e;
	char *cr = NULL, *sts = NULL;

	is_str(seg, "arn%3Aaws%3Alambda%3Aus-east-1%3A123456789012%3Amicrovm-image%3Asbx%2Fx%20y",
	    "an ARN segment: colons, slash and space encoded, upper-case hex");
	check(sigv4_canonical(&r, &k, T_EXAMPLE, &cr, &sts, &e) == 0, "canonical of a POST");
	const char *want =
	    "POST\n"
	    "/2025-09-09/microvm-images/arn%253Aaws%253Alambda%253Aus-east-1%253A123456789012"
	    "%253Amicrovm-image%253Asbx%252Fx%2520y\n"
	    "%C3%BCn%C3%AF=~x%20y%2A&empty=&maxResults=5&nextToken=a%2Bb%2Fc%3Dd&tag=a&tag=b\n"
	    "content-type:application/json\n"
	    "host:127.0.0.1:8443\n"
	    "x-amz-date:20150830T123600Z\n"
	    "x-amz-security-token:tok en\n"
	    "x-multi:a b c,second\n"
	    "\n"
	    "content-type;host;x-amz-date;x-amz-security-token;x-multi\n"
	    "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
	is_str(cr, want, "path encoded twice, query sorted bytewise by encoded key then value, headers trimmed, "
	    "repeated header joined, token signed, body hashed");
	check(sts && strncmp(sts, "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/eu-west-1/"
	    "lambda-microvms/aws4_request\n", 82) == 0, "string to sign: scope");
	free(cr);
	free(sts);

	/* An empty body hashes as "". */
	struct sigv4_request g = { "GET", "h", "", NULL, 0, NULL, 0, NULL, 0, 0, 0, NULL };
	struct sigv4_out out;
	check(sigv4_sign(&g, &k, T_EXAMPLE, &out, &e) == 0, "sign a GET with no body or path");
	is_str(out.payload_hash, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	    "empty payload hash");
	is_str(out.query, "", "no query");
	sigv4_out_free(&out);

	/* Errors. */
	struct sigv4_header bad[] = { { "X-Evil", "a\r\nInjected: 1" } };
	struct sigv4_request b = { "GET", "h", "/", NULL, 0, bad, 1, NULL, 0, 0, 0, NULL };
	check(sigv4_sign(&b, &k, T_EXAMPLE, &out, &e) < 0 && e.code == SBX_EINVAL,
	    "a header value with CR/LF is refused");
	struct sigv4_key nok = { "AKIA", NULL, NULL, "r", "s" };
	check(sigv4_sign(&g, &nok, T_EXAMPLE, &out, &e) < 0, "no secret key: refused");

	/* The signature changes with each input it covers. */
	char base[SIGV4_AUTH_MAX];
	struct sigv4_request s1 = { "GET", "h", "/a", NULL, 0, NULL, 0, NULL, 0, 0, 0, NULL };
	sigv4_sign(&s1, &k, T_EXAMPLE, &out, &e);
	snprintf(base, sizeof base, "%s", out.authorization);
	sigv4_out_free(&out);
	s1.path = "/b";
	sigv4_sign(&s1, &k, T_EXAMPLE, &out, &e);
	check(strcmp(base, out.authorization) != 0, "path is covered");
	sigv4_out_free(&out);
	s1.path = "/a";
	sigv4_sign(&s1, &k, T_EXAMPLE + 1, &out, &e);
	check(strcmp(base, out.authorization) != 0, "time is covered");
	sigv4_out_free(&out);
	k.session_token = "other";
	sigv4_sign(&s1, &k, T_EXAMPLE, &out, &e);
	check(strcmp(base, out.authorization) != 0, "session token is covered");
	sigv4_out_free(&out);
	free(seg);
	free(path);
}

/* --oracle: {"method","host","path","query":[[k,v]...],"headers":[[n,v]...],
 * "body","access_key","secret_key","token","region","service","time"[,"s3","unsigned"]}
 * per line. */
static int
oracle(void)
{
	char *line = NULL;
	size_t cap = 0;

	while (getline(&line, &cap, stdin) > 0) {
		cJSON *o = cJSON_Parse(line), *q = cJSON_GetObjectItem(o, "query"),
		    *h = cJSON_GetObjectItem(o, "headers"), *x;
		struct sigv4_param qp[64];
		struct sigv4_header hp[SIGV4_MAX_HEADERS];
		size_t nq = 0, nh = 0;
		const char *body;
		struct sigv4_out out;
		struct sbx_err e;

		if (o == NULL)
			return 2;
		cJSON_ArrayForEach(x, q) {
			if (nq < 64) {
				qp[nq].key = cJSON_GetArrayItem(x, 0)->valuestring;
				qp[nq++].value = cJSON_GetArrayItem(x, 1)->valuestring;
			}
		}
		cJSON_ArrayForEach(x, h) {
			if (nh < SIGV4_MAX_HEADERS) {
				hp[nh].name = cJSON_GetArrayItem(x, 0)->valuestring;
				hp[nh++].value = cJSON_GetArrayItem(x, 1)->valuestring;
			}
		}
		body = cJSON_GetStringValue(cJSON_GetObjectItem(o, "body"));
		struct sigv4_request r = {
			cJSON_GetStringValue(cJSON_GetObjectItem(o, "method")),
			cJSON_GetStringValue(cJSON_GetObjectItem(o, "host")),
			cJSON_GetStringValue(cJSON_GetObjectItem(o, "path")),
			qp, nq, hp, nh, body, body ? strlen(body) : 0,
			cJSON_IsTrue(cJSON_GetObjectItem(o, "s3")),
			cJSON_IsTrue(cJSON_GetObjectItem(o, "unsigned")), NULL,
		};
		struct sigv4_key k = {
			cJSON_GetStringValue(cJSON_GetObjectItem(o, "access_key")),
			cJSON_GetStringValue(cJSON_GetObjectItem(o, "secret_key")),
			cJSON_GetStringValue(cJSON_GetObjectItem(o, "token")),
			cJSON_GetStringValue(cJSON_GetObjectItem(o, "region")),
			cJSON_GetStringValue(cJSON_GetObjectItem(o, "service")),
		};
		time_t t = (time_t)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "time"));
		if (sigv4_sign(&r, &k, t, &out, &e) < 0)
			printf("ERROR %s\n", e.msg);
		else
			printf("%s\n", out.authorization);
		sigv4_out_free(&out);
		cJSON_Delete(o);
	}
	free(line);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--oracle") == 0)
		return oracle();
	test_aws_example();
	test_canonical_pieces();
	return tap_end();
}
