/* Fuzz target: what a request says of API keys (core/keys/spec.c), all of it a
 * client's: POST /admin/keys's body, its expiresAt and the command line's
 * times, scope lists, names, and the credential picked from a request's
 * Authorization, X-API-Key and ?api_key.  What is accepted must hold what it
 * promised: a time formats and parses back to itself, a spec's name is a
 * key's name, its scopes known and its limit in range. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/keys/keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), buf[64];
	struct key_spec spec;
	struct sbx_err e;
	unsigned bits;
	int64_t ms, back;
	cJSON *o;

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	if (key_time_parse(s, &ms) == 0) {
		if (ms < 0)
			abort();
		key_time_format(ms, buf, sizeof buf);
		if (ms < 253402300800000LL && (key_time_parse(buf, &back) < 0 || back != ms))
			abort();	/* before year 10000, a time round-trips */
	}
	if (key_scopes_parse(s, &bits, &e) == 0 && (bits == 0 || (bits & ~KEY_SCOPES_ALL)))
		abort();
	if (key_name_ok(s) && (strlen(s) == 0 || strlen(s) > KEY_NAME_MAX))
		abort();

	o = cJSON_ParseWithLength((const char *)data, size);
	if (o != NULL) {
		if (key_spec_from_json(o, 1800000000000, &spec, &e) == 0) {
			if (!key_name_ok(spec.name) || spec.scopes == 0 ||
			    (spec.scopes & ~KEY_SCOPES_ALL) || spec.rate_limit < 1 ||
			    spec.rate_limit > KEY_RATE_MAX ||
			    (spec.expires_ms != 0 && spec.expires_ms <= 1800000000000))
				abort();
		} else if (e.msg[0] == '\0' || e.code != SBX_EINVAL) {
			abort();	/* a refusal says why */
		}
		cJSON_Delete(o);
	}

	/* The same bytes cut in three: a request's three places for a key. */
	{
		size_t a = size / 3, b = 2 * size / 3;
		char *p1 = strndup(s, a), *p2 = strndup(s + a, b - a), *p3 = strdup(s + b);
		enum key_from from;
		const char *c = key_credential(p1, p2, p3, &from);
		if ((c == NULL) != (from == KEY_FROM_NONE) || (c != NULL && *c == '\0'))
			abort();
		if (c != NULL && !((c >= p1 && c <= p1 + strlen(p1)) || c == p2 || c == p3))
			abort();	/* a pointer into what was given */
		free(p1);
		free(p2);
		free(p3);
	}
	free(s);
	return 0;
}
