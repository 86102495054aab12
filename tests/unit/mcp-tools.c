/* The MCP tools called directly (mcp_tool_find + run) on a real core and a real
 * ns sandbox made by sandbox_create: every tool's schemas, every result checked
 * against its tool's outputSchema, the whole flow (files, uploads, commands with
 * timeouts, truncation, cancellation and background jobs, downloads, logs,
 * suspend/resume, list with vanished sandboxes, destroy), and the error paths with
 * their hints.  Private XDG dirs; every sandbox made is destroyed, pass or fail.
 * TAP lines. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "tap.h"
#include "core/core.h"
#include "backends/ns/ns-idmap.h"
#include "lib/util.h"
#include "mcp/mcp.h"

static const char *
last_message(struct mcp_call *call)
{
	const char *m = NULL;

	mcp_call_local_progress(call, &m);
	return m;
}
#include "mcp/tool.h"
#include "mcp/tool-util.h"

static char tmpdir[64];
static struct core *core;
static char made[8][32];
static int nmade;

static void
cleanup(void)
{
	struct sbx_err e;
	struct ns_idmap m;

	for (int i = 0; i < nmade; i++)
		if (made[i][0] && core_destroy(core, made[i], NULL, &e) < 0 &&
		    e.code != SBX_ENOTFOUND)
			diag("cleanup: destroy %s: %s", made[i], e.msg);
	if (tmpdir[0] && ns_idmap_choose(&m, &e) == 0)
		(void)ns_rmtree(&m, tmpdir, &e);
}

static void
on_signal(int sig)
{
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* --- output schemas, structurally ----------------------------------------- */

static int
type_is(const char *t, const cJSON *v)
{
	if (strcmp(t, "object") == 0)
		return cJSON_IsObject(v);
	if (strcmp(t, "array") == 0)
		return cJSON_IsArray(v);
	if (strcmp(t, "string") == 0)
		return cJSON_IsString(v);
	if (strcmp(t, "boolean") == 0)
		return cJSON_IsBool(v);
	if (strcmp(t, "null") == 0)
		return cJSON_IsNull(v);
	if (strcmp(t, "number") == 0)
		return cJSON_IsNumber(v);
	if (strcmp(t, "integer") == 0)
		return cJSON_IsNumber(v) && v->valuedouble == (double)(int64_t)v->valuedouble;
	return 0;
}

/* 1 when v matches schema: type, required, properties, items, enum, anyOf. */
static int
valid(const cJSON *schema, const cJSON *v, const char *where, char *why, size_t len)
{
	const cJSON *t = cJSON_GetObjectItem(schema, "type"), *it;
	const cJSON *en = cJSON_GetObjectItem(schema, "enum");
	const cJSON *any = cJSON_GetObjectItem(schema, "anyOf");
	int ok = t == NULL;

	if (cJSON_IsString(t))
		ok = type_is(t->valuestring, v);
	if (cJSON_IsArray(t))
		cJSON_ArrayForEach(it, t)
			ok |= type_is(it->valuestring, v);
	if (!ok) {
		snprintf(why, len, "%s: wrong type", where);
		return 0;
	}
	if (en != NULL && cJSON_IsString(v)) {
		ok = 0;
		cJSON_ArrayForEach(it, en)
			ok |= strcmp(cJSON_GetStringValue(it) ? it->valuestring : "", v->valuestring) == 0;
		if (!ok) {
			snprintf(why, len, "%s: '%s' is not in the enum", where, v->valuestring);
			return 0;
		}
	}
	if (cJSON_IsObject(v)) {
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(schema, "required"))
			if (cJSON_GetObjectItemCaseSensitive(v, it->valuestring) == NULL) {
				snprintf(why, len, "%s: '%s' is missing", where, it->valuestring);
				return 0;
			}
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(schema, "properties")) {
			const cJSON *pv = cJSON_GetObjectItemCaseSensitive(v, it->string);
			char sub[256];
			snprintf(sub, sizeof sub, "%s.%s", where, it->string);
			if (pv != NULL && !valid(it, pv, sub, why, len))
				return 0;
		}
	}
	if (cJSON_IsArray(v) && cJSON_GetObjectItem(schema, "items")) {
		int i = 0;
		cJSON_ArrayForEach(it, v) {
			char sub[256];
			snprintf(sub, sizeof sub, "%s[%d]", where, i++);
			if (!valid(cJSON_GetObjectItem(schema, "items"), it, sub, why, len))
				return 0;
		}
	}
	if (any != NULL) {
		ok = 0;
		cJSON_ArrayForEach(it, any)
			ok |= valid(it, v, where, why, len);
		if (!ok) {
			snprintf(why, len, "%s: matches no anyOf branch", where);
			return 0;
		}
	}
	return 1;
}

/* --- calling tools ----------------------------------------------------------- */

static struct mcp_call *last_call;
static size_t call_budget;	/* 0: a local call's own */

/* Run tool name with args (JSON text, printf-style); the result is checked
 * against the tool's outputSchema.  Returns the result or NULL with e. */
static cJSON * __attribute__((format(printf, 3, 4)))
call(struct sbx_err *e, const char *name, const char *fmt, ...)
{
	const struct mcp_tool *t = mcp_tool_find(name);
	cJSON *args, *res = NULL, *schema;
	char *text, why[512] = "";
	va_list ap;
	int rc;

	sbx_err_clear(e);
	if (t == NULL) {
		check(0, "tool %s exists", name);
		return NULL;
	}
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		abort();
	va_end(ap);
	args = cJSON_Parse(text);
	if (args == NULL)
		diag("bad test arguments: %s", text);
	free(text);
	mcp_call_local_free(last_call);
	last_call = mcp_call_local_new(core, "test-client");
	if (call_budget > 0)
		mcp_call_local_set_budget(last_call, call_budget);
	rc = t->run(last_call, args, &res, e);
	cJSON_Delete(args);
	if (rc < 0) {
		cJSON_Delete(res);
		if (e->msg[0] == '\0')
			snprintf(e->msg, sizeof e->msg, "(a failure without a message)");
		return NULL;
	}
	schema = cJSON_Parse(t->output_schema);
	if (!valid(schema, res, name, why, sizeof why)) {
		char *p = cJSON_PrintUnformatted(res);
		check(0, "%s's result matches its outputSchema (%s)", name, why);
		diag("%s", p);
		free(p);
	}
	cJSON_Delete(schema);
	return res;
}

static const char *
str(const cJSON *o, const char *k)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
	return s ? s : "";
}

static double
num(const cJSON *o, const char *k)
{
	return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static int
is_true(const cJSON *o, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static void
sha256_hex(const void *p, size_t n, char hex[65])
{
	unsigned char h[32];

	EVP_Digest(p, n, h, NULL, EVP_sha256(), NULL);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", h[i]);
}

static void
put_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || fputs(content, f) < 0 || fclose(f) != 0)
		diag("cannot write %s: %s", path, strerror(errno));
}

static char *
get_file(const char *path)
{
	size_t n;
	char *s = read_file(path, 1 << 20, &n);

	return s ? s : xstrdup("(unreadable)");
}

/* --- the tests ------------------------------------------------------------- */

static const char *const contract[] = {
	"sandbox_create", "sandbox_exec", "sandbox_process_list", "sandbox_process_kill",
	"sandbox_read_file", "sandbox_write_file", "sandbox_list_files",
	"sandbox_delete_path", "sandbox_upload_dir", "sandbox_download",
	"sandbox_port_forward", "sandbox_port_forward_stop", "sandbox_suspend",
	"sandbox_resume", "sandbox_status", "sandbox_list", "sandbox_vm_logs",
	"sandbox_destroy", "sandbox_net_request", "sandbox_diff", "sandbox_fork",
};

static void
test_schemas(void)
{
	size_t n = 0;
	int all_in = 1, all_out = 1, all_text = 1, all_req = 1;

	for (size_t i = 0; i < ARRAY_SIZE(contract); i++)
		if (!check(mcp_tool_find(contract[i]) != NULL, "the table has %s", contract[i]))
			continue;
	check(mcp_tool_find("sandbox_nope") == NULL && mcp_tool_find(NULL) == NULL,
	    "an unknown tool is not found");
	for (; mcp_tools[n] != NULL; n++) {
		const struct mcp_tool *t = mcp_tools[n];
		cJSON *in = cJSON_Parse(t->input_schema), *out = cJSON_Parse(t->output_schema);
		const cJSON *r;

		/* Checked with additionalProperties false, whether written or not
		 * (the instructions say it once for all). */
		if (!cJSON_IsObject(in) || strcmp(str(in, "type"), "object") != 0 ||
		    !cJSON_IsFalse(cJSON_GetObjectItem(mcp_tool_input_schema(t),
		    "additionalProperties")) ||
		    !cJSON_IsObject(cJSON_GetObjectItem(in, "properties"))) {
			all_in = 0;
			diag("%s: bad inputSchema", t->name);
		}
		cJSON_ArrayForEach(r, cJSON_GetObjectItem(in, "required"))
			if (!cJSON_GetObjectItem(cJSON_GetObjectItem(in, "properties"),
			    r->valuestring)) {
				all_req = 0;
				diag("%s: required '%s' is not a property", t->name, r->valuestring);
			}
		if (!cJSON_IsObject(out) || strcmp(str(out, "type"), "object") != 0) {
			all_out = 0;
			diag("%s: bad outputSchema", t->name);
		}
		/* A description says what a model needs to choose and call the tool
		 * (how short: tools/list is 12 KB at most, tests/unit/mcp.c). */
		if (t->title == NULL || t->description == NULL || strlen(t->description) < 25 ||
		    t->description[strlen(t->description) - 1] != '.' ||
		    t->run == NULL || strncmp(t->name, "sandbox_", 8) != 0) {
			all_text = 0;
			diag("%s: title, description or run missing", t->name);
		}
		cJSON_Delete(in);
		cJSON_Delete(out);
	}
	check(n == ARRAY_SIZE(contract), "the table holds exactly the %zu tools of the "
	    "contract (%zu)", ARRAY_SIZE(contract), n);
	check(all_in, "every inputSchema is an object schema, checked with additionalProperties "
	    "false");
	check(all_req, "every required input is a declared property");
	check(all_out, "every outputSchema is an object schema");
	check(all_text, "every tool has a title, a description of whole sentences, and a run");
	{
		cJSON *in = cJSON_Parse(mcp_tool_find("sandbox_exec")->input_schema);
		const cJSON *ts = cJSON_GetObjectItem(cJSON_GetObjectItem(in, "properties"),
		    "timeout_s");
		check(cJSON_IsObject(ts) && strstr(mcp_tool_find("sandbox_exec")->description,
		    "timeout_s 120 by default"), "exec's timeout_s: its default said");
		cJSON_Delete(in);
	}
	check((mcp_tool_find("sandbox_list")->hints & MCP_READONLY) &&
	    (mcp_tool_find("sandbox_read_file")->hints & MCP_READONLY) &&
	    (mcp_tool_find("sandbox_destroy")->hints & MCP_DESTRUCTIVE) &&
	    !(mcp_tool_find("sandbox_destroy")->hints & MCP_READONLY) &&
	    (mcp_tool_find("sandbox_process_kill")->hints & MCP_DESTRUCTIVE),
	    "annotations: list and read are read-only, destroy and kill destructive");
	for (n = 0; mcp_tools[n] != NULL; n++)
		if ((mcp_tools[n]->hints & MCP_READONLY) && (mcp_tools[n]->hints & MCP_DESTRUCTIVE))
			break;
	check(mcp_tools[n] == NULL, "no tool is both read-only and destructive");
}

static void
test_unknown(void)
{
	struct sbx_err e;
	int all = 1;

	for (size_t i = 0; mcp_tools[i] != NULL; i++) {
		const struct mcp_tool *t = mcp_tools[i];
		cJSON *res;
		if (strstr(t->input_schema, "\"sandbox_id\"") == NULL ||
		    strncmp(t->name, "sandbox_port_forward", 20) == 0)
			continue;
		res = call(&e, t->name, "{\"sandbox_id\":\"nosuch\",\"command\":\"true\","
		    "\"path\":\"x\",\"content\":\"\",\"local_path\":\"%s\",\"exec_id\":\"x1\"}",
		    tmpdir);
		if (res != NULL || e.code != SBX_ENOTFOUND || strstr(mcp_err_hint(&e), "sandbox_list") == NULL) {
			all = 0;
			diag("%s: %s (hint: %s)", t->name, e.msg, mcp_err_hint(&e));
		}
		cJSON_Delete(res);
	}
	check(all, "every per-sandbox tool: an unknown sandbox is an error whose hint names "
	    "sandbox_list");
	cJSON_Delete(call(&e, "sandbox_port_forward", "{\"sandbox_id\":\"nosuch\",\"remote_port\":80}"));
	check(e.code == SBX_ENOTFOUND, "port_forward: an unknown sandbox is an error");
	cJSON_Delete(call(&e, "sandbox_create", "{\"memory_mib\":99999999}"));
	check(e.code == SBX_EINVAL && strstr(e.msg, "memory"), "create: a memory out of range "
	    "is refused, naming it (%s)", e.msg);
	cJSON_Delete(call(&e, "sandbox_create", "{\"backend\":\"vmware\"}"));
	check(e.code == SBX_EINVAL && strstr(e.msg, "vmware"), "create: an unknown backend is "
	    "refused");
}

static pthread_t canceller;

static void *
cancel_later(void *arg)
{
	struct mcp_call *c = arg;

	usleep(800 * 1000);
	mcp_call_local_cancel(c);
	return NULL;
}

static void
test_flow(void)
{
	struct sbx_err e;
	cJSON *r;
	char id[32], up[128], down[128], p[256], hex[65];
	int64_t t0;

	/* create */
	r = call(&e, "sandbox_create", "{\"name\":\"mcp-flow\",\"max_duration_s\":900,"
	    "\"env\":{\"FLOW\":\"yes\"}}");
	if (!check(r != NULL, "sandbox_create works (%s)", r ? "" : e.msg)) {
		diag("hint: %s", mcp_err_hint(&e));
		return;
	}
	snprintf(id, sizeof id, "%s", str(r, "sandbox_id"));
	snprintf(made[nmade++], sizeof made[0], "%s", id);
	check(strncmp(id, "sbx-", 4) == 0 && strcmp(str(r, "state"), "running") == 0 &&
	    strcmp(str(r, "name"), "mcp-flow") == 0 && strcmp(str(r, "backend"), "ns") == 0,
	    "create: a running ns sandbox with its name (%s)", id);
	check(strcmp(str(r, "owner"), "test-client") == 0, "create: the owner is the client (%s)", str(r, "owner"));
	check(num(r, "time_left_s") > 800 && num(r, "time_left_s") <= 900 &&
	    strlen(str(r, "created_at")) == 20 && str(r, "created_at")[10] == 'T' &&
	    str(r, "expires_at")[19] == 'Z', "create: ISO-8601 times and time left");
	check(mcp_call_local_progress(last_call, NULL) >= 2 &&
	    strcmp(last_message(last_call), "ready") == 0,
	    "create: progress says creating, then ready");
	cJSON_Delete(r);

	/* write, read */
	r = call(&e, "sandbox_write_file", "{\"sandbox_id\":\"%s\",\"path\":\"notes/h\\u00e9llo.txt\","
	    "\"content\":\"h\\u00e9llo\\n\"}", id);
	check(r && num(r, "size") == 7 && strcmp(str(r, "path"), "/workspace/notes/h\xc3\xa9llo.txt")
	    == 0, "write_file: UTF-8 text, parents made, absolute path back");
	cJSON_Delete(r);
	r = call(&e, "sandbox_read_file", "{\"sandbox_id\":\"%s\",\"path\":\"notes/h\\u00e9llo.txt\"}",
	    id);
	check(r && strcmp(str(r, "content"), "h\xc3\xa9llo\n") == 0 &&
	    strcmp(str(r, "encoding"), "utf-8") == 0 && num(r, "size") == 7 &&
	    !is_true(r, "truncated"), "read_file: the same text back");
	cJSON_Delete(r);
	r = call(&e, "sandbox_write_file", "{\"sandbox_id\":\"%s\",\"path\":\"bin.dat\","
	    "\"content\":\"AP8Q\",\"encoding\":\"base64\"}", id);
	check(r && num(r, "size") == 3, "write_file: base64 binary");
	cJSON_Delete(r);
	r = call(&e, "sandbox_read_file", "{\"sandbox_id\":\"%s\",\"path\":\"/workspace/bin.dat\"}",
	    id);
	check(r && is_true(r, "binary") && strcmp(str(r, "content"), "") == 0 &&
	    strcmp(str(r, "first_bytes"), "00 ff 10") == 0 && num(r, "size") == 3,
	    "read_file: binary is said to be, with its first bytes, not given");
	cJSON_Delete(r);
	r = call(&e, "sandbox_read_file", "{\"sandbox_id\":\"%s\",\"path\":\"/workspace/bin.dat\","
	    "\"encoding\":\"base64\"}", id);
	check(r && strcmp(str(r, "content"), "AP8Q") == 0 &&
	    strcmp(str(r, "encoding"), "base64") == 0 && num(r, "length") == 3,
	    "read_file: binary asked for comes back base64, byte for byte");
	cJSON_Delete(r);
	cJSON_Delete(call(&e, "sandbox_read_file", "{\"sandbox_id\":\"%s\",\"path\":\"bin.dat\","
	    "\"encoding\":\"utf-8\"}", id));
	check(e.code == SBX_EINVAL && strstr(mcp_err_hint(&e), "base64"), "read_file: binary as utf-8 is "
	    "an error that says to ask for base64 (%s)", e.msg);
	r = call(&e, "sandbox_read_file", "{\"sandbox_id\":\"%s\",\"path\":\"notes/h\\u00e9llo.txt\","
	    "\"length\":2}", id);
	check(r && is_true(r, "truncated") && num(r, "size") == 7 && num(r, "length") == 1 &&
	    num(r, "next_offset") == 1 && strcmp(str(r, "content"), "h") == 0,
	    "read_file: length cuts (never inside a character), says the next offset, "
	    "truncated and the whole size");
	cJSON_Delete(r);
	cJSON_Delete(call(&e, "sandbox_read_file", "{\"sandbox_id\":\"%s\",\"path\":\"nope.txt\"}",
	    id));
	check(e.code == SBX_ENOTFOUND && strstr(mcp_err_hint(&e), "sandbox_list_files"), "read_file: a "
	    "missing file points at sandbox_list_files");
	r = call(&e, "sandbox_write_file", "{\"sandbox_id\":\"%s\",\"path\":\"run.sh\","
	    "\"content\":\"#!/bin/sh\\necho ran\\n\",\"mode\":\"0755\"}", id);
	cJSON_Delete(r);
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"./run.sh && stat -c %%a "
	    "run.sh\"}", id);
	check(r && strcmp(str(r, "stdout"), "ran\n755\n") == 0, "write_file: mode \"0755\" makes "
	    "an executable");
	cJSON_Delete(r);
	cJSON_Delete(call(&e, "sandbox_write_file", "{\"sandbox_id\":\"%s\",\"path\":\"x\","
	    "\"content\":\"\",\"mode\":\"999\"}", id));
	check(e.code == SBX_EINVAL && strstr(e.msg, "mode"), "write_file: a bad mode is refused");

	/* list_files */
	cJSON_Delete(call(&e, "sandbox_write_file", "{\"sandbox_id\":\"%s\",\"path\":\".hidden\","
	    "\"content\":\"s\"}", id));
	r = call(&e, "sandbox_list_files", "{\"sandbox_id\":\"%s\"}", id);
	{
		const cJSON *it;
		int saw_dir = 0, saw_hidden = 0, saw_nested = 0;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "entries")) {
			saw_dir |= strcmp(str(it, "path"), "/workspace/notes") == 0 &&
			    strcmp(str(it, "type"), "dir") == 0;
			saw_hidden |= strstr(str(it, "path"), ".hidden") != NULL;
			saw_nested |= strstr(str(it, "path"), "notes/") != NULL;
		}
		check(r && strcmp(str(r, "path"), "/workspace") == 0 && saw_dir && !saw_hidden &&
		    !saw_nested, "list_files: /workspace by default, not recursive, no hidden");
	}
	cJSON_Delete(r);
	r = call(&e, "sandbox_list_files", "{\"sandbox_id\":\"%s\",\"recursive\":true,"
	    "\"include_hidden\":true}", id);
	{
		const cJSON *it;
		int saw_hidden = 0, saw_nested = 0;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "entries")) {
			saw_hidden |= strstr(str(it, "path"), ".hidden") != NULL;
			saw_nested |= strcmp(str(it, "path"), "/workspace/notes/h\xc3\xa9llo.txt") == 0
			    && num(it, "size") == 7 && str(it, "mtime")[10] == 'T';
		}
		check(saw_hidden && saw_nested, "list_files: recursive and include_hidden");
	}
	cJSON_Delete(r);
	r = call(&e, "sandbox_list_files", "{\"sandbox_id\":\"%s\",\"recursive\":true,"
	    "\"max_entries\":1}", id);
	check(r && cJSON_GetArraySize(cJSON_GetObjectItem(r, "entries")) == 1 &&
	    is_true(r, "truncated"), "list_files: max_entries cuts with truncated");
	cJSON_Delete(r);

	/* upload_dir */
	snprintf(up, sizeof up, "%s/up", tmpdir);
	snprintf(p, sizeof p, "%s/sub", up);
	mkdir(up, 0755);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/node_modules", up);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/a.txt", up);
	put_file(p, "alpha\n");
	snprintf(p, sizeof p, "%s/sub/b.txt", up);
	put_file(p, "bravo bravo\n");
	snprintf(p, sizeof p, "%s/node_modules/dep.js", up);
	put_file(p, "x\n");
	r = call(&e, "sandbox_upload_dir", "{\"sandbox_id\":\"%s\",\"local_path\":\"%s\"}", id, up);
	check(r && strcmp(str(r, "remote_path"), "/workspace") == 0 && num(r, "files") == 2 &&
	    num(r, "bytes") == 18 && strlen(str(r, "sha256")) == 64,
	    "upload_dir: contents into /workspace, node_modules excluded by default (%s)",
	    r ? "" : e.msg);
	cJSON_Delete(r);
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"cat a.txt sub/b.txt; "
	    "test -e node_modules && echo LEAK\"}", id);
	check(r && strcmp(str(r, "stdout"), "alpha\nbravo bravo\n") == 0, "upload_dir: the files "
	    "are there, the excluded ones are not");
	cJSON_Delete(r);
	r = call(&e, "sandbox_upload_dir", "{\"sandbox_id\":\"%s\",\"local_path\":\"%s\","
	    "\"remote_path\":\"all\",\"exclude\":[]}", id, up);
	check(r && strcmp(str(r, "remote_path"), "/workspace/all") == 0 && num(r, "files") == 3,
	    "upload_dir: exclude [] takes everything, into remote_path");
	cJSON_Delete(r);
	r = call(&e, "sandbox_upload_dir", "{\"sandbox_id\":\"%s\",\"local_path\":\"%s\","
	    "\"remote_path\":\"some\",\"exclude\":[\"sub\"]}", id, up);
	check(r && num(r, "files") == 2, "upload_dir: an exclude list replaces the defaults");
	cJSON_Delete(r);
	snprintf(p, sizeof p, "%s/does-not-exist", tmpdir);
	cJSON_Delete(call(&e, "sandbox_upload_dir", "{\"sandbox_id\":\"%s\",\"local_path\":\"%s\"}",
	    id, p));
	check(e.code == SBX_ENOTFOUND && strstr(e.msg, "does-not-exist"), "upload_dir: a missing "
	    "local_path is an error naming it");
	cJSON_Delete(call(&e, "sandbox_upload_dir", "{\"sandbox_id\":\"%s\",\"local_path\":\"up\"}",
	    id));
	check(e.code == SBX_EINVAL && strstr(e.msg, "absolute"), "upload_dir: a relative "
	    "local_path is refused");
	cJSON_Delete(call(&e, "sandbox_upload_dir", "{\"sandbox_id\":\"%s\",\"local_path\":\"%s\","
	    "\"exclude\":[\"a/b\"]}", id, up));
	check(e.code == SBX_EINVAL, "upload_dir: an exclude that is a path is refused");

	/* exec */
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"echo out; echo err >&2; "
	    "echo $FLOW $X; pwd; exit 3\",\"env\":{\"X\":\"ex\"}}", id);
	if (r == NULL || strcmp(str(r, "stdout"), "out\nyes ex\n/workspace\n") != 0)
		diag("stdout: %s stderr: %s exit %g progress: %s", r ? str(r, "stdout") : e.msg, str(r, "stderr"), num(r, "exit_code"), last_message(last_call));
	check(r && num(r, "exit_code") == 3 && cJSON_GetObjectItem(r, "signal") == NULL &&
	    strcmp(str(r, "stdout"), "out\nyes ex\n/workspace\n") == 0 &&
	    strcmp(str(r, "stderr"), "err\n") == 0 && !is_true(r, "timed_out") &&
	    !is_true(r, "truncated") && num(r, "duration_ms") >= 0,
	    "exec: exit code, stdout, stderr, env (create's and the call's), cwd /workspace");
	check(mcp_call_local_progress(last_call, NULL) >= 1 && last_message(last_call) != NULL,
	    "exec: progress while it runs");
	cJSON_Delete(r);
	/* Each message says what is new: the last one has the last line only. */
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"echo first; "
	    "sleep 0.5; echo second\"}", id);
	check(r && mcp_call_local_progress(last_call, NULL) >= 2 && last_message(last_call) &&
	    strcmp(last_message(last_call), "second") == 0,
	    "exec: a progress message carries the output new since the one before (%s)",
	    last_message(last_call) ? last_message(last_call) : "none");
	cJSON_Delete(r);
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"cat; pwd\","
	    "\"stdin\":\"fed\\n\",\"cwd\":\"notes\"}", id);
	check(r && strcmp(str(r, "stdout"), "fed\n/workspace/notes\n") == 0, "exec: stdin and cwd");
	cJSON_Delete(r);
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"id -u\",\"as_root\":true}",
	    id);
	check(r && strcmp(str(r, "stdout"), "0\n") == 0, "exec: as_root");
	cJSON_Delete(r);
	t0 = now_ms();
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"echo start; sleep 30\","
	    "\"timeout_s\":1}", id);
	check(r && is_true(r, "timed_out") && strcmp(str(r, "stdout"), "start\n") == 0 &&
	    strstr(str(r, "note"), "timeout_s") && strstr(str(r, "note"), "background:true") &&
	    now_ms() - t0 < 15000, "exec: timeout_s kills it, timed_out, a note on what to do "
	    "(%lld ms)", (long long)(now_ms() - t0));
	cJSON_Delete(r);
	call_budget = 20000;
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"head -c 300000 /dev/zero "
	    "| tr '\\\\0' a; echo tail >&2\"}", id);
	call_budget = 0;
	{
		const cJSON *gap = cJSON_GetObjectItem(r, "stdout_omitted");
		check(r && is_true(r, "truncated") && num(r, "stdout_bytes") == 300000 &&
		    strlen(str(r, "stdout")) + strlen(str(r, "stdout_tail")) < 20000 &&
		    strlen(str(r, "stdout_tail")) > 4 * strlen(str(r, "stdout")) &&
		    num(gap, "offset") == strlen(str(r, "stdout")) && num(gap, "offset") +
		    num(gap, "length") + strlen(str(r, "stdout_tail")) == 300000 &&
		    num(r, "stdout_kept") == 300000 && strstr(str(r, "stdout_path"), "/tmp/sbxtop/") &&
		    strcmp(str(r, "stderr"), "tail\n") == 0 && num(r, "exit_code") == 0,
		    "exec: output over the budget comes as a head and a larger tail, what is "
		    "between named, the whole kept (%zu + %zu)", r ? strlen(str(r, "stdout")) : 0,
		    r ? strlen(str(r, "stdout_tail")) : 0);
	}
	cJSON_Delete(r);
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"head -c 300000 /dev/zero "
	    "| tr '\\\\0' a\"}", id);
	check(r && !is_true(r, "truncated") && strlen(str(r, "stdout")) == 300000 &&
	    !cJSON_HasObjectItem(r, "stdout_tail"), "exec: a call in this process (REST, the "
	    "console's own core) has 1 MiB: 300000 bytes come whole");
	cJSON_Delete(r);
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"kill -KILL $$\"}", id);
	check(r && cJSON_GetObjectItem(r, "exit_code") == NULL &&
	    strcmp(str(r, "signal"), "KILL") == 0, "exec: death by signal: no exit_code, "
	    "signal KILL");
	cJSON_Delete(r);
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"printf '\\\\377ok'\"}", id);
	check(r && strcmp(str(r, "stdout"), "\xef\xbf\xbdok") == 0, "exec: output that is not "
	    "UTF-8 still makes valid JSON text");
	cJSON_Delete(r);
	cJSON_Delete(call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"true\","
	    "\"timeout_s\":4000}", id));
	check(e.code == SBX_EINVAL && strstr(e.msg, "3600"), "exec: timeout_s over 3600 is "
	    "refused");

	/* cancellation of a silent command */
	{
		const struct mcp_tool *t = mcp_tool_find("sandbox_exec");
		struct mcp_call *c = mcp_call_local_new(core, "test-client");
		cJSON *args = cJSON_CreateObject(), *res = NULL;
		int rc;

		cJSON_AddStringToObject(args, "sandbox_id", id);
		cJSON_AddStringToObject(args, "command", "sleep 60; echo never");
		t0 = now_ms();
		pthread_create(&canceller, NULL, cancel_later, c);
		rc = t->run(c, args, &res, &e);
		pthread_join(canceller, NULL);
		check(rc < 0 && res == NULL && strstr(e.msg, "cancelled") &&
		    now_ms() - t0 < 10000, "exec: cancelling a silent command stops it at once "
		    "(%lld ms)", (long long)(now_ms() - t0));
		cJSON_Delete(res);
		cJSON_Delete(args);
		mcp_call_local_free(c);
		r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"sleep 3; "
		    "pgrep -f 'slee[p] 60' || echo gone\"}", id);
		check(r && strcmp(str(r, "stdout"), "gone\n") == 0, "exec: the cancelled command "
		    "was killed in the sandbox (%s)", r ? str(r, "stdout") : e.msg);
		cJSON_Delete(r);
	}

	/* background, process_list, process_kill */
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"echo bg-up; sleep 300\","
	    "\"background\":true}", id);
	{
		char xid[32];
		int pid = r ? (int)num(r, "pid") : -1, running = 0, exited = 0;
		const cJSON *it;

		snprintf(xid, sizeof xid, "%s", str(r, "exec_id"));
		check(r && is_true(r, "background") && pid > 0 && xid[0] == 'x' &&
		    strlen(str(r, "log_path")) > 0, "exec background: pid, log_path, exec_id at once");
		cJSON_Delete(r);
		r = call(&e, "sandbox_process_list", "{\"sandbox_id\":\"%s\"}", id);
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "processes"))
			running |= strcmp(str(it, "exec_id"), xid) == 0 &&
			    strcmp(str(it, "state"), "running") == 0 && is_true(it, "background") &&
			    num(it, "pid") == pid && strstr(str(it, "origin"), "test-client");
		check(running, "process_list: the background job runs, with its origin");
		cJSON_Delete(r);
		r = call(&e, "sandbox_process_kill", "{\"sandbox_id\":\"%s\",\"pid\":%d}", id, pid);
		check(r && is_true(r, "sent") && strcmp(str(r, "exec_id"), xid) == 0 &&
		    strcmp(str(r, "signal"), "TERM") == 0, "process_kill: by pid, TERM by default");
		cJSON_Delete(r);
		for (int i = 0; i < 50 && !exited; i++) {
			usleep(100 * 1000);
			r = call(&e, "sandbox_process_list", "{\"sandbox_id\":\"%s\"}", id);
			cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "processes"))
				exited |= strcmp(str(it, "exec_id"), xid) == 0 &&
				    strcmp(str(it, "state"), "exited") == 0 &&
				    strcmp(str(it, "signal"), "TERM") == 0;
			cJSON_Delete(r);
		}
		check(exited, "process_list: the job exited of TERM");
		cJSON_Delete(call(&e, "sandbox_process_kill", "{\"sandbox_id\":\"%s\","
		    "\"exec_id\":\"%s\",\"signal\":\"KILL\"}", id, xid));
		check(e.code == SBX_ESTATE && strstr(mcp_err_hint(&e), "exited"), "process_kill: an exited "
		    "job is an error that says so (%s)", e.msg);
		cJSON_Delete(call(&e, "sandbox_process_kill", "{\"sandbox_id\":\"%s\"}", id));
		check(e.code == SBX_EINVAL && strstr(e.msg, "exec_id"), "process_kill: neither "
		    "exec_id nor pid is refused");
		cJSON_Delete(call(&e, "sandbox_process_kill", "{\"sandbox_id\":\"%s\",\"pid\":999999}",
		    id));
		check(e.code == SBX_ENOTFOUND && strstr(mcp_err_hint(&e), "sandbox_process_list"),
		    "process_kill: an unknown pid points at sandbox_process_list");
		r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"sleep 300\","
		    "\"background\":true}", id);
		snprintf(xid, sizeof xid, "%s", str(r, "exec_id"));
		cJSON_Delete(r);
		r = call(&e, "sandbox_process_kill", "{\"sandbox_id\":\"%s\",\"exec_id\":\"%s\","
		    "\"signal\":\"KILL\"}", id, xid);
		check(r && is_true(r, "sent"), "process_kill: by exec_id with KILL");
		cJSON_Delete(r);
	}

	/* port_forward: a web server inside, fetched from the host, then stopped */
	{
		char url[128] = "", cmd[256], got[256] = "";
		int lport = 0;
		FILE *f;

		cJSON_Delete(call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":"
		    "\"echo forwarded > /tmp/index.html; cd /tmp && python3 -m http.server 8765 "
		    ">/dev/null 2>&1\",\"background\":true}", id));
		cJSON_Delete(call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":"
		    "\"for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8765) 2>/dev/null && "
		    "exit 0; sleep 0.1; done; exit 1\"}", id));
		r = call(&e, "sandbox_port_forward", "{\"sandbox_id\":\"%s\",\"remote_port\":8765}",
		    id);
		if (r != NULL) {
			snprintf(url, sizeof url, "%s", str(r, "url"));
			lport = (int)num(r, "local_port");
		}
		check(r && lport > 0 && num(r, "remote_port") == 8765 && strstr(url, "http://127.0.0.1:"),
		    "port_forward: a url on 127.0.0.1 (%s)", r ? url : e.msg);
		cJSON_Delete(r);
		snprintf(cmd, sizeof cmd, "curl -s --max-time 10 %s/index.html", url);
		if ((f = popen(cmd, "r")) != NULL) {
			if (fgets(got, sizeof got, f) == NULL)
				got[0] = '\0';
			pclose(f);
		}
		check(strcmp(got, "forwarded\n") == 0, "port_forward: the server inside answers "
		    "through the forward (got '%.*s')", (int)strcspn(got, "\n"), got);
		r = call(&e, "sandbox_port_forward_stop", "{\"sandbox_id\":\"%s\"}", id);
		check(r && cJSON_GetArraySize(cJSON_GetObjectItem(r, "stopped")) == 1 &&
		    num(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "stopped"), 0), "local_port") == lport,
		    "port_forward_stop: lists the forward it stopped");
		cJSON_Delete(r);
		snprintf(cmd, sizeof cmd, "curl -s --max-time 5 -o /dev/null %s/ 2>/dev/null", url);
		check(system(cmd) != 0, "port_forward_stop: the port is closed");
	}

	/* download */
	snprintf(down, sizeof down, "%s/down", tmpdir);
	r = call(&e, "sandbox_download", "{\"sandbox_id\":\"%s\",\"remote_path\":\"all\","
	    "\"local_path\":\"%s\",\"exclude\":[]}", id, down);
	{
		_cleanup_free_ char *a = NULL, *b = NULL;
		snprintf(p, sizeof p, "%s/a.txt", down);
		a = get_file(p);
		snprintf(p, sizeof p, "%s/sub/b.txt", down);
		b = get_file(p);
		check(r && num(r, "files") == 3 && num(r, "bytes") == 20 &&
		    strcmp(str(r, "local_path"), down) == 0 && strlen(str(r, "sha256")) == 64 &&
		    strcmp(a, "alpha\n") == 0 && strcmp(b, "bravo bravo\n") == 0,
		    "download: a directory's contents into a new local_path (%s)", r ? "" : e.msg);
	}
	cJSON_Delete(r);
	r = call(&e, "sandbox_download", "{\"sandbox_id\":\"%s\",\"remote_path\":\"all\","
	    "\"local_path\":\"%s/down2\"}", id, tmpdir);
	snprintf(p, sizeof p, "%s/down2/node_modules", tmpdir);
	check(r && num(r, "files") == 2 && access(p, F_OK) < 0, "download: default excludes");
	cJSON_Delete(r);
	snprintf(p, sizeof p, "%s/hello.txt", tmpdir);
	r = call(&e, "sandbox_download", "{\"sandbox_id\":\"%s\",\"remote_path\":\"notes/h\\u00e9llo.txt\","
	    "\"local_path\":\"%s\"}", id, p);
	sha256_hex("h\xc3\xa9llo\n", 7, hex);
	{
		_cleanup_free_ char *h = get_file(p);
		cJSON *x = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"sha256sum "
		    "notes/h*llo.txt | cut -c1-64\"}", id);
		check(r && num(r, "files") == 1 && num(r, "bytes") == 7 &&
		    strcmp(str(r, "sha256"), hex) == 0 && strncmp(str(x, "stdout"), hex, 64) == 0 &&
		    strcmp(h, "h\xc3\xa9llo\n") == 0, "download: a file, its sha256 matches the "
		    "sandbox's sha256sum");
		cJSON_Delete(x);
	}
	cJSON_Delete(r);
	{
		/* A symlink at local_path is replaced, never written through. */
		char victim[160], link[160];
		_cleanup_free_ char *v = NULL;
		snprintf(victim, sizeof victim, "%s/victim", tmpdir);
		snprintf(link, sizeof link, "%s/link", tmpdir);
		put_file(victim, "precious\n");
		if (symlink(victim, link) < 0)
			diag("symlink: %s", strerror(errno));
		r = call(&e, "sandbox_download", "{\"sandbox_id\":\"%s\",\"remote_path\":\"a.txt\","
		    "\"local_path\":\"%s\"}", id, link);
		v = get_file(victim);
		check(r && strcmp(v, "precious\n") == 0, "download: a file never goes through a "
		    "symlink at local_path to another host file");
		cJSON_Delete(r);
		cJSON_Delete(call(&e, "sandbox_download", "{\"sandbox_id\":\"%s\",\"remote_path\":"
		    "\"all\",\"local_path\":\"%s\"}", id, victim));
		free(v);
		v = get_file(victim);
		check(e.code == SBX_EINVAL && strcmp(v, "precious\n") == 0, "download: a directory "
		    "over an existing host file is refused, the file untouched");
	}
	snprintf(p, sizeof p, "%s/no/such/dir", tmpdir);
	cJSON_Delete(call(&e, "sandbox_download", "{\"sandbox_id\":\"%s\",\"local_path\":\"%s\"}",
	    id, p));
	check(e.code == SBX_ENOTFOUND && strstr(e.msg, "does not exist") && mcp_err_hint(&e)[0],
	    "download: a local_path whose parent is missing is refused with a hint");
	cJSON_Delete(call(&e, "sandbox_download", "{\"sandbox_id\":\"%s\",\"local_path\":\"rel\"}",
	    id));
	check(e.code == SBX_EINVAL && strstr(e.msg, "absolute"), "download: a relative "
	    "local_path is refused");
	cJSON_Delete(call(&e, "sandbox_download", "{\"sandbox_id\":\"%s\",\"remote_path\":\"nope\","
	    "\"local_path\":\"%s/x\"}", id, tmpdir));
	check(e.code == SBX_ENOTFOUND, "download: a missing remote_path is an error");

	/* delete_path */
	cJSON_Delete(call(&e, "sandbox_delete_path", "{\"sandbox_id\":\"%s\",\"path\":\"all\"}", id));
	check(e.code != SBX_OK && strstr(mcp_err_hint(&e), "recursive:true"), "delete_path: a non-empty "
	    "directory needs recursive:true, the hint says so (%s)", e.msg);
	r = call(&e, "sandbox_delete_path", "{\"sandbox_id\":\"%s\",\"path\":\"all\","
	    "\"recursive\":true}", id);
	check(r && num(r, "deleted") >= 5 && strcmp(str(r, "path"), "/workspace/all") == 0,
	    "delete_path: recursive (%g entries)", r ? num(r, "deleted") : -1);
	cJSON_Delete(r);
	cJSON_Delete(call(&e, "sandbox_delete_path", "{\"sandbox_id\":\"%s\",\"path\":\"/workspace\","
	    "\"recursive\":true}", id));
	check(e.code != SBX_OK, "delete_path: never the workspace itself");
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"ls\"}", id);
	check(r && strstr(str(r, "stdout"), "a.txt") && !strstr(str(r, "stdout"), "all"),
	    "delete_path: the rest of the workspace is still there");
	cJSON_Delete(r);

	/* vm_logs */
	r = call(&e, "sandbox_vm_logs", "{\"sandbox_id\":\"%s\"}", id);
	{
		const cJSON *it;
		int n = 0, prefixed = 1;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "lines")) {
			n++;
			prefixed &= strncmp(it->valuestring, "agent: ", 7) == 0 ||
			    strncmp(it->valuestring, "console: ", 9) == 0;
		}
		check(r && n > 0 && n <= 200 && prefixed, "vm_logs: recent lines, each naming its "
		    "log (%d)", n);
	}
	cJSON_Delete(r);
	{
		/* Older lines, as if logged a while ago, to see the order, limit and since_s. */
		_cleanup_free_ char *lp = core_log_path(core, id, "agent", &e);
		FILE *f = lp ? fopen(lp, "a") : NULL;
		const cJSON *l;
		if (f != NULL) {
			char when[40], line[200];
			time_t t = time(NULL) - 7200;
			strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", gmtime(&t));
			for (int i = 1; i <= 3; i++) {
				snprintf(line, sizeof line, "%s.00%dZ sbxtop-agent info: old %d\n", when,
				    i, i);
				fputs(line, f);
			}
			fputs("  a continuation line\n", f);
			fclose(f);
		}
		/* Oldest first: the three old lines, the continuation with the third, then
		 * what the agent logged since it started; a limit keeps the newest. */
		r = call(&e, "sandbox_vm_logs", "{\"sandbox_id\":\"%s\",\"limit\":200}", id);
		l = cJSON_GetObjectItem(r, "lines");
		{
			int n = cJSON_GetArraySize(l);
			check(f && n >= 5 &&
			    strstr(cJSON_GetArrayItem(l, 0)->valuestring, "old 1") &&
			    strstr(cJSON_GetArrayItem(l, 2)->valuestring, "old 3") &&
			    strstr(cJSON_GetArrayItem(l, 3)->valuestring, "continuation") &&
			    strstr(cJSON_GetArrayItem(l, n - 1)->valuestring, "old ") == NULL,
			    "vm_logs: lines in time order (a continuation with its line)");
		}
		cJSON_Delete(r);
		r = call(&e, "sandbox_vm_logs", "{\"sandbox_id\":\"%s\",\"limit\":2}", id);
		l = cJSON_GetObjectItem(r, "lines");
		check(cJSON_GetArraySize(l) == 2 &&
		    !strstr(cJSON_GetArrayItem(l, 0)->valuestring, "old ") &&
		    !strstr(cJSON_GetArrayItem(l, 1)->valuestring, "old "),
		    "vm_logs: a limit keeps the newest lines");
		cJSON_Delete(r);
		r = call(&e, "sandbox_vm_logs", "{\"sandbox_id\":\"%s\",\"since_s\":3600}", id);
		l = cJSON_GetObjectItem(r, "lines");
		{
			_cleanup_free_ char *text = cJSON_PrintUnformatted(l);
			check(r && cJSON_GetArraySize(l) >= 1 && !strstr(text ? text : "old ", "old "),
			    "vm_logs: since_s drops older lines");
		}
		cJSON_Delete(r);
	}
	r = call(&e, "sandbox_vm_logs", "{\"sandbox_id\":\"%s\",\"since_s\":3600}", id);
	{
		cJSON *all = call(&e, "sandbox_vm_logs", "{\"sandbox_id\":\"%s\",\"limit\":5000}", id);
		cJSON *none = NULL;
		int nall = cJSON_GetArraySize(cJSON_GetObjectItem(all, "lines"));
		sleep(2);
		none = call(&e, "sandbox_vm_logs", "{\"sandbox_id\":\"%s\",\"since_s\":1,"
		    "\"limit\":5000}", id);
		check(r && cJSON_GetArraySize(cJSON_GetObjectItem(r, "lines")) > 0 &&
		    cJSON_GetArraySize(cJSON_GetObjectItem(none, "lines")) < nall,
		    "vm_logs: since_s keeps only recent lines (%d of %d in the last second)",
		    cJSON_GetArraySize(cJSON_GetObjectItem(none, "lines")), nall);
		cJSON_Delete(all);
		cJSON_Delete(none);
	}
	cJSON_Delete(r);

	/* suspend, status, resume */
	r = call(&e, "sandbox_suspend", "{\"sandbox_id\":\"%s\"}", id);
	check(r && strcmp(str(r, "state"), "suspended") == 0, "suspend: the summary says "
	    "suspended (%s)", r ? "" : e.msg);
	cJSON_Delete(r);
	r = call(&e, "sandbox_status", "{\"sandbox_id\":\"mcp-flow\"}");
	check(r && strcmp(str(r, "state"), "suspended") == 0 && strcmp(str(r, "sandbox_id"), id)
	    == 0, "status: by name, suspended");
	cJSON_Delete(r);
	cJSON_Delete(call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"true\"}", id));
	check(e.code == SBX_ESTATE && strstr(mcp_err_hint(&e), "sandbox_resume"), "exec on a suspended "
	    "sandbox: the hint says to call sandbox_resume");
	cJSON_Delete(call(&e, "sandbox_read_file", "{\"sandbox_id\":\"%s\",\"path\":\"a.txt\"}", id));
	check(e.code == SBX_ESTATE && strstr(mcp_err_hint(&e), "sandbox_resume"), "read_file on a "
	    "suspended sandbox: the same hint");
	r = call(&e, "sandbox_suspend", "{\"sandbox_id\":\"%s\"}", id);
	check(r != NULL, "suspend again: nothing to do, no error");
	cJSON_Delete(r);
	r = call(&e, "sandbox_resume", "{\"sandbox_id\":\"%s\"}", id);
	check(r && strcmp(str(r, "state"), "running") == 0, "resume: running again");
	cJSON_Delete(r);
	r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"cat a.txt\"}", id);
	check(r && strcmp(str(r, "stdout"), "alpha\n") == 0, "exec after resume works");
	cJSON_Delete(r);

	/* list, vanished */
	{
		char id2[32] = "";
		struct sandbox *s;
		const cJSON *it, *pid;
		int listed = 0, vanished = 0, again = 0;

		r = call(&e, "sandbox_create", "{\"name\":\"mcp-doomed\"}");
		if (r) {
			snprintf(id2, sizeof id2, "%s", str(r, "sandbox_id"));
			snprintf(made[nmade++], sizeof made[0], "%s", id2);
		}
		cJSON_Delete(r);
		s = id2[0] ? core_get(core, id2, &e) : NULL;
		pid = s ? cJSON_GetObjectItem(s->backend_data, "pid") : NULL;
		if (cJSON_IsNumber(pid))
			kill((pid_t)pid->valuedouble, SIGKILL);	/* the sandbox's init */
		sandbox_free(s);
		/* The kernel takes a moment to tear the pid namespace down (longer under
		 * the sanitizers): ask until the list notices, for a few seconds. */
		r = NULL;
		for (int tries = 0; tries < 50 && !vanished; tries++) {
			usleep(100 * 1000);
			cJSON_Delete(r);
			r = call(&e, "sandbox_list", "{}");
			listed = 0;
			cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "sandboxes"))
				listed |= strcmp(str(it, "sandbox_id"), id) == 0 &&
				    strcmp(str(it, "state"), "running") == 0;
			cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "vanished"))
				vanished |= strcmp(str(it, "sandbox_id"), id2) == 0 &&
				    strlen(str(it, "reason")) > 0;
		}
		check(listed, "list: our sandbox, running");
		check(id2[0] && vanished, "list: a sandbox whose init was killed is reported "
		    "vanished, with a reason");
		cJSON_Delete(r);
		r = call(&e, "sandbox_list", "{}");
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "vanished"))
			again |= strcmp(str(it, "sandbox_id"), id2) == 0;
		check(r && !again, "list: a vanished sandbox is reported once");
		cJSON_Delete(r);
		r = call(&e, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"true\"}", id2);
		check(r == NULL && e.code == SBX_ESTATE && strstr(mcp_err_hint(&e), "sandbox_create"),
		    "exec on a vanished sandbox: the hint says to create a new one (%s)", mcp_err_hint(&e));
		cJSON_Delete(r);
		r = call(&e, "sandbox_destroy", "{\"sandbox_id\":\"%s\"}", id2);
		check(r != NULL, "destroy: a vanished sandbox can be dropped");
		cJSON_Delete(r);
	}

	/* destroy */
	r = call(&e, "sandbox_destroy", "{\"sandbox_id\":\"%s\"}", id);
	check(r && strcmp(str(r, "sandbox_id"), id) == 0 &&
	    strcmp(str(r, "state"), "terminated") == 0, "destroy: the id and terminated");
	cJSON_Delete(r);
	r = call(&e, "sandbox_list", "{}");
	{
		const cJSON *it;
		int still = 0;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(r, "sandboxes"))
			still |= strcmp(str(it, "sandbox_id"), id) == 0;
		check(r && !still, "list: a destroyed sandbox is gone");
	}
	cJSON_Delete(r);
	cJSON_Delete(call(&e, "sandbox_status", "{\"sandbox_id\":\"%s\"}", id));
	check(e.code == SBX_ENOTFOUND && strstr(mcp_err_hint(&e), "sandbox_list"), "status after destroy: "
	    "unknown, run sandbox_list");
}

int
main(void)
{
	char exe[4096], bundle[4200];
	struct config *cfg;
	struct sbx_err e;
	ssize_t n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(tmpdir, sizeof tmpdir, "/tmp/sbxtest.XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	{
		const char *v[][2] = { { "XDG_STATE_HOME", "state" }, { "XDG_DATA_HOME", "data" },
		    { "XDG_RUNTIME_DIR", "run" }, { "XDG_CONFIG_HOME", "config" },
		    { "XDG_CACHE_HOME", "cache" } };
		for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
			char p[128];
			snprintf(p, sizeof p, "%s/%s", tmpdir, v[i][1]);
			mkdir(p, 0700);
			setenv(v[i][0], p, 1);
		}
	}
	/* The bundle of this build: build/tests/mcp-tools -> build/agent-bundle. */
	if (getenv("SBXTOP_AGENT_BUNDLE") == NULL &&
	    (n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
		exe[n] = '\0';
		*strrchr(exe, '/') = '\0';
		snprintf(bundle, sizeof bundle, "%s/../agent-bundle", exe);
		setenv("SBXTOP_AGENT_BUNDLE", realpath(bundle, exe) ? exe : bundle, 1);
	}
	cfg = config_new();
	if (config_load(cfg, &e) < 0) {
		printf("not ok 1 - config: %s\n", e.msg);
		return 1;
	}
	core = core_new(cfg);
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	test_schemas();
	test_unknown();
	test_flow();

	mcp_call_local_free(last_call);
	cleanup();
	tmpdir[0] = '\0';
	nmade = 0;
	core_free(core);
	return tap_end();
}
