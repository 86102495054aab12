/* Fuzz target: request bodies.  Arbitrary bytes go through cJSON and then through
 * field tables shaped like the agent's routes (exec, files, the run hook), with
 * the typed getters; a table that accepts an object must really hold what it
 * promised.  The same bytes also drive a small generator of JSON objects built
 * with field names from the tables, since the system cJSON carries no coverage
 * instrumentation to steer the fuzzer towards well-formed text. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jspec.h"

static const struct jfield exec_spec[] = {
	{ "cmd", J_STRING, 1, 0, 0 },
	{ "cwd", J_STRING, 0, 0, 0 },
	{ "env", J_STRMAP, 0, 0, 0 },
	{ "stdin", J_STRING, 0, 0, 0 },
	{ "timeout_ms", J_INT, 0, 1, 86400000 },
	{ "max_output", J_INT, 0, 0, 64 << 20 },
	{ "as_root", J_BOOL, 0, 0, 0 },
	{ "stream", J_BOOL, 0, 0, 0 },
	{ "background", J_BOOL, 0, 0, 0 },
	{ NULL, 0, 0, 0, 0 }
};

static const struct jfield write_spec[] = {
	{ "path", J_STRING, 1, 0, 0 },
	{ "content", J_STRING, 1, 0, 0 },
	{ "encoding", J_STRING, 0, 0, 0 },
	{ "mode", J_INT, 0, 0, 07777 },
	{ "mkdirs", J_BOOL, 0, 0, 0 },
	{ NULL, 0, 0, 0, 0 }
};

static const struct jfield list_spec[] = {
	{ "path", J_STRING, 0, 0, 0 },
	{ "recursive", J_BOOL, 0, 0, 0 },
	{ "hidden", J_BOOL, 0, 0, 0 },
	{ "max_entries", J_INT, 0, 1, 100000 },
	{ "exclude", J_STRLIST, 0, 0, 0 },
	{ "offset", J_INT, 0, 0, 0 },
	{ "meta", J_OBJECT, 0, 0, 0 },
	{ NULL, 0, 0, 0, 0 }
};

static const struct jfield run_spec[] = {
	{ "secret", J_STRING, 1, 0, 0 },
	{ "env", J_STRMAP, 0, 0, 0 },
	{ NULL, 0, 0, 0, 0 }
};

static const struct jfield *const specs[] = { exec_spec, write_spec, list_spec, run_spec };

static int
holds(const cJSON *v, const struct jfield *f)
{
	const cJSON *e;

	switch (f->type) {
	case J_STRING:	return cJSON_IsString(v);
	case J_BOOL:	return cJSON_IsBool(v);
	case J_OBJECT:	return cJSON_IsObject(v);
	case J_INT:
		if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
			return 0;
		return !(f->min || f->max) ||
		    (v->valuedouble >= (double)f->min && v->valuedouble <= (double)f->max);
	case J_STRMAP:
		if (!cJSON_IsObject(v))
			return 0;
		cJSON_ArrayForEach(e, v)
			if (!cJSON_IsString(e))
				return 0;
		return 1;
	case J_STRLIST:
		if (!cJSON_IsArray(v))
			return 0;
		cJSON_ArrayForEach(e, v)
			if (!cJSON_IsString(e))
				return 0;
		return 1;
	}
	return 0;
}

static void
check_against(const cJSON *o, const struct jfield *spec)
{
	char msg[256];
	size_t len;

	memset(msg, 0x55, sizeof msg);
	if (jspec_check(o, spec, msg, sizeof msg) < 0) {
		len = strnlen(msg, sizeof msg);
		if (len == 0 || len == sizeof msg)
			abort();		/* an error must say something, within the buffer */
		return;
	}
	if (!cJSON_IsObject(o))
		abort();
	for (const struct jfield *f = spec; f->name != NULL; f++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, f->name);
		if (v == NULL) {
			if (f->required)
				abort();
			continue;
		}
		if (cJSON_IsNull(v) && !f->required)
			continue;
		if (!holds(v, f))
			abort();
		switch (f->type) {
		case J_STRING:
			if (jstr(o, f->name, NULL) != v->valuestring)
				abort();
			break;
		case J_INT: {
			int64_t i = jint(o, f->name, -1);
			if ((f->min || f->max) && (i < f->min || i > f->max))
				abort();
			break;
		}
		case J_BOOL:
			if (jbool(o, f->name, -1) != cJSON_IsTrue(v))
				abort();
			break;
		default:
			break;
		}
	}
	/* Every member is a field of the table. */
	const cJSON *m;
	cJSON_ArrayForEach(m, o) {
		const struct jfield *f = spec;
		while (f->name != NULL && strcmp(f->name, m->string) != 0)
			f++;
		if (f->name == NULL)
			abort();
	}
}

/* The generator's input, consumed a byte at a time (zeros once it runs out). */
struct src {
	const uint8_t	*p;
	size_t		 n;
};

static unsigned
take(struct src *s)
{
	if (s->n == 0)
		return 0;
	s->n--;
	return *s->p++;
}

static const char *const names[] = {
	"cmd", "cwd", "env", "stdin", "timeout_ms", "max_output", "as_root", "stream",
	"background", "path", "content", "encoding", "mode", "mkdirs", "recursive",
	"hidden", "max_entries", "exclude", "offset", "meta", "secret", "", "PATH",
};

static cJSON *
gen(struct src *s, int depth)
{
	static const double numbers[] = {
		0, 1, -1, 0.5, 7, 4095, 4096, 100000, 100001, 86400000, 86400001,
		9007199254740992.0, 9007199254740994.0, -9007199254740994.0, 1e300, -1e300,
	};
	unsigned k = take(s);
	cJSON *v;
	char str[64];
	size_t len;

	switch (depth > 4 ? k % 6 : k % 8) {
	case 0: return cJSON_CreateNull();
	case 1: return cJSON_CreateBool(k & 8);
	case 2: return cJSON_CreateNumber(numbers[take(s) % (sizeof numbers / sizeof numbers[0])]);
	case 3: return cJSON_CreateNumber((double)(int32_t)(take(s) << 24 | take(s) << 16 |
		    take(s) << 8 | take(s)) / (double)(1 + take(s) % 4));
	case 4:
	case 5:
		len = take(s) % sizeof str;
		for (size_t i = 0; i < len; i++)
			str[i] = (char)(take(s) | 1);	/* no NUL inside */
		str[len] = '\0';
		return cJSON_CreateString(str);
	case 6:
		v = cJSON_CreateArray();
		for (unsigned i = take(s) % 5; i > 0; i--)
			cJSON_AddItemToArray(v, gen(s, depth + 1));
		return v;
	default:
		v = cJSON_CreateObject();
		for (unsigned i = take(s) % 6; i > 0; i--)
			cJSON_AddItemToObject(v, names[take(s) % (sizeof names / sizeof names[0])],
			    gen(s, depth + 1));
		return v;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *o = cJSON_ParseWithLength((const char *)data, size);
	const cJSON *m;

	if (o == NULL) {
		struct src s = { data, size };
		cJSON *g = cJSON_CreateObject();
		for (unsigned i = take(&s) % 10; i > 0; i--)
			cJSON_AddItemToObject(g, names[take(&s) % (sizeof names / sizeof names[0])],
			    gen(&s, 1));
		o = g;
	}
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
		check_against(o, specs[i]);
		/* Nested objects too: more shapes per input. */
		cJSON_ArrayForEach(m, o)
			if (cJSON_IsObject(m))
				check_against(m, specs[i]);
	}
	/* The getters on whatever names the input has, with any types.  jint is
	 * only defined for numbers an int64_t can hold (jspec_check guarantees
	 * +-2^53 for J_INT fields), so out-of-range numbers are left out here. */
	cJSON_ArrayForEach(m, o) {
		if (m->string == NULL)
			continue;
		(void)jstr(o, m->string, "");
		(void)jbool(o, m->string, 0);
		/* With duplicate names the getters see the first member of that name. */
		const cJSON *first = cJSON_GetObjectItemCaseSensitive(o, m->string);
		if (!cJSON_IsNumber(first) || fabs(first->valuedouble) < 9.2e18)
			(void)jint(o, m->string, 0);
	}
	cJSON_Delete(o);
	return 0;
}
