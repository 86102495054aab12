/* Unit tests for the MCP protocol layer: the JSON-RPC reader and writers, the
 * schema validator, every tool's schemas, and a session driven in process
 * (initialize, revisions, tools/list, errors) through mcp_serve_stdio on pipes.
 * TAP lines. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "lib/util.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "mcp/schema.h"
#include "mcp/tool.h"


static int
parse_code(const char *text)
{
	struct jsonrpc_msg m;
	struct jsonrpc_fault f;

	if (jsonrpc_parse(text, strlen(text), &m, &f) < 0) {
		cJSON_Delete(f.id);
		return f.code;
	}
	jsonrpc_msg_free(&m);
	return 0;
}

static void
test_jsonrpc(void)
{
	struct jsonrpc_msg m;
	struct jsonrpc_fault f;
	const char *req = "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\",\"params\":{}}";
	char *t;

	check(jsonrpc_parse(req, strlen(req), &m, &f) == 0 && m.kind == JSONRPC_REQUEST &&
	    strcmp(m.method, "ping") == 0 && cJSON_IsString(m.id) && f.id == NULL,
	    "a request parses");
	jsonrpc_msg_free(&m);
	check(parse_code("{\"jsonrpc\":\"2.0\",\"method\":\"n\"}") == 0, "a notification parses");
	check(parse_code("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}") == 0, "a response parses");
	check(parse_code("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":1}}") == 0,
	    "an error response with a null id parses");
	check(parse_code("{") == JSONRPC_PARSE_ERROR, "truncated JSON: -32700");
	check(parse_code("{} {}") == JSONRPC_PARSE_ERROR, "two values on a line: -32700");
	check(parse_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc3\x28\"}") ==
	    JSONRPC_PARSE_ERROR, "invalid UTF-8: -32700");
	check(parse_code("[]") == JSONRPC_INVALID_REQUEST, "a batch: -32600");
	check(parse_code("{\"id\":1,\"method\":\"x\"}") == JSONRPC_INVALID_REQUEST,
	    "no jsonrpc member: -32600");
	check(parse_code("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"x\"}") ==
	    JSONRPC_INVALID_REQUEST, "a boolean id: -32600");
	check(parse_code("{\"jsonrpc\":\"2.0\",\"id\":1e300,\"method\":\"x\"}") ==
	    JSONRPC_INVALID_REQUEST, "an id beyond 2^53: -32600");
	check(parse_code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1]}") ==
	    JSONRPC_INVALID_PARAMS, "array params: -32602");
	check(parse_code("{\"jsonrpc\":\"2.0\",\"id\":1}") == JSONRPC_INVALID_REQUEST,
	    "neither request nor response: -32600");

	cJSON *id = cJSON_CreateNumber(42);
	t = jsonrpc_error(id, JSONRPC_METHOD_NOT_FOUND, "no \"such\"\n", NULL);
	check(strcmp(t, "{\"jsonrpc\":\"2.0\",\"id\":42,\"error\":{\"code\":-32601,"
	    "\"message\":\"no \\\"such\\\"\\n\"}}") == 0, "an error response: %s", t);
	free(t);
	t = jsonrpc_result(NULL, NULL);
	check(strcmp(t, "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}") == 0,
	    "a result with a null id: %s", t);
	free(t);
	cJSON *b = cJSON_CreateString("42");
	check(!jsonrpc_id_equal(id, b), "id 42 is not id \"42\"");
	cJSON_Delete(b);
	cJSON_Delete(id);
}

static const char schema_text[] = "{\"type\":\"object\",\"properties\":{"
	"\"sandbox_id\":{\"type\":\"string\",\"minLength\":1},"
	"\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3600},"
	"\"cpus\":{\"type\":\"number\",\"minimum\":0.1,\"maximum\":64},"
	"\"network\":{\"type\":\"string\",\"enum\":[\"none\",\"egress\"]},"
	"\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
	"\"exclude\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	"\"as_root\":{\"type\":\"boolean\"}},"
	"\"required\":[\"sandbox_id\"],\"additionalProperties\":false}";

static const char *
schema_msg(const cJSON *schema, const char *value)
{
	static char msg[256];
	cJSON *v = cJSON_Parse(value);

	if (schema_check(schema, v, msg, sizeof msg) == 0)
		snprintf(msg, sizeof msg, "valid");
	cJSON_Delete(v);
	return msg;
}

static void
test_schema(void)
{
	cJSON *s = cJSON_Parse(schema_text);
	static const struct { const char *value, *want; } cases[] = {
		{ "{\"sandbox_id\":\"s\"}", "valid" },
		{ "{\"sandbox_id\":\"s\",\"timeout_s\":5,\"cpus\":0.5,\"network\":\"none\","
		  "\"env\":{\"A\":\"b\"},\"exclude\":[\"x\"],\"as_root\":true}", "valid" },
		{ "{}", "sandbox_id: required" },
		{ "{\"sandbox_id\":5}", "sandbox_id: expected string, got integer" },
		{ "{\"sandbox_id\":\"\"}", "sandbox_id: too short: expected at least 1 character" },
		{ "{\"sandbox_id\":\"s\",\"timeout_s\":1.5}",
		  "timeout_s: expected integer, got number" },
		{ "{\"sandbox_id\":\"s\",\"timeout_s\":0}",
		  "timeout_s: out of range: expected 1 to 3600" },
		{ "{\"sandbox_id\":\"s\",\"cpus\":\"2\"}", "cpus: expected number, got string" },
		{ "{\"sandbox_id\":\"s\",\"network\":\"all\"}",
		  "network: expected one of \"none\", \"egress\"" },
		{ "{\"sandbox_id\":\"s\",\"env\":{\"A\":1}}", "env.A: expected string, got integer" },
		{ "{\"sandbox_id\":\"s\",\"exclude\":[\"a\",null]}",
		  "exclude[1]: expected string, got null" },
		{ "{\"sandbox_id\":\"s\",\"as_root\":\"yes\"}", "as_root: expected boolean, got string" },
		{ "{\"sandbox_id\":\"s\",\"extra\":1}", "extra: unknown field" },
		{ "[]", "arguments: expected object, got array" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *got = schema_msg(s, cases[i].value);
		check(strcmp(got, cases[i].want) == 0, "schema: %s -> %s", cases[i].value, got);
	}
	cJSON_Delete(s);
}

/* Every tool in the table: a name, a title, a description, and schemas that
 * parse as object schemas whose required fields are properties. */
static void
test_tools(void)
{
	size_t n = 0;

	for (; mcp_tools[n] != NULL; n++) {
		const struct mcp_tool *t = mcp_tools[n];
		cJSON *in = cJSON_Parse(t->input_schema);
		cJSON *out = t->output_schema ? cJSON_Parse(t->output_schema) : NULL;
		const cJSON *r, *props = cJSON_GetObjectItem(in, "properties");
		int req_ok = 1;

		cJSON_ArrayForEach(r, cJSON_GetObjectItem(in, "required"))
			req_ok &= cJSON_IsString(r) && cJSON_GetObjectItem(props, r->valuestring) != NULL;
		check(strncmp(t->name, "sandbox_", 8) == 0 && t->title && t->description &&
		    t->run && mcp_tool_find(t->name) == t, "tool %s: named, titled, described",
		    t->name);
		check(cJSON_IsObject(in) && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(in,
		    "type")), "object") == 0 && req_ok, "tool %s: input schema", t->name);
		check(cJSON_IsObject(out) && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(out,
		    "type")), "object") == 0, "tool %s: output schema", t->name);
		cJSON_Delete(in);
		cJSON_Delete(out);
	}
	check(n >= 2 && mcp_tool_find("sandbox_nope") == NULL, "%zu tools; unknown names "
	    "are not found", n);
}

/* A session on pipes, in process: write lines, read the answers. */
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

static cJSON *
ask(struct pipes *p, const char *line)
{
	char buf[1 << 16];

	if (line != NULL && (write_all(p->in[1], line, strlen(line)) < 0 ||
	    write_all(p->in[1], "\n", 1) < 0))
		return NULL;
	if (fgets(buf, sizeof buf, p->rd) == NULL)
		return NULL;
	return cJSON_Parse(buf);
}

static int
error_code(const cJSON *o)
{
	return (int)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "error"),
	    "code"));
}

/* The activity journal: the tool events, kept for inspection. */
static cJSON *journal;

static void
on_event(const struct core_event *ev, void *arg)
{
	if (strncmp(ev->type, "tool.", 5) != 0)
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", ev->type);
	cJSON_AddItemToObject(o, "data", cJSON_Duplicate(ev->data, 1));
	cJSON_AddItemToArray(journal, o);
}

static void
test_session(struct core *c)
{
	struct pipes p = { .core = c };
	cJSON *o;
	const cJSON *tools;
	int sub;

	journal = cJSON_CreateArray();
	sub = core_events_subscribe(c, on_event, NULL);
	if (pipe(p.in) < 0 || pipe(p.out) < 0 || (p.rd = fdopen(p.out[0], "r")) == NULL)
		fatal("pipe");
	pthread_create(&p.th, NULL, serve, &p);

	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	check(error_code(o) == JSONRPC_INVALID_REQUEST, "tools/list before initialize: -32600");
	cJSON_Delete(o);
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
	check(cJSON_IsObject(cJSON_GetObjectItem(o, "result")), "ping before initialize");
	cJSON_Delete(o);
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{"
	    "\"protocolVersion\":\"2024-11-05\",\"capabilities\":{},\"clientInfo\":"
	    "{\"name\":\"unit\",\"version\":\"9\"}}}");
	check(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "result"),
	    "protocolVersion")), "2024-11-05") == 0, "initialize 2024-11-05");
	cJSON_Delete(o);
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}");
	tools = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "result"), "tools");
	check(cJSON_GetArraySize(tools) >= 2 && !cJSON_HasObjectItem(tools->child,
	    "outputSchema") && !cJSON_HasObjectItem(tools->child, "annotations") &&
	    cJSON_HasObjectItem(tools->child, "inputSchema"),
	    "2024-11-05 tools/list: inputSchema, no outputSchema or annotations");
	cJSON_Delete(o);
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"nope\"}");
	check(error_code(o) == JSONRPC_METHOD_NOT_FOUND, "unknown method: -32601");
	cJSON_Delete(o);
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"sandbox_teleport\"}}");
	check(error_code(o) == JSONRPC_INVALID_PARAMS && strstr(cJSON_GetStringValue(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(o, "error"), "message")), "tools/list"),
	    "unknown tool: -32602 naming tools/list");
	cJSON_Delete(o);
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"sandbox_exec\",\"arguments\":{\"sandbox_id\":1,\"command\":\"x\","
	    "\"stdin\":\"hunter2\"}}}");
	const cJSON *r = cJSON_GetObjectItem(o, "result");
	const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(
	    cJSON_GetObjectItem(r, "content"), 0), "text"));
	check(cJSON_IsTrue(cJSON_GetObjectItem(r, "isError")) && text && strstr(text,
	    "sandbox_id: expected string, got integer") && !cJSON_HasObjectItem(r,
	    "structuredContent"), "wrong argument type: isError naming it");
	cJSON_Delete(o);
	o = ask(&p, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"");
	check(error_code(o) == JSONRPC_PARSE_ERROR && cJSON_IsNull(cJSON_GetObjectItem(o,
	    "id")), "a broken line: -32700 with a null id");
	cJSON_Delete(o);

	close(p.in[1]);
	check(ask(&p, NULL) == NULL, "nothing more after stdin closes");
	pthread_join(p.th, NULL);
	check(p.rc == 0, "mcp_serve_stdio returns 0 when its input closes");
	fclose(p.rd);
	close(p.in[0]);

	core_events_unsubscribe(c, sub);
	const cJSON *st = cJSON_GetObjectItem(cJSON_GetArrayItem(journal, 0), "data");
	const cJSON *fin = cJSON_GetObjectItem(cJSON_GetArrayItem(journal, 1), "data");
	const cJSON *args = cJSON_GetObjectItem(st, "arguments");
	check(cJSON_GetArraySize(journal) == 2 && strcmp(cJSON_GetStringValue(
	    cJSON_GetObjectItem(cJSON_GetArrayItem(journal, 0), "type")), "tool.started") == 0 &&
	    strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(st, "tool")), "sandbox_exec") == 0 &&
	    strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(st, "client")), "unit 9") == 0,
	    "the journal has tool.started for the call, with the client");
	check(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(args, "stdin")), "<7 bytes>") == 0 &&
	    strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(args, "command")), "x") == 0,
	    "tool.started keeps arguments, but stdin only as its size");
	check(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(fin, "outcome")), "error") == 0 &&
	    strstr(cJSON_GetStringValue(cJSON_GetObjectItem(fin, "message")), "sandbox_id") &&
	    cJSON_IsNumber(cJSON_GetObjectItem(fin, "duration_ms")),
	    "tool.finished: outcome, message, duration");
	cJSON_Delete(journal);
}

int
main(void)
{
	char tmpdir[] = "/tmp/sbxmcp.XXXXXX";
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
	test_jsonrpc();
	test_schema();
	test_tools();
	test_session(c);
	core_free(c);
	{
		_cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpdir);
	}
	return tap_end();
}
