/* Unit tests for MCP 2026-07-28: the HTTP header rules (mcp/http-check.c) as
 * pure functions, and a session on pipes, in process, answering modern
 * requests beside a legacy initialize: server/discover, the _meta rules,
 * resultType and caching hints, removed methods, a task polled to its end,
 * subscriptions/listen, and the error codes.  TAP lines. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tap.h"
#include "lib/util.h"
#include "mcp/http-check.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"

#define META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
	"\"io.modelcontextprotocol/clientInfo\":{\"name\":\"unit\",\"version\":\"26\"}," \
	"\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define META_TASKS "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
	"\"io.modelcontextprotocol/clientCapabilities\":{\"extensions\":" \
	"{\"io.modelcontextprotocol/tasks\":{}}}}"

/* --- the header rules ---------------------------------------------------- */

struct hdrs {
	const char *names[4], *values[4];
};

static const char *
hdr(void *arg, const char *name)
{
	struct hdrs *h = arg;

	for (int i = 0; i < 4 && h->names[i]; i++)
		if (strcasecmp(h->names[i], name) == 0)
			return h->values[i];
	return NULL;
}

/* The HTTP status mcp_http_check_modern gives body with headers h; the code in
 * *code. */
static int
checked(const char *body, struct hdrs h, int *code)
{
	cJSON *m = cJSON_Parse(body), *data = NULL;
	char msg[400];
	int st;

	*code = 0;
	st = mcp_http_check_modern(m, hdr, &h, code, msg, sizeof msg, &data);
	if (st != 0 && *code == MCP_UNSUPPORTED_VERSION && !cJSON_IsArray(cJSON_GetObjectItem(data,
	    "supported")))
		st = -1;
	cJSON_Delete(data);
	cJSON_Delete(m);
	return st;
}

static void
test_http_check(void)
{
	const char *call = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"sandbox_list\"," META "}}";
	struct hdrs good = { { "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name" },
	    { "2026-07-28", "tools/call", "sandbox_list" } };
	int code;
	cJSON *m;

	check(mcp_http_host_ok("127.0.0.1:8080", "127.0.0.1", 8080) &&
	    mcp_http_host_ok("localhost", "127.0.0.1", 8080) &&
	    mcp_http_host_ok("[::1]:8080", "127.0.0.1", 8080) &&
	    !mcp_http_host_ok("evil.example:8080", "127.0.0.1", 8080) &&
	    !mcp_http_host_ok("127.0.0.1:8081", "127.0.0.1", 8080) &&
	    !mcp_http_host_ok("127.0.0.1:80x", "127.0.0.1", 80) &&
	    mcp_http_host_ok("10.0.0.5:9", "10.0.0.5", 9),
	    "Host: loopback names and the bound address on its port only");

	m = cJSON_Parse(call);
	check(mcp_http_is_modern(m, NULL), "_meta with a protocol version: the modern path");
	cJSON_Delete(m);
	m = cJSON_Parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	check(!mcp_http_is_modern(m, NULL) && !mcp_http_is_modern(m, "2025-06-18") &&
	    mcp_http_is_modern(m, "2026-07-28") && mcp_http_is_modern(m, "v999"),
	    "no _meta: legacy, unless the version header names no legacy revision");
	cJSON_Delete(m);
	m = cJSON_Parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"}");
	check(mcp_http_is_modern(m, NULL), "server/discover is modern even without _meta");
	cJSON_Delete(m);

	check(checked(call, good, &code) == 0, "headers that say what the body says pass");
	struct hdrs ws = good;
	ws.values[2] = "  sandbox_list\t";
	check(checked(call, ws, &code) == 0, "whitespace around Mcp-Name is not part of it");
	struct hdrs b64 = good;
	b64.values[2] = "=?base64?c2FuZGJveF9saXN0?=";
	check(checked(call, b64, &code) == 0, "a base64 Mcp-Name is decoded before comparing");
	b64.values[2] = "=?base64?c2FuZGJveF9leGVj?=";
	check(checked(call, b64, &code) == 400 && code == MCP_HEADER_MISMATCH,
	    "a base64 Mcp-Name of another tool: 400, -32020");
	b64.values[2] = "=?base64?!!!?=";
	check(checked(call, b64, &code) == 400 && code == MCP_HEADER_MISMATCH,
	    "broken base64: 400, -32020");
	struct hdrs other = good;
	other.values[2] = "sandbox_destroy";
	check(checked(call, other, &code) == 400 && code == MCP_HEADER_MISMATCH,
	    "Mcp-Name naming another tool than the body: 400, -32020");
	struct hdrs noname = { { "MCP-Protocol-Version", "Mcp-Method" },
	    { "2026-07-28", "tools/call" } };
	check(checked(call, noname, &code) == 400 && code == MCP_HEADER_MISMATCH,
	    "tools/call without Mcp-Name: 400, -32020");
	struct hdrs meth = good;
	meth.values[1] = "tools/list";
	check(checked(call, meth, &code) == 400 && code == MCP_HEADER_MISMATCH,
	    "Mcp-Method not the body's method: 400, -32020");
	struct hdrs ver = good;
	ver.values[0] = "2025-11-25";
	check(checked(call, ver, &code) == 400 && code == MCP_HEADER_MISMATCH,
	    "MCP-Protocol-Version not the _meta version: 400, -32020");
	struct hdrs ctl = good;
	ctl.values[2] = "sandbox\x01list";
	check(checked(call, ctl, &code) == 400 && code == MCP_HEADER_MISMATCH,
	    "a control character in a header: 400, -32020");
	check(checked("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}",
	    good, &code) == 400 && code == JSONRPC_INVALID_PARAMS,
	    "no _meta at all: 400, -32602");
	check(checked("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":"
	    "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}",
	    good, &code) == 400 && code == JSONRPC_INVALID_PARAMS,
	    "no clientCapabilities: 400, -32602");
	struct hdrs v9 = { { "MCP-Protocol-Version", "Mcp-Method" }, { "v9", "server/discover" } };
	check(checked("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":"
	    "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"v9\","
	    "\"io.modelcontextprotocol/clientCapabilities\":{}}}}", v9, &code) == 400 &&
	    code == MCP_UNSUPPORTED_VERSION, "an unknown version: 400, -32022 with data.supported");
	struct hdrs task = { { "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name" },
	    { "2026-07-28", "tasks/get", "abc" } };
	check(checked("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/get\",\"params\":"
	    "{\"taskId\":\"abd\"," META "}}", task, &code) == 400 && code == MCP_HEADER_MISMATCH,
	    "tasks/get: Mcp-Name must be the taskId");
	struct hdrs none = { { NULL }, { NULL } };
	check(checked("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}",
	    none, &code) == 0, "a notification has no header rules");

	/* SEP-2243: sandbox_id's x-mcp-header, Mcp-Param-Sandbox. */
	const char *st1 = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"sandbox_status\",\"arguments\":{\"sandbox_id\":\"sbx-1234ab\"}," META "}}";
	struct hdrs sp = { { "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Param-Sandbox" },
	    { "2026-07-28", "tools/call", "sandbox_status", "sbx-1234ab" } };
	check(checked(st1, sp, &code) == 0, "Mcp-Param-Sandbox saying the body's sandbox_id "
	    "passes");
	struct hdrs spn = sp;
	spn.names[3] = NULL;
	check(checked(st1, spn, &code) == 400 && code == MCP_HEADER_MISMATCH,
	    "a sandbox_id in the body without Mcp-Param-Sandbox: 400, -32020");
	struct hdrs spo = sp;
	spo.values[3] = "sbx-999999";
	check(checked(st1, spo, &code) == 400 && code == MCP_HEADER_MISMATCH,
	    "Mcp-Param-Sandbox naming another sandbox: 400, -32020");
	spo.values[3] = "=?base64?c2J4LTEyMzRhYg==?=";
	check(checked(st1, spo, &code) == 0, "a base64 Mcp-Param-Sandbox is decoded first");
	spo.values[3] = "=?base64?c2J4LTEyMzRhYg?=";
	check(checked(st1, spo, &code) == 400 && code == MCP_HEADER_MISMATCH,
	    "Mcp-Param-Sandbox with bad base64 padding: 400, -32020");
	spo.values[3] = " sbx-1234ab ";
	check(checked(st1, spo, &code) == 0, "whitespace around Mcp-Param-Sandbox is not part "
	    "of it");
	check(checked("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"sandbox_status\",\"arguments\":{}," META "}}", sp, &code) == 400 &&
	    code == MCP_HEADER_MISMATCH, "Mcp-Param-Sandbox for a call whose body names no "
	    "sandbox: 400, -32020");
	check(checked(call, good, &code) == 0, "a tool without x-mcp-header needs no "
	    "Mcp-Param header");

	static const struct { const char *text; unsigned want; } st[] = {
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", 200 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"x\"}}", 404 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"x\"}}", 400 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32021,\"message\":\"x\"}}", 400 },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"x\"}}", 200 },
	};
	int ok = 1;
	for (size_t i = 0; i < ARRAY_SIZE(st); i++)
		ok &= mcp_http_modern_status(st[i].text, strlen(st[i].text)) == st[i].want;
	check(ok, "HTTP status of a modern answer: 404 method not found, 400 bad request, 200 else");
}

/* --- a session on pipes --------------------------------------------------- */

struct pipes {
	struct core	*core;
	int		 in[2], out[2];
	pthread_t	 th;
	int		 rc;
	FILE		*rd;
};

static void *
serve(void *arg)
{
	struct pipes *p = arg;

	p->rc = mcp_serve_stdio(p->core, p->in[0], p->out[1]);
	close(p->out[1]);
	return NULL;
}

static int
say(struct pipes *p, const char *line)
{
	return write_all(p->in[1], line, strlen(line)) < 0 || write_all(p->in[1], "\n", 1) < 0 ?
	    -1 : 0;
}

static cJSON *
next(struct pipes *p)
{
	char buf[1 << 16];

	if (fgets(buf, sizeof buf, p->rd) == NULL)
		return NULL;
	return cJSON_Parse(buf);
}

static cJSON *
ask(struct pipes *p, const char *line)
{
	return say(p, line) < 0 ? NULL : next(p);
}

static const cJSON *
res(const cJSON *o)
{
	return cJSON_GetObjectItem(o, "result");
}

static int
ecode(const cJSON *o)
{
	return (int)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "error"),
	    "code"));
}

static const char *
s_of(const cJSON *o, const char *k)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(o, k));

	return v ? v : "";
}

static void
test_session(struct core *c)
{
	struct pipes p = { .core = c };
	cJSON *o;
	char line[1024];

	if (pipe(p.in) < 0 || pipe(p.out) < 0 || (p.rd = fdopen(p.out[0], "r")) == NULL)
		fatal("pipe");
	pthread_create(&p.th, NULL, serve, &p);

	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"server-discover-probe-1\",\"method\":"
	    "\"server/discover\",\"params\":{" META "}}");
	const cJSON *sv = cJSON_GetObjectItem(res(o), "supportedVersions");
	check(strcmp(cJSON_GetStringValue(cJSON_GetArrayItem(sv, 0)), "2026-07-28") == 0 &&
	    cJSON_GetArraySize(sv) == 5 && strcmp(s_of(res(o), "resultType"), "complete") == 0 &&
	    cJSON_IsNumber(cJSON_GetObjectItem(res(o), "ttlMs")) &&
	    cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(res(o), "capabilities"),
	    "extensions"), "io.modelcontextprotocol/tasks") != NULL &&
	    strcmp(s_of(cJSON_GetObjectItem(cJSON_GetObjectItem(res(o), "_meta"),
	    "io.modelcontextprotocol/serverInfo"), "name"), "sbxtop") == 0,
	    "server/discover before any initialize: 2026-07-28 first, tasks, serverInfo, ttlMs");
	cJSON_Delete(o);

	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{"
	    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}");
	check(ecode(o) == JSONRPC_INVALID_PARAMS && strstr(s_of(cJSON_GetObjectItem(o, "error"),
	    "message"), "clientCapabilities"), "no clientCapabilities: -32602 naming it");
	cJSON_Delete(o);

	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{"
	    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2030-01-01\","
	    "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
	const cJSON *d = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "error"), "data");
	check(ecode(o) == MCP_UNSUPPORTED_VERSION && strcmp(s_of(d, "requested"), "2030-01-01") == 0 &&
	    cJSON_GetArraySize(cJSON_GetObjectItem(d, "supported")) == 5,
	    "an unsupported version: -32022 with supported and requested");
	cJSON_Delete(o);

	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{" META "}}");
	const cJSON *tools = cJSON_GetObjectItem(res(o), "tools"), *t;
	int titled = 1, portable = 1;
	cJSON_ArrayForEach(t, tools) {
		_cleanup_free_ char *os = cJSON_PrintUnformatted(cJSON_GetObjectItem(t,
		    "outputSchema"));
		_cleanup_free_ char *is = cJSON_PrintUnformatted(cJSON_GetObjectItem(t,
		    "inputSchema"));
		titled &= cJSON_HasObjectItem(t, "title") && cJSON_HasObjectItem(t, "annotations");
		portable &= strstr(os ? os : "", "\"type\":[") == NULL &&
		    strstr(is ? is : "", "\"type\":[") == NULL;
	}
	check(cJSON_GetArraySize(tools) > 10 && titled &&
	    strcmp(s_of(res(o), "resultType"), "complete") == 0 &&
	    strcmp(s_of(res(o), "cacheScope"), "public") == 0 &&
	    cJSON_GetNumberValue(cJSON_GetObjectItem(res(o), "ttlMs")) > 0,
	    "tools/list: titles and annotations, resultType, ttlMs and cacheScope");
	check(portable, "no schema types a field with a list of types");
	cJSON_Delete(o);

	static const char *const removed[] = { "ping", "logging/setLevel", "initialize",
	    "resources/subscribe" };
	int all404 = 1;
	for (size_t i = 0; i < ARRAY_SIZE(removed); i++) {
		snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"%s\","
		    "\"params\":{" META "}}", 10 + i, removed[i]);
		o = ask(&p, line);
		all404 &= ecode(o) == JSONRPC_METHOD_NOT_FOUND;
		cJSON_Delete(o);
	}
	check(all404, "ping, logging/setLevel, initialize, resources/subscribe in 2026-07-28: -32601");

	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"resources/read\",\"params\":{"
	    "\"uri\":\"sbx://sbx-nope00/logs\"," META "}}");
	check(ecode(o) == JSONRPC_INVALID_PARAMS && strcmp(s_of(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(o, "error"), "data"), "uri"), "sbx://sbx-nope00/logs") == 0,
	    "an unknown resource: -32602 with data.uri");
	cJSON_Delete(o);

	/* A task: a call on an unknown sandbox ends completed with isError. */
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"tools/call\",\"params\":{"
	    "\"name\":\"sandbox_exec\",\"arguments\":{\"sandbox_id\":\"sbx-nope00\",\"command\":"
	    "\"true\"}," META_TASKS "}}");
	char tid[40];
	snprintf(tid, sizeof tid, "%s", s_of(res(o), "taskId"));
	check(strcmp(s_of(res(o), "resultType"), "task") == 0 && strlen(tid) == 32 &&
	    strcmp(s_of(res(o), "status"), "working") == 0 &&
	    cJSON_IsNumber(cJSON_GetObjectItem(res(o), "pollIntervalMs")),
	    "tools/call from a client with the tasks extension: a task, working");
	cJSON_Delete(o);
	const char *status = "working";
	cJSON *g = NULL;
	for (int i = 0; i < 100 && strcmp(status, "working") == 0; i++) {
		cJSON_Delete(g);
		usleep(50000);
		snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tasks/get\","
		    "\"params\":{\"taskId\":\"%s\"," META_TASKS "}}", 100 + i, tid);
		g = ask(&p, line);
		status = s_of(res(g), "status");
	}
	const cJSON *tr = cJSON_GetObjectItem(res(g), "result");
	_cleanup_free_ char *content = cJSON_PrintUnformatted(cJSON_GetObjectItem(tr, "content"));
	check(strcmp(status, "completed") == 0 && cJSON_IsTrue(cJSON_GetObjectItem(tr, "isError")) &&
	    content != NULL && strstr(content, "sandbox_list") != NULL,
	    "tasks/get: completed, with the call's result (an error naming sandbox_list)");
	cJSON_Delete(g);
	snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"tasks/get\","
	    "\"params\":{\"taskId\":\"%s\"," META "}}", tid);
	o = ask(&p, line);
	check(ecode(o) == MCP_MISSING_CAPABILITY && cJSON_GetObjectItem(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(o, "error"), "data"), "requiredCapabilities"),
	    "extensions") != NULL, "tasks/get without the extension: -32021 naming it");
	cJSON_Delete(o);
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":23,\"method\":\"tools/call\",\"params\":{"
	    "\"name\":\"sandbox_exec\",\"arguments\":{\"sandbox_id\":\"sbx-nope00\",\"command\":"
	    "\"true\"}," META "}}");
	check(cJSON_IsTrue(cJSON_GetObjectItem(res(o), "isError")) &&
	    strcmp(s_of(res(o), "resultType"), "complete") == 0,
	    "the same call without the extension: answered in place, as before");
	cJSON_Delete(o);

	/* subscriptions/listen: the acknowledgement first, tagged; a cancel ends it. */
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":\"sub-1\",\"method\":\"subscriptions/listen\","
	    "\"params\":{\"notifications\":{\"resourcesListChanged\":true,\"toolsListChanged\":true,"
	    "\"resourceSubscriptions\":[\"sbx://sbx-abc123/logs\",\"file:///etc/passwd\"]},"
	    META "}}");
	const cJSON *pa = cJSON_GetObjectItem(o, "params");
	const cJSON *ack = cJSON_GetObjectItem(pa, "notifications");
	check(strcmp(s_of(o, "method"), "notifications/subscriptions/acknowledged") == 0 &&
	    strcmp(s_of(cJSON_GetObjectItem(pa, "_meta"), "io.modelcontextprotocol/subscriptionId"),
	    "sub-1") == 0 && cJSON_IsTrue(cJSON_GetObjectItem(ack, "resourcesListChanged")) &&
	    !cJSON_HasObjectItem(ack, "toolsListChanged") &&
	    cJSON_GetArraySize(cJSON_GetObjectItem(ack, "resourceSubscriptions")) == 1,
	    "subscriptions/listen: acknowledged first, tagged, with what is honoured");
	cJSON_Delete(o);
	core_events_emit(c, "sandbox.created", "sbx-abc123", NULL);
	o = next(&p);
	check(strcmp(s_of(o, "method"), "notifications/resources/list_changed") == 0 &&
	    strcmp(s_of(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "params"), "_meta"),
	    "io.modelcontextprotocol/subscriptionId"), "sub-1") == 0,
	    "a sandbox made: resources/list_changed on the subscription");
	cJSON_Delete(o);
	o = next(&p);
	check(strcmp(s_of(o, "method"), "notifications/resources/updated") == 0 &&
	    strcmp(s_of(cJSON_GetObjectItem(o, "params"), "uri"), "sbx://sbx-abc123/logs") == 0,
	    "and resources/updated for its log");
	cJSON_Delete(o);
	say(&p, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
	    "{\"requestId\":\"sub-1\"}}");
	usleep(100000);
	core_events_emit(c, "sandbox.created", "sbx-abc124", NULL);
	/* A legacy session on the same connection still works, and the next line is its
	 * answer: the cancelled subscription said nothing more. */
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":30,\"method\":\"initialize\",\"params\":{"
	    "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":"
	    "{\"name\":\"old\",\"version\":\"1\"}}}");
	check(strcmp(s_of(res(o), "protocolVersion"), "2025-06-18") == 0 &&
	    !cJSON_HasObjectItem(res(o), "resultType"),
	    "after a cancel the subscription is quiet; initialize still gives a legacy session");
	cJSON_Delete(o);
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":31,\"method\":\"ping\"}");
	check(res(o) != NULL, "and the legacy session has its ping");
	cJSON_Delete(o);
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":32,\"method\":\"tasks/get\",\"params\":"
	    "{\"taskId\":\"x\"}}");
	check(ecode(o) == JSONRPC_METHOD_NOT_FOUND,
	    "tasks/get without a version on a 2025 session: that session's -32601");
	cJSON_Delete(o);
	snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":33,\"method\":\"tasks/get\","
	    "\"params\":{\"taskId\":\"%s\"," META_TASKS "}}", tid);
	o = ask(&p, line);
	check(strcmp(s_of(res(o), "status"), "completed") == 0,
	    "with its _meta, the same connection polls the task (%s)", s_of(res(o), "status"));
	cJSON_Delete(o);

	close(p.in[1]);
	pthread_join(p.th, NULL);
	check(p.rc == 0, "mcp_serve_stdio returns 0 when its input closes");
	fclose(p.rd);
	close(p.in[0]);
}

int
main(void)
{
	char tmpdir[] = "/tmp/sbxmcp26.XXXXXX";
	struct core *c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (mkdtemp(tmpdir) == NULL)
		return 1;
	setenv("XDG_STATE_HOME", tmpdir, 1);
	setenv("XDG_CONFIG_HOME", tmpdir, 1);
	setenv("XDG_CACHE_HOME", tmpdir, 1);
	setenv("XDG_DATA_HOME", tmpdir, 1);
	setenv("XDG_RUNTIME_DIR", tmpdir, 1);
	c = core_new(config_new());
	test_http_check();
	test_session(c);
	core_free(c);
	{
		_cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpdir);
	}
	return tap_end();
}
