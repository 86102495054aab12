/* Fuzz target: a create's request (core/create-opts.c).  Arbitrary bytes go
 * through cJSON and core_create_opts_from_json; the same bytes also drive a
 * generator of objects whose keys are the option table's, with values of every
 * JSON type, since the system cJSON carries no coverage instrumentation to steer
 * the fuzzer towards well-formed text.  What the parse accepts must hold what
 * the table promised: each number in its option's range or -1, a string where a
 * string goes, net made of the network entries alone. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/create-opts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The accepted o (with net) against the table: abort() when it breaks it. */
static void
holds(const struct core_create_opts *o, const cJSON *net)
{
	size_t n;
	const struct create_option *rows = create_options(&n);
	const cJSON *it;

	for (size_t i = 0; i < n; i++) {
		const char *at = (const char *)o + rows[i].off;
		const struct config_option *c = rows[i].config ?
		    config_option_find(rows[i].config) : NULL;
		double v;
		switch (rows[i].kind) {
		case CREATE_STRING:
			if (*(const char *const *)(const void *)at != NULL)
				(void)strlen(*(const char *const *)(const void *)at);
			break;
		case CREATE_INT:
		case CREATE_NUMBER:
			v = rows[i].kind == CREATE_INT ?
			    (double)*(const int64_t *)(const void *)at :
			    *(const double *)(const void *)at;
			if (v != -1 && (!isfinite(v) || v < c->min || v > c->max))
				abort();
			break;
		case CREATE_ENV:
			cJSON_ArrayForEach(it, *(const cJSON *const *)(const void *)at)
				if (!cJSON_IsString(it))
					abort();
			break;
		default:
			break;
		}
	}
	if (o->net != net)
		abort();
	cJSON_ArrayForEach(it, net) {
		const struct create_option *r = NULL;
		for (size_t i = 0; i < n && r == NULL; i++)
			if (strcmp(rows[i].key, it->string) == 0)
				r = &rows[i];
		if (r == NULL || (r->kind != CREATE_NET_LIST && r->kind != CREATE_NET_BOOL))
			abort();
	}
}

static void
one(const cJSON *args)
{
	struct core_create_opts o;
	struct sbx_err e;
	cJSON *net;

	if (core_create_opts_from_json(&o, args, &net, &e) == 0)
		holds(&o, net);
	else if (net != NULL || e.msg[0] == '\0')
		abort();
	cJSON_Delete(net);
}

/* An object of the table's keys: each pair of bytes picks a key and a value. */
static cJSON *
generate(const uint8_t *d, size_t len)
{
	size_t n;
	const struct create_option *rows = create_options(&n);
	cJSON *o = cJSON_CreateObject(), *v;

	for (size_t i = 0; i + 4 <= len; i += 4) {
		const char *k = rows[d[i] % n].key;
		int32_t x = (int32_t)((uint32_t)d[i + 2] << 8 | d[i + 3]) - 1024;
		switch (d[i + 1] % 10) {
		case 0: v = cJSON_CreateNull(); break;
		case 1: v = cJSON_CreateBool(d[i + 2] & 1); break;
		case 2: v = cJSON_CreateNumber(x); break;
		case 3: v = cJSON_CreateNumber(x / 7.0); break;
		case 4: v = cJSON_CreateNumber((double)x * 1e6); break;
		case 5: v = cJSON_CreateString(d[i + 2] & 1 ? "rules" : "x"); break;
		case 6: v = cJSON_CreateArray();
			cJSON_AddItemToArray(v, cJSON_CreateString("a.org"));
			if (d[i + 2] & 1)
				cJSON_AddItemToArray(v, cJSON_CreateNumber(x));
			break;
		case 7: v = cJSON_CreateObject();
			cJSON_AddStringToObject(v, "A", "b");
			if (d[i + 2] & 1)
				cJSON_AddNumberToObject(v, "B", x);
			break;
		case 8: v = cJSON_CreateNumber(NAN); break;
		default: v = cJSON_CreateNumber(INFINITY); break;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(o, k);
		cJSON_AddItemToObject(o, k, v);
	}
	return o;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *a = cJSON_ParseWithLength((const char *)data, size);

	one(a);
	cJSON_Delete(a);
	a = generate(data, size);
	one(a);
	cJSON_Delete(a);
	return 0;
}
