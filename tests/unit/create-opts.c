/* Unit tests for the create's option table (core/create-opts.c): the MCP
 * tool's input schema (and so REST's, docs/openapi.json) names every row with
 * the range of its configuration option, and the one parse of a request into
 * struct core_create_opts checks types and ranges, naming the field.  TAP
 * lines. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "core/create-opts.h"
#include "mcp/schema.h"
#include "mcp/tool.h"

extern const struct mcp_tool mcp_tool_create;

/* The schema's property for row r agrees with the row (its type, and its
 * configuration option's range or choices); why it does not into why. */
static int
agrees(const struct create_option *r, const cJSON *p, char *why, size_t len)
{
	const struct config_option *c = r->config ? config_option_find(r->config) : NULL;
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(p, "type"));
	const cJSON *lo = cJSON_GetObjectItem(p, "minimum"), *hi = cJSON_GetObjectItem(p, "maximum");
	const cJSON *en = cJSON_GetObjectItem(p, "enum"), *items = cJSON_GetObjectItem(p, "items");
	static const char *const want[] = {
		[CREATE_STRING] = "string", [CREATE_INT] = "integer", [CREATE_NUMBER] = "number",
		[CREATE_ENV] = "object", [CREATE_NET_LIST] = "array", [CREATE_NET_BOOL] = "boolean",
	};

	if (p == NULL)
		return snprintf(why, len, "not in the schema"), 0;
	if (r->config != NULL && c == NULL)
		return snprintf(why, len, "no configuration option %s", r->config), 0;
	if (c != NULL && c->type == CONFIG_CHOICE) {
		int i = 0;
		const cJSON *x;
		cJSON_ArrayForEach(x, en)
			if (c->choices[i] == NULL || strcmp(c->choices[i++], x->valuestring) != 0)
				return snprintf(why, len, "its enum is not %s's choices", c->name), 0;
		if (en == NULL || c->choices[i] != NULL)
			return snprintf(why, len, "its enum is not %s's choices", c->name), 0;
		return 1;
	}
	if (type == NULL || strcmp(type, want[r->kind]) != 0)
		return snprintf(why, len, "type %s, not %s", type ? type : "none", want[r->kind]), 0;
	if (r->kind == CREATE_INT || r->kind == CREATE_NUMBER) {
		if (!cJSON_IsNumber(lo) || !cJSON_IsNumber(hi) || lo->valuedouble != c->min ||
		    hi->valuedouble != c->max)
			return snprintf(why, len, "range %.15g..%.15g, not %s's %.15g..%.15g",
			    cJSON_IsNumber(lo) ? lo->valuedouble : NAN,
			    cJSON_IsNumber(hi) ? hi->valuedouble : NAN, c->name, c->min, c->max), 0;
	} else if (lo != NULL || hi != NULL) {
		return snprintf(why, len, "a range on a %s", want[r->kind]), 0;
	}
	if (r->kind == CREATE_NET_LIST && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(items,
	    "type")) ?: "", "string") != 0)
		return snprintf(why, len, "items are not strings"), 0;
	return 1;
}

static void
test_schema(void)
{
	cJSON *s = cJSON_Parse(mcp_tool_create.input_schema), *props, *p;
	const cJSON *in = mcp_tool_input_schema(&mcp_tool_create);
	size_t n;
	const struct create_option *rows = create_options(&n);
	char why[200];
	int all = 1;

	props = cJSON_GetObjectItem(s, "properties");
	check(props != NULL, "sandbox_create's input schema parses");
	for (size_t i = 0; i < n; i++)
		if (!agrees(&rows[i], cJSON_GetObjectItem(cJSON_GetObjectItem(in, "properties"),
		    rows[i].key), why, sizeof why)) {
			all = 0;
			diag("%s: %s", rows[i].key, why);
		}
	check(all, "every row of the option table is in the schema sandbox_create's calls "
	    "(and REST's) are checked against, with its type and range");
	all = 1;
	cJSON_ArrayForEach(p, props)
		if (cJSON_HasObjectItem(p, "minimum") || cJSON_HasObjectItem(p, "maximum")) {
			all = 0;
			diag("%s has a range written in the schema", p->string);
		}
	check(all, "the schema as written has no range of its own: the table's are the one "
	    "copy (tools/list leaves them out)");
	all = 1;
	cJSON_ArrayForEach(p, props) {
		size_t i = 0;
		while (i < n && strcmp(rows[i].key, p->string) != 0)
			i++;
		if (i == n) {
			all = 0;
			diag("%s is not a row", p->string);
		}
	}
	check(all, "every property of sandbox_create's schema is a row of the option table");
	/* The checker itself: a schema whose range is off does not agree. */
	p = cJSON_Parse("{\"type\":\"integer\",\"minimum\":0,\"maximum\":1048575}");
	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].key, "memory_mib") == 0)
			check(!agrees(&rows[i], p, why, sizeof why) && strstr(why, "1048576"),
			    "a range off by one is caught (%s)", why);
	cJSON_Delete(p);
	/* And the schema refuses what the table does, before the tool runs. */
	p = cJSON_Parse("{\"memory_mib\":1048577}");
	check(schema_check(in, p, why, sizeof why) < 0 && strstr(why, "memory_mib") &&
	    strstr(why, "1048576"), "the checked schema refuses memory_mib 1048577 (%s)", why);
	cJSON_Delete(p);
	cJSON_Delete(s);
}

/* core_create_opts_from_json of text: rc, with o, *net and e. */
static int
parse(const char *text, struct core_create_opts *o, cJSON **net, struct sbx_err *e,
    cJSON **keep)
{
	*keep = cJSON_Parse(text);
	sbx_err_clear(e);
	return core_create_opts_from_json(o, *keep, net, e);
}

static void
test_parse(void)
{
	struct core_create_opts o;
	struct sbx_err e;
	cJSON *net, *a;
	static const struct { const char *args, *says; } bad[] = {
		{ "{\"memory_mib\":1048577}", "memory_mib: 1048577 is not valid: expected a "
		  "whole number from 0 to 1048576 MiB" },
		{ "{\"disk_mib\":-1}", "disk_mib: -1 is not valid" },
		{ "{\"cpus\":1025}", "cpus: 1025 is not valid: expected a number from 0 to 1024" },
		{ "{\"pids\":4194305}", "pids: 4194305 is not valid" },
		{ "{\"max_duration_s\":0}", "max_duration_s: 0 is not valid: expected a whole "
		  "number from 1 to 86400 seconds" },
		{ "{\"idle_s\":1.5}", "idle_s: 1.5 is not valid" },
		{ "{\"idle_suspend_s\":\"10\"}", "idle_suspend_s: expected a whole number" },
		{ "{\"network\":\"wide\"}", "network: 'wide' is not valid: expected "
		  "none|egress|rules" },
		{ "{\"name\":7}", "name: expected a string" },
		{ "{\"env\":{\"A\":1}}", "env: the value of A must be a string" },
		{ "{\"env\":[]}", "env must be an object of strings" },
		{ "{\"allow\":\"x.org\"}", "allow: expected an array of strings" },
		{ "{\"secrets\":[1]}", "secrets: expected an array of strings" },
		{ "{\"ask\":1}", "ask: expected true or false" },
		{ "[]", "the options of a create are an object" },
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = parse(bad[i].args, &o, &net, &e, &a);
		check(rc < 0 && e.code == SBX_EINVAL && strstr(e.msg, bad[i].says) != NULL &&
		    net == NULL, "%s is refused: %s", bad[i].args, e.msg);
		cJSON_Delete(a);
	}

	check(parse("{\"name\":\"web\",\"backend\":\"qemu\",\"image\":\"\",\"memory_mib\":512,"
	    "\"disk_mib\":0,\"cpus\":1.5,\"pids\":100,\"max_duration_s\":60,\"idle_s\":0,"
	    "\"idle_suspend_s\":30,\"network\":\"rules\",\"host\":\"auto\",\"from_snapshot\":"
	    "\"s1\",\"env\":{\"A\":\"b\"},\"allow\":[\"x.org\"],\"ask\":false,\"log_level\":3}",
	    &o, &net, &e, &a) == 0, "a request with every field parses");
	check(strcmp(o.name, "web") == 0 && strcmp(o.backend, "qemu") == 0 &&
	    strcmp(o.image, "") == 0 && o.memory_mib == 512 && o.disk_mib == 0 &&
	    o.cpus == 1.5 && o.pids == 100 && o.max_duration_s == 60 && o.idle_s == 0 &&
	    o.idle_suspend_s == 30 && strcmp(o.network, "rules") == 0 &&
	    strcmp(o.host, "auto") == 0 && strcmp(o.from_snapshot, "s1") == 0 &&
	    o.env == cJSON_GetObjectItem(a, "env"), "each lands in its field");
	check(net != NULL && o.net == net && cJSON_GetArraySize(cJSON_GetObjectItem(net,
	    "allow")) == 1 && cJSON_IsFalse(cJSON_GetObjectItem(net, "ask")) &&
	    cJSON_GetObjectItem(net, "deny") == NULL, "the network entries make net, as given");
	cJSON_Delete(net);
	cJSON_Delete(a);

	check(parse("{\"memory_mib\":null,\"name\":null}", &o, &net, &e, &a) == 0 &&
	    o.memory_mib == -1 && o.cpus == -1 && o.disk_mib == -1 && o.pids == -1 &&
	    o.max_duration_s == -1 && o.idle_s == -1 && o.idle_suspend_s == -1 &&
	    o.name == NULL && o.network == NULL && o.net == NULL && net == NULL,
	    "null and absent fields are the configuration's");
	cJSON_Delete(a);
	check(parse("{\"memory_mib\":1048576,\"cpus\":0.25,\"max_duration_s\":86400}", &o,
	    &net, &e, &a) == 0 && o.memory_mib == 1048576 && o.cpus == 0.25 &&
	    o.max_duration_s == 86400, "the ends of the ranges are in them");
	cJSON_Delete(a);
}

static void
test_flags(void)
{
	const struct create_option *r = create_option_by_flag("max-duration");
	size_t n;
	const struct create_option *rows = create_options(&n);
	int all = 1;

	check(r != NULL && strcmp(r->key, "max_duration_s") == 0, "--max-duration is "
	    "max_duration_s, by the configuration option's flag");
	check(create_option_by_flag("secret") != NULL &&
	    strcmp(create_option_by_flag("secret")->key, "secrets") == 0 &&
	    create_option_by_flag("json") == NULL, "--secret is secrets; --json is not a row");
	for (size_t i = 0; i < n; i++)
		if ((rows[i].config == NULL) == (rows[i].flag == NULL) ||
		    (strstr(rows[i].help, "%r") != NULL && rows[i].config == NULL)) {
			all = 0;
			diag("%s: a flag or a configuration option, one of them", rows[i].key);
		}
	check(all, "each row has a flag of its own or its option's, and a range only with "
	    "an option");
}

int
main(void)
{
	test_schema();
	test_parse();
	test_flags();
	return tap_end();
}
