/* What a key is to be, and what a request says of its key (keys.h): pure
 * functions over untrusted text, fuzzed by tests/fuzz/keys.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lib/jspec.h"
#include "core/keys/keys.h"
#include "lib/utf8.h"
#include "lib/util.h"

static const struct {
	const char	*name;
	unsigned	 bit;
} scopes[] = {
	{ "exec",	KEY_EXEC },
	{ "admin",	KEY_ADMIN },
	{ "metrics",	KEY_METRICS },
};

const char *
key_scope_name(unsigned bit)
{
	for (size_t i = 0; i < ARRAY_SIZE(scopes); i++)
		if (scopes[i].bit == bit)
			return scopes[i].name;
	return NULL;
}

unsigned
key_scope_bit(const char *name)
{
	for (size_t i = 0; name != NULL && i < ARRAY_SIZE(scopes); i++)
		if (strcmp(scopes[i].name, name) == 0)
			return scopes[i].bit;
	return 0;
}

cJSON *
key_scopes_json(unsigned bits)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; i < ARRAY_SIZE(scopes); i++)
		if (bits & scopes[i].bit)
			cJSON_AddItemToArray(a, cJSON_CreateString(scopes[i].name));
	return a;
}

static int
bad_scope(struct sbx_err *e, const char *what)
{
	return sbx_error(e, SBX_EINVAL, "give one or more of exec, admin, metrics",
	    "unknown scope '%.40s'", what);
}

int
key_scopes_parse(const char *list, unsigned *bits, struct sbx_err *e)
{
	_cleanup_free_ char *copy = xstrdup(list);
	char *save = NULL;

	*bits = 0;
	for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		unsigned b = key_scope_bit(t);
		if (b == 0)
			return bad_scope(e, t);
		*bits |= b;
	}
	if (*bits == 0)
		return sbx_error(e, SBX_EINVAL, "give one or more of exec, admin, metrics",
		    "a key needs at least one scope");
	return 0;
}

int
key_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > KEY_NAME_MAX || !utf8_valid(name, n))
		return 0;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return 0;
		/* C1 controls, U+0080 to U+009F: 0xc2 0x80..0x9f in UTF-8. */
		if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			return 0;
	}
	return 1;
}

/* --- times --------------------------------------------------------------- */

/* n digits at *p as a number, *p moved past them; -1 when they are not there. */
static int
digits(const char **p, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	return v;
}

int
key_time_parse(const char *s, int64_t *ms)
{
	struct tm tm = { 0 }, back;
	const char *p = s;
	int y, mo, d, h = 0, mi = 0, sec = 0, frac = 0, off = 0;
	time_t t;

	if (s == NULL || (y = digits(&p, 4)) < 1970 || *p++ != '-' ||
	    (mo = digits(&p, 2)) < 1 || mo > 12 || *p++ != '-' ||
	    (d = digits(&p, 2)) < 1 || d > 31)
		return -1;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if ((h = digits(&p, 2)) < 0 || h > 23 || *p++ != ':' ||
		    (mi = digits(&p, 2)) < 0 || mi > 59)
			return -1;
		if (*p == ':') {
			p++;
			if ((sec = digits(&p, 2)) < 0 || sec > 59)
				return -1;
		}
		if (*p == '.') {
			int n = 0, scale = 100;
			for (p++; *p >= '0' && *p <= '9'; p++, n++) {
				frac += (*p - '0') * scale;
				scale /= 10;
			}
			if (n == 0 || n > 9)
				return -1;
		}
		if (*p == 'Z' || *p == 'z') {
			p++;
		} else if (*p == '+' || *p == '-') {
			int sign = *p++ == '-' ? -1 : 1, oh, om;
			if ((oh = digits(&p, 2)) < 0 || oh > 23 || *p++ != ':' ||
			    (om = digits(&p, 2)) < 0 || om > 59)
				return -1;
			off = sign * (oh * 60 + om) * 60;
		}
	}
	if (*p != '\0')
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	if ((t = timegm(&tm)) == (time_t)-1 || gmtime_r(&t, &back) == NULL ||
	    back.tm_mday != d || back.tm_mon != mo - 1)
		return -1;	/* the 31st of a month of 30 days, a 29th of February */
	*ms = ((int64_t)t - off) * 1000 + frac;
	return *ms < 0 ? -1 : 0;
}

void
key_time_format(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL) {
		snprintf(buf, len, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* --- a new key's request ---------------------------------------------------- */

int
key_spec_from_json(const cJSON *body, int64_t now, struct key_spec *s, struct sbx_err *e)
{
	static const char *const fields[] = { "name", "scopes", "rateLimit", "expiresAt" };
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(body, "name");
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(body, "scopes");
	const cJSON *rl = cJSON_GetObjectItemCaseSensitive(body, "rateLimit");
	const cJSON *ex = cJSON_GetObjectItemCaseSensitive(body, "expiresAt");
	const cJSON *m;

	memset(s, 0, sizeof *s);
	if (!cJSON_IsObject(body))
		return sbx_error(e, SBX_EINVAL, "send {\"name\": \"ci\", \"scopes\": [\"exec\"]}",
		    "the body must be a JSON object");
	cJSON_ArrayForEach(m, body) {
		size_t i = 0;
		while (i < ARRAY_SIZE(fields) && strcmp(fields[i], m->string) != 0)
			i++;
		if (i == ARRAY_SIZE(fields))
			return sbx_error(e, SBX_EINVAL, "the fields are name, scopes, rateLimit "
			    "and expiresAt", "unknown field '%.40s'", m->string);
	}
	if (!cJSON_IsString(name) || !key_name_ok(name->valuestring))
		return sbx_error(e, SBX_EINVAL, "name it with 1 to 64 characters, no control "
		    "characters", "name must be a key's name");
	snprintf(s->name, sizeof s->name, "%s", name->valuestring);
	s->scopes = KEY_EXEC;
	if (sc != NULL && !cJSON_IsNull(sc)) {
		const cJSON *x;
		if (!cJSON_IsArray(sc))
			return sbx_error(e, SBX_EINVAL, "give scopes as [\"exec\", \"metrics\"]",
			    "scopes must be an array of scope names");
		s->scopes = 0;
		cJSON_ArrayForEach(x, sc) {
			unsigned b = cJSON_IsString(x) ? key_scope_bit(x->valuestring) : 0;
			if (b == 0)
				return bad_scope(e, cJSON_IsString(x) ? x->valuestring : "(not a "
				    "string)");
			s->scopes |= b;
		}
		if (s->scopes == 0)
			return sbx_error(e, SBX_EINVAL, "give one or more of exec, admin, "
			    "metrics", "a key needs at least one scope");
	}
	s->rate_limit = KEY_RATE_DEFAULT;
	if (rl != NULL && !cJSON_IsNull(rl) && jint_in(rl, 1, KEY_RATE_MAX, &s->rate_limit) < 0)
		return sbx_error(e, SBX_EINVAL, "requests a key may make per window (60 s by "
		    "default)", "rateLimit must be an integer from 1 to %d", KEY_RATE_MAX);
	if (ex != NULL && !cJSON_IsNull(ex)) {
		if (!cJSON_IsString(ex) || key_time_parse(ex->valuestring, &s->expires_ms) < 0)
			return sbx_error(e, SBX_EINVAL, "e.g. \"2030-01-31T00:00:00Z\"",
			    "expiresAt must be an ISO 8601 time, or null");
		if (s->expires_ms <= now)
			return sbx_error(e, SBX_EINVAL, "give a time to come, or null for never",
			    "expiresAt is in the past");
	}
	return 0;
}

/* --- a request's credential ------------------------------------------------ */

const char *
key_credential(const char *authorization, const char *x_api_key, const char *query,
    enum key_from *from)
{
	*from = KEY_FROM_NONE;
	if (authorization != NULL && strncasecmp(authorization, "Bearer ", 7) == 0) {
		const char *t = authorization + 7;
		while (*t == ' ')
			t++;
		if (*t != '\0') {
			*from = KEY_FROM_BEARER;
			return t;
		}
	}
	if (x_api_key != NULL && *x_api_key != '\0') {
		*from = KEY_FROM_HEADER;
		return x_api_key;
	}
	if (query != NULL && *query != '\0') {
		*from = KEY_FROM_QUERY;
		return query;
	}
	return NULL;
}
