/* Errors with reasons: every reason's name survives the core server's error
 * shape (the JSON-RPC error the server sends, read back by core/client/client.c), and
 * the same failure, met by a person and by an agent, carries a hint for each:
 * an `sbxtop` command from the core, a tool name from the MCP tools.  The
 * failures are real ones, on a real core and a real ns sandbox: an unknown
 * sandbox, a name taken, a directory read as a file, a suspended sandbox.
 * Private XDG dirs; the sandbox is destroyed, pass or fail.  TAP lines. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "backends/ns/ns-idmap.h"
#include "core/client/client.h"
#include "core/config.h"
#include "core/core.h"
#include "lib/util.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "mcp/tool.h"
#include "mcp/tool-util.h"

static char tmpdir[64];
static struct core *core;
static char made[32];

static void
cleanup(void)
{
	struct sbx_err e;
	struct ns_idmap m;

	if (made[0] && core_destroy(core, made, NULL, &e) < 0 && e.code != SBX_ENOTFOUND)
		diag("cleanup: destroy %s: %s", made, e.msg);
	made[0] = '\0';
	if (tmpdir[0] && ns_idmap_choose(&m, &e) == 0)
		(void)ns_rmtree(&m, tmpdir, &e);
	tmpdir[0] = '\0';
}

static void
on_signal(int sig)
{
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* e as the core server sends it and as a client reads it back. */
static void
over_the_wire(const struct sbx_err *e, struct sbx_err *back, char **text)
{
	cJSON *id = cJSON_CreateString("t1"), *msg;

	*text = jsonrpc_error(id, CLIENT_ERR_CORE, e->msg, client_err_data(e));
	cJSON_Delete(id);
	msg = cJSON_Parse(*text);
	sbx_err_clear(back);
	client_err_from_rpc(cJSON_GetObjectItemCaseSensitive(msg, "error"), back);
	cJSON_Delete(msg);
}

static void
test_names(void)
{
	int all = 1;

	for (int r = SBX_R_NONE + 1; r < SBX_R_COUNT; r++) {
		const char *n = sbx_reason_name((enum sbx_reason)r);
		if (n[0] == '\0' || sbx_reason_by_name(n) != (enum sbx_reason)r) {
			diag("reason %d: name '%s' does not come back", r, n);
			all = 0;
		}
	}
	check(all, "every reason has a name that maps back to it");
	check(sbx_reason_by_name(NULL) == SBX_R_NONE && sbx_reason_by_name("") == SBX_R_NONE &&
	    sbx_reason_by_name("bad_request") == SBX_R_NONE,
	    "no name, an empty one or a foreign one is no reason");
	check(strcmp(sbx_reason_name(SBX_R_IS_DIR), "is_a_directory") == 0 &&
	    strcmp(sbx_reason_name(SBX_R_UNKNOWN_SANDBOX), "unknown_sandbox") == 0,
	    "the names are the documented ones");
}

static void
test_wire(void)
{
	struct sbx_err e, back;
	char *text;
	int all = 1;

	for (int r = SBX_R_NONE; r < SBX_R_COUNT; r++) {
		sbx_error_reason(&e, SBX_ESTATE, (enum sbx_reason)r, "run `sbxtop ls`",
		    "sandbox x (%d) failed", r);
		over_the_wire(&e, &back, &text);
		if (back.code != e.code || back.reason != e.reason || strcmp(back.msg, e.msg) != 0 ||
		    strcmp(back.hint, e.hint) != 0) {
			diag("reason %s: %s", sbx_reason_name((enum sbx_reason)r), text);
			all = 0;
		}
		free(text);
	}
	check(all, "code, reason, message and hint survive the core server's error shape, "
	    "for every reason");

	sbx_error_reason(&e, SBX_ENOTFOUND, SBX_R_UNKNOWN_SANDBOX, "run `sbxtop ls`",
	    "unknown sandbox 'nope'");
	over_the_wire(&e, &back, &text);
	{
		cJSON *m = cJSON_Parse(text), *err = cJSON_GetObjectItem(m, "error");
		cJSON *d = cJSON_GetObjectItem(err, "data");
		check(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(err, "message")),
		    "unknown sandbox 'nope'") == 0 &&
		    strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "reason")), "unknown_sandbox")
		    == 0 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "hint")),
		    "run `sbxtop ls`") == 0 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d,
		    "code")), "not_found") == 0,
		    "message, hint and reason are separate fields: %s", text);
		cJSON_Delete(m);
	}
	free(text);

	sbx_error(&e, SBX_EIO, NULL, "disk (full) (really)");
	over_the_wire(&e, &back, &text);
	check(strstr(text, "\"reason\"") == NULL && back.reason == SBX_R_NONE &&
	    back.hint[0] == '\0' && strcmp(back.msg, "disk (full) (really)") == 0,
	    "no reason, no hint: none on the wire, none read back, the message untouched");
	free(text);

	sbx_error_reason(&e, SBX_ESTATE, SBX_R_SUSPENDED, NULL, "x");
	sbx_error(&e, SBX_EIO, NULL, "y");
	check(e.reason == SBX_R_NONE, "a later sbx_error does not keep an earlier reason");
	snprintf(e.tool_hint, sizeof e.tool_hint, "call sandbox_list");
	sbx_err_clear(&e);
	check(e.reason == SBX_R_NONE && e.tool_hint[0] == '\0', "sbx_err_clear clears both");
}

/* A tool called as an agent's tools/call runs it; *e as the agent reads it. */
static void __attribute__((format(printf, 3, 4)))
tool(struct sbx_err *e, const char *name, const char *fmt, ...)
{
	const struct mcp_tool *t = mcp_tool_find(name);
	struct mcp_call *call = mcp_call_local_new(core, "err-test");
	cJSON *args, *res = NULL;
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	args = cJSON_Parse(text);
	sbx_err_clear(e);
	if (t == NULL || t->run(call, args, &res, e) == 0)
		sbx_error(e, SBX_OK, NULL, "%s did not fail", name);
	mcp_err_fix(e);
	cJSON_Delete(args);
	cJSON_Delete(res);
	mcp_call_local_free(call);
}

/* What a person reads (the core's error, through the core server) and what an
 * agent reads (the tool's), for the same failure. */
static void
both(const char *what, enum sbx_reason want, const struct sbx_err *core_e,
    const struct sbx_err *tool_e, const char *tool_name)
{
	struct sbx_err back;
	char *text;
	const char *agent = mcp_err_hint(tool_e);

	over_the_wire(core_e, &back, &text);
	check(back.reason == want && strstr(back.hint, "sbxtop ") != NULL &&
	    strstr(back.hint, "sandbox_") == NULL,
	    "%s, for the CLI: reason %s, an `sbxtop` command (%s: %s)", what,
	    sbx_reason_name(want), back.msg, back.hint);
	check(tool_e->reason == want && strstr(agent, tool_name) != NULL &&
	    strstr(agent, "sbxtop") == NULL,
	    "%s, for an agent: reason %s, a hint naming %s (%s: %s)", what,
	    sbx_reason_name(want), tool_name, tool_e->msg, agent);
	free(text);
}

static void
test_audiences(void)
{
	struct core_create_opts o;
	struct sandbox *s = NULL;
	struct sbx_err ce, te;
	cJSON *req, *out = NULL;

	check(core_status(core, "nope", &s, NULL, &ce) < 0, "status of an unknown sandbox fails");
	sandbox_free(s);
	s = NULL;
	tool(&te, "sandbox_status", "{\"sandbox_id\":\"%s\"}", "nope");
	both("an unknown sandbox", SBX_R_UNKNOWN_SANDBOX, &ce, &te, "sandbox_list");

	core_create_opts_init(&o);
	o.name = "err-taken";
	o.backend = "ns";
	o.owner = "test";
	if (!check(core_create(core, &o, &s, &ce) == 0, "create a sandbox%s%s",
	    s ? "" : ": ", s ? "" : ce.msg))
		return;
	snprintf(made, sizeof made, "%s", s->id);
	sandbox_free(s);
	s = NULL;

	check(core_create(core, &o, &s, &ce) < 0, "a second one with its name fails");
	sandbox_free(s);
	tool(&te, "sandbox_create", "{\"name\":\"%s\",\"backend\":\"ns\"}", "err-taken");
	both("a name taken", SBX_R_NAME_TAKEN, &ce, &te, "sandbox_destroy");
	check(strstr(ce.hint, made) != NULL, "the CLI's hint names the sandbox that has it (%s)",
	    ce.hint);

	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "path", "/workspace");
	check(core_files(core, made, "read", req, "test", &out, &ce) < 0, "reading a directory "
	    "as a file fails");
	cJSON_Delete(out);
	cJSON_Delete(req);
	tool(&te, "sandbox_read_file", "{\"sandbox_id\":\"%s\",\"path\":\"/workspace\"}", made);
	both("is a directory", SBX_R_IS_DIR, &ce, &te, "sandbox_list_files");

	tool(&te, "sandbox_list_files", "{\"sandbox_id\":\"%s\",\"path\":\"/etc/hostname\"}", made);
	check(te.reason == SBX_R_NOT_DIR && strstr(mcp_err_hint(&te), "sandbox_read_file"),
	    "listing a file: not_a_directory, read it with sandbox_read_file (%s)",
	    mcp_err_hint(&te));

	sbx_err_clear(&ce);
	if (!check(core_suspend(core, made, &ce) == 0, "suspend it%s%s", ce.msg[0] ? ": " : "",
	    ce.msg))
		return;
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "path", "a.txt");
	check(core_files(core, made, "read", req, "test", &out, &ce) < 0, "reading in a "
	    "suspended sandbox fails");
	cJSON_Delete(out);
	cJSON_Delete(req);
	tool(&te, "sandbox_exec", "{\"sandbox_id\":\"%s\",\"command\":\"true\"}", made);
	both("suspended", SBX_R_SUSPENDED, &ce, &te, "sandbox_resume");
	check(strstr(ce.hint, "sbxtop resume") != NULL, "the CLI's hint is `sbxtop resume` (%s)",
	    ce.hint);
}

int
main(void)
{
	struct config *cfg;
	struct sbx_err e;
	char exe[4096], bundle[4200];
	ssize_t n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	test_names();
	test_wire();

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
	/* The bundle of this build: build/tests/err-reasons -> build/agent-bundle. */
	if (getenv("SBXTOP_AGENT_BUNDLE") == NULL &&
	    (n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
		exe[n] = '\0';
		*strrchr(exe, '/') = '\0';
		snprintf(bundle, sizeof bundle, "%s/../agent-bundle", exe);
		setenv("SBXTOP_AGENT_BUNDLE", realpath(bundle, exe) ? exe : bundle, 1);
	}
	cfg = config_new();
	sbx_err_clear(&e);
	if (!check(config_load(cfg, &e) == 0, "config%s%s", e.msg[0] ? ": " : "", e.msg))
		return tap_end();
	core = core_new(cfg);
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	test_audiences();

	cleanup();
	core_free(core);
	return tap_end();
}
