/* AWS Signature Version 4, written with OpenSSL's SHA-256 and HMAC-SHA256.  Not libcurl's CURLOPT_AWS_SIGV4: Debian 12's libcurl 7.88
 * canonicalises percent-encoded path segments (an ARN in a path) and query
 * strings differently from AWS, which then rejects the signature.
 *
 * The rules followed (AWS "Create a canonical request", non-S3):
 *   - the canonical URI is the wire path URI-encoded once more, so each segment
 *     ends up encoded twice ("arn:aws" -> wire "arn%3Aaws" -> "arn%253Aaws");
 *   - query parameters are encoded (RFC 3986 unreserved kept, %XX upper case),
 *     sorted by encoded name then value; repeated names are kept;
 *   - header names lower-cased, values trimmed with inner runs of spaces
 *     collapsed, sorted, repeated names joined with ',';
 *   - host, x-amz-date and (with temporary credentials) x-amz-security-token are
 *     always signed; the payload hash is SHA-256 of the body (of "" when empty).
 * S3 (sigv4_request.s3) differs in two ways: the canonical URI is the wire path
 * as it is (segments encoded once, not twice), and the payload hash travels in
 * a signed x-amz-content-sha256 header, which may be "UNSIGNED-PAYLOAD". */
#ifndef SBX_SIGV4_H
#define SBX_SIGV4_H

#include <stddef.h>
#include <time.h>

#include "lib/err.h"

#define SIGV4_MAX_HEADERS	16
#define SIGV4_AUTH_MAX		1024

struct sigv4_param {
	const char	*key;		/* raw, not encoded */
	const char	*value;		/* raw; NULL is the same as "" */
};

struct sigv4_header {
	const char	*name;
	const char	*value;
};

struct sigv4_request {
	const char			*method;	/* "GET", "POST", ... */
	const char			*host;		/* the Host header as sent: "h" or "h:port" */
	const char			*path;		/* as on the wire: segments encoded once */
	const struct sigv4_param	*query;
	size_t				 nquery;
	const struct sigv4_header	*headers;	/* more headers to sign (content-type) */
	size_t				 nheaders;
	const void			*body;
	size_t				 body_len;
	int				 s3;		/* S3's rules (see above) */
	int				 unsigned_payload; /* s3: "UNSIGNED-PAYLOAD" */
	const char			*payload_hash;	/* hex SHA-256 of the body when the
							 * caller has it, else NULL */
};

struct sigv4_key {
	const char	*access_key;
	const char	*secret_key;
	const char	*session_token;	/* NULL for long-term keys */
	const char	*region;
	const char	*service;
};

struct sigv4_out {
	char	 amz_date[17];			/* "20250909T120000Z": send as X-Amz-Date */
	char	 payload_hash[65];			/* s3: send as X-Amz-Content-SHA256 */
	char	 authorization[SIGV4_AUTH_MAX];	/* send as Authorization */
	char	*query;				/* the encoded query to send after '?', or
						 * "" (caller frees) */
};

/* Sign r with k at time when; out gets what to send.  -1 with SBX_EINVAL for a
 * request that cannot be signed (too many headers, a header with CR/LF). */
int sigv4_sign(const struct sigv4_request *r, const struct sigv4_key *k, time_t when,
    struct sigv4_out *out, struct sbx_err *e);
void sigv4_out_free(struct sigv4_out *out);

/* The canonical request and string to sign of r (for tests and --debug),
 * caller frees both.  The same rules as sigv4_sign. */
int sigv4_canonical(const struct sigv4_request *r, const struct sigv4_key *k, time_t when,
    char **canonical_request, char **string_to_sign, struct sbx_err *e);

/* AWS URI encoding of s: unreserved characters (A-Z a-z 0-9 - _ . ~) kept,
 * everything else %XX; '/' kept when keep_slash.  Caller frees. */
char *sigv4_escape(const char *s, int keep_slash);

/* Lower-case hex SHA-256 of n bytes. */
void sigv4_sha256_hex(const void *p, size_t n, char out[65]);

#endif
