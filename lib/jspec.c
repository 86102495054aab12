/* JSON request validation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/b64.h"
#include "lib/jspec.h"
#include "lib/utf8.h"
#include "lib/util.h"

static const char *
jtype_name(enum jtype t)
{
	switch (t) {
	case J_STRING:	return "a string";
	case J_INT:	return "a whole number";
	case J_BOOL:	return "true or false";
	case J_STRMAP:	return "an object of strings";
	case J_STRLIST:	return "an array of strings";
	case J_OBJECT:	return "an object";
	}
	return "?";
}

static int
jtype_ok(const cJSON *v, const struct jfield *f, char *msg, size_t msglen)
{
	const cJSON *e;

	switch (f->type) {
	case J_STRING:
		return cJSON_IsString(v);
	case J_BOOL:
		return cJSON_IsBool(v);
	case J_OBJECT:
		return cJSON_IsObject(v);
	case J_INT: {
		if (!cJSON_IsNumber(v))
			return 0;
		double d = v->valuedouble;
		if (d != floor(d) || d < -9007199254740992.0 || d > 9007199254740992.0)
			return 0;
		if ((f->min || f->max) && (d < (double)f->min || d > (double)f->max)) {
			snprintf(msg, msglen, "field '%s' must be between %lld and %lld",
			    f->name, (long long)f->min, (long long)f->max);
			return -1;
		}
		return 1;
	}
	case J_STRMAP:
		if (!cJSON_IsObject(v))
			return 0;
		cJSON_ArrayForEach(e, v) {
			if (!cJSON_IsString(e)) {
				snprintf(msg, msglen, "field '%s.%s' must be a string",
				    f->name, e->string);
				return -1;
			}
		}
		return 1;
	case J_STRLIST:
		if (!cJSON_IsArray(v))
			return 0;
		cJSON_ArrayForEach(e, v) {
			if (!cJSON_IsString(e)) {
				snprintf(msg, msglen, "field '%s' must hold only strings", f->name);
				return -1;
			}
		}
		return 1;
	}
	return 0;
}

int
jspec_check(const cJSON *obj, const struct jfield *spec, char *msg, size_t msglen)
{
	const cJSON *v;
	const struct jfield *f;

	if (!cJSON_IsObject(obj)) {
		snprintf(msg, msglen, "the body must be a JSON object");
		return -1;
	}
	cJSON_ArrayForEach(v, obj) {
		for (f = spec; f->name != NULL; f++)
			if (strcmp(f->name, v->string) == 0)
				break;
		if (f->name == NULL) {
			snprintf(msg, msglen, "unknown field '%.64s'", v->string);
			return -1;
		}
		if (cJSON_IsNull(v) && !f->required)
			continue;
		int ok = jtype_ok(v, f, msg, msglen);
		if (ok < 0)
			return -1;
		if (!ok) {
			snprintf(msg, msglen, "field '%s' must be %s", f->name, jtype_name(f->type));
			return -1;
		}
	}
	for (f = spec; f->name != NULL; f++) {
		if (f->required && (v = cJSON_GetObjectItemCaseSensitive(obj, f->name)) == NULL) {
			snprintf(msg, msglen, "field '%s' is required", f->name);
			return -1;
		}
	}
	return 0;
}

const char *
jstr(const cJSON *obj, const char *name, const char *def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	return cJSON_IsString(v) ? v->valuestring : def;
}

int64_t
jint_of(const cJSON *v, int64_t def, int64_t lo, int64_t hi)
{
	int64_t n;

	if (!cJSON_IsNumber(v) || v->valuedouble != v->valuedouble)
		return def;
	if (v->valuedouble >= 9.2e18)
		n = INT64_MAX;
	else if (v->valuedouble <= -9.2e18)
		n = INT64_MIN;
	else
		n = (int64_t)v->valuedouble;
	return n < lo ? lo : n > hi ? hi : n;
}

int
jint_in(const cJSON *v, int64_t min, int64_t max, int64_t *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return -1;
	d = v->valuedouble;
	if (!(d >= (double)min && d <= (double)max) || d != floor(d) || fabs(d) >= 9.2e18)
		return -1;
	*out = (int64_t)d;
	return 0;
}

int64_t
jint(const cJSON *obj, const char *name, int64_t def)
{
	return jint_of(cJSON_GetObjectItemCaseSensitive(obj, name), def, INT64_MIN, INT64_MAX);
}

double
jnum(const cJSON *obj, const char *name, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : def;
}

int
jbool(const cJSON *obj, const char *name, int def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

void
jadd_name(cJSON *obj, const char *name, const char *s)
{
	size_t n = strlen(s);
	char *lossy, *b64, key[64];

	if (utf8_valid(s, n)) {
		cJSON_AddStringToObject(obj, name, s);
		return;
	}
	lossy = xmalloc(3 * n + 1);
	utf8_lossy(s, n, lossy, 3 * n + 1);
	cJSON_AddStringToObject(obj, name, lossy);
	free(lossy);
	b64 = b64_encode(s, n);
	snprintf(key, sizeof key, "%s_b64", name);
	cJSON_AddStringToObject(obj, key, b64);
	free(b64);
}

int
jfix_utf8(cJSON *v)
{
	int fixed = 0;

	for (; v != NULL; v = v->next) {
		/* A constant key is one of ours (a literal); the rest cJSON frees
		 * with its allocator, which is malloc here. */
		char **strs[2] = { (v->type & cJSON_StringIsConst) ? NULL : &v->string,
		    cJSON_IsString(v) ? &v->valuestring : NULL };
		for (int i = 0; i < 2; i++) {
			char **s = strs[i];
			if (s == NULL || *s == NULL || utf8_valid(*s, strlen(*s)))
				continue;
			size_t n = strlen(*s);
			char *l = malloc(3 * n + 1);
			if (l == NULL)
				fatal("out of memory");
			utf8_lossy(*s, n, l, 3 * n + 1);
			if (i == 1 && (v->type & cJSON_IsReference))
				v->type &= ~cJSON_IsReference;	/* not ours to free; l is */
			else
				free(*s);
			*s = l;
			fixed = 1;
		}
		if (v->child != NULL)
			fixed |= jfix_utf8(v->child);
	}
	return fixed;
}
