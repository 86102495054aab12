/* The JSON Schema subset of schema.h.  Messages are for an agent that sent the
 * wrong thing: they name the field, what was expected and what came. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <stdarg.h>
#include "mcp/schema.h"

#define PATH_MAX_LEN 256

static const char *
type_of(const cJSON *v)
{
	if (cJSON_IsObject(v))
		return "object";
	if (cJSON_IsArray(v))
		return "array";
	if (cJSON_IsString(v))
		return "string";
	if (cJSON_IsBool(v))
		return "boolean";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		return isfinite(d) && floor(d) == d ? "integer" : "number";
	}
	return "unknown";
}

static int
is_type(const cJSON *v, const char *t)
{
	const char *got = type_of(v);

	if (strcmp(t, "number") == 0)
		return cJSON_IsNumber(v);
	return strcmp(got, t) == 0;
}

static const char *
field(const char *path)
{
	return path[0] ? path : "arguments";
}

static int fail(char *msg, size_t len, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
fail(char *msg, size_t len, const char *path, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(msg, len, "%s: %s", field(path), what);
	return -1;
}

/* Code points, not bytes, as JSON Schema counts string length. */
static size_t
utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static int check(const cJSON *schema, const cJSON *v, char *path, size_t plen,
    char *msg, size_t len);

static int
check_type(const cJSON *schema, const cJSON *v, const char *path, char *msg, size_t len)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(schema, "type"), *x;
	char want[128] = "";

	if (t == NULL)
		return 0;
	if (cJSON_IsString(t)) {
		if (is_type(v, t->valuestring))
			return 0;
		snprintf(want, sizeof want, "%s", t->valuestring);
	} else if (cJSON_IsArray(t)) {
		cJSON_ArrayForEach(x, t) {
			if (cJSON_IsString(x) && is_type(v, x->valuestring))
				return 0;
			if (cJSON_IsString(x))
				snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s",
				    want[0] ? " or " : "", x->valuestring);
		}
	} else {
		return 0;
	}
	return fail(msg, len, path, "expected %s, got %s", want, type_of(v));
}

static int
check_enum(const cJSON *schema, const cJSON *v, const char *path, char *msg, size_t len)
{
	const cJSON *en = cJSON_GetObjectItemCaseSensitive(schema, "enum"), *x;
	char want[200] = "";

	if (!cJSON_IsArray(en))
		return 0;
	cJSON_ArrayForEach(x, en) {
		if (cJSON_Compare(x, v, 1))
			return 0;
		if (cJSON_IsString(x) && strlen(want) + strlen(x->valuestring) + 8 < sizeof want)
			snprintf(want + strlen(want), sizeof want - strlen(want), "%s\"%s\"",
			    want[0] ? ", " : "", x->valuestring);
	}
	return fail(msg, len, path, "expected one of %s", want);
}

static int
check_number(const cJSON *schema, const cJSON *v, const char *path, char *msg, size_t len)
{
	const cJSON *lo = cJSON_GetObjectItemCaseSensitive(schema, "minimum");
	const cJSON *hi = cJSON_GetObjectItemCaseSensitive(schema, "maximum");
	char a[32], b[32];

	if (!cJSON_IsNumber(v))
		return 0;
	if ((cJSON_IsNumber(lo) && v->valuedouble < lo->valuedouble) ||
	    (cJSON_IsNumber(hi) && v->valuedouble > hi->valuedouble)) {
		snprintf(a, sizeof a, "%.15g", cJSON_IsNumber(lo) ? lo->valuedouble : -INFINITY);
		snprintf(b, sizeof b, "%.15g", cJSON_IsNumber(hi) ? hi->valuedouble : INFINITY);
		return fail(msg, len, path, "out of range: expected %s to %s", a, b);
	}
	return 0;
}

static int
check_string(const cJSON *schema, const cJSON *v, const char *path, char *msg, size_t len)
{
	const cJSON *lo = cJSON_GetObjectItemCaseSensitive(schema, "minLength");
	const cJSON *hi = cJSON_GetObjectItemCaseSensitive(schema, "maxLength");
	size_t n;
	char a[32];

	if (!cJSON_IsString(v))
		return 0;
	n = utf8_chars(v->valuestring);
	if (cJSON_IsNumber(lo) && (double)n < lo->valuedouble) {
		snprintf(a, sizeof a, "%.0f", lo->valuedouble);
		return fail(msg, len, path, "too short: expected at least %s character%s", a,
		    lo->valuedouble == 1 ? "" : "s");
	}
	if (cJSON_IsNumber(hi) && (double)n > hi->valuedouble) {
		snprintf(a, sizeof a, "%.0f", hi->valuedouble);
		return fail(msg, len, path, "too long: expected at most %s characters", a);
	}
	return 0;
}

/* Append ".name" or "[i]" to path, within its bound; returns the old length. */
static size_t
push(char *path, size_t plen, const char *name, int index)
{
	size_t n = strlen(path);

	if (name != NULL)
		snprintf(path + n, plen - n, "%s%s", n ? "." : "", name);
	else
		snprintf(path + n, plen - n, "[%d]", index);
	return n;
}

static int
check_object(const cJSON *schema, const cJSON *v, char *path, size_t plen, char *msg,
    size_t len)
{
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required");
	const cJSON *addl = cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties");
	const cJSON *x;

	if (!cJSON_IsObject(v))
		return 0;
	cJSON_ArrayForEach(x, req) {
		if (cJSON_IsString(x) && cJSON_GetObjectItemCaseSensitive(v, x->valuestring) ==
		    NULL) {
			size_t old = push(path, plen, x->valuestring, 0);
			fail(msg, len, path, "required");
			path[old] = '\0';
			return -1;
		}
	}
	cJSON_ArrayForEach(x, v) {
		const cJSON *sub = cJSON_GetObjectItemCaseSensitive(props, x->string);
		size_t old = push(path, plen, x->string, 0);
		int rc = 0;

		if (sub != NULL)
			rc = check(sub, x, path, plen, msg, len);
		else if (cJSON_IsFalse(addl))
			rc = fail(msg, len, path, "unknown field");
		else if (cJSON_IsObject(addl))
			rc = check(addl, x, path, plen, msg, len);
		path[old] = '\0';
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int
check_array(const cJSON *schema, const cJSON *v, char *path, size_t plen, char *msg,
    size_t len)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items");
	const cJSON *lo = cJSON_GetObjectItemCaseSensitive(schema, "minItems");
	const cJSON *hi = cJSON_GetObjectItemCaseSensitive(schema, "maxItems");
	const cJSON *x;
	int i = 0, n;
	char a[32];

	if (!cJSON_IsArray(v))
		return 0;
	n = cJSON_GetArraySize(v);
	if (cJSON_IsNumber(lo) && n < lo->valuedouble) {
		snprintf(a, sizeof a, "%.0f", lo->valuedouble);
		return fail(msg, len, path, "expected at least %s item%s", a,
		    lo->valuedouble == 1 ? "" : "s");
	}
	if (cJSON_IsNumber(hi) && n > hi->valuedouble) {
		snprintf(a, sizeof a, "%.0f", hi->valuedouble);
		return fail(msg, len, path, "expected at most %s items", a);
	}
	if (!cJSON_IsObject(items))
		return 0;
	cJSON_ArrayForEach(x, v) {
		size_t old = push(path, plen, NULL, i++);
		int rc = check(items, x, path, plen, msg, len);
		path[old] = '\0';
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int
check(const cJSON *schema, const cJSON *v, char *path, size_t plen, char *msg, size_t len)
{
	if (!cJSON_IsObject(schema))
		return 0;
	if (check_type(schema, v, path, msg, len) < 0 ||
	    check_enum(schema, v, path, msg, len) < 0 ||
	    check_number(schema, v, path, msg, len) < 0 ||
	    check_string(schema, v, path, msg, len) < 0 ||
	    check_object(schema, v, path, plen, msg, len) < 0 ||
	    check_array(schema, v, path, plen, msg, len) < 0)
		return -1;
	return 0;
}

int
schema_check(const cJSON *schema, const cJSON *value, char *msg, size_t len)
{
	char path[PATH_MAX_LEN] = "";

	msg[0] = '\0';
	return check(schema, value, path, sizeof path, msg, len);
}
