/* Unit tests for the MCP protocol layer: the JSON-RPC reader and writers, the
 * schema validator, every tool's schemas, a session driven in process
 * (initialize, revisions, tools/list, errors) through mcp_serve_stdio on pipes,
 * and the result budget (mcp/budget.c): text that never grows past its budget
 * and says what it cut, the JSON cost of text and the head and tail cuts
 * (escapes, invalid UTF-8), the sharing of a budget, cursors, the generic
 * rendering, the 1 MiB line guard on its own and in a session, and tools/list
 * within 12 KB in every revision.  TAP lines. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/budget.h"
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

/* --- the result budget ---------------------------------------------------- */

static char *
repeat(const char *unit, size_t n)
{
	size_t k = strlen(unit);
	char *s = xmalloc(k * n + 1);

	for (size_t i = 0; i < n; i++)
		memcpy(s + i * k, unit, k);
	s[k * n] = '\0';
	return s;
}

static void
test_text(void)
{
	struct mcp_text t;
	_cleanup_free_ char *big = repeat("abcdefghi\n", 1000);
	char *s;

	mcp_text_init(&t, 2000);
	mcp_text_printf(&t, "status %d\n", 3);
	mcp_text_add(&t, big, strlen(big));
	s = mcp_text_finish(&t);
	check(strlen(s) <= 2000 && strncmp(s, "status 3\nabcdefghi\n", 19) == 0,
	    "text: within its budget, what came first kept (%zu)", strlen(s));
	check(strstr(s, "more did not fit this result's budget of 2,000 bytes") != NULL,
	    "text: says what it cut: %s", strrchr(s, '['));
	free(s);
	/* Never a character cut in two. */
	mcp_text_init(&t, 1000);
	_cleanup_free_ char *e = repeat("\xc3\xa9", 600);
	mcp_text_add(&t, e, strlen(e));
	s = mcp_text_finish(&t);
	check(utf8_valid(s, strlen(s)) && strlen(s) <= 1000, "text: a cut keeps it UTF-8");
	free(s);
	mcp_text_init(&t, 1000);
	mcp_text_add(&t, "fits", 4);
	s = mcp_text_finish(&t);
	check(strcmp(s, "fits") == 0, "text: nothing cut, nothing said");
	free(s);
}

static void
test_numbers(void)
{
	char b[32];

	check(strcmp(mcp_fmt_size(312, b, sizeof b), "312 B") == 0, "size: bytes");
	check(strcmp(mcp_fmt_size(1677722, b, sizeof b), "1.6 MB") == 0, "size: %s", b);
	check(strcmp(mcp_fmt_ms(41234, b, sizeof b), "41.2 s") == 0, "ms: %s", b);
	check(strcmp(mcp_fmt_ms(185000, b, sizeof b), "3 min 5 s") == 0, "ms: %s", b);
	check(strcmp(mcp_fmt_ms(12, b, sizeof b), "12 ms") == 0, "ms: %s", b);
	check(strcmp(mcp_fmt_count(1234567, b, sizeof b), "1,234,567") == 0, "count: %s", b);
	check(strcmp(mcp_fmt_count(12, b, sizeof b), "12") == 0, "count: small");
}

static void
test_cuts(void)
{
	const char *s = "a\"b\n\x01\xff\xc3\xa9";	/* 1 2 1 2 6 3 2 */
	size_t give[3];
	int64_t off;
	char cur[32];

	check(mcp_json_cost(s, strlen(s)) == 17, "cost: escapes, a control, an invalid byte "
	    "(U+FFFD), a character (%zu)", mcp_json_cost(s, strlen(s)));
	_cleanup_free_ char *lines = repeat("0123456789\n", 100);	/* 1100 bytes */
	size_t h = mcp_fit_head(lines, 1100, 300), t = mcp_fit_tail(lines, 1100, 300);
	check(h <= 300 && h > 225 && lines[h - 1] == '\n' &&
	    mcp_json_cost(lines, h) <= 300, "head: within its cost, on a line end (%zu)", h);
	check(1100 - t <= 300 && (t == 0 || lines[t - 1] == '\n') &&
	    mcp_json_cost(lines + t, 1100 - t) <= 300, "tail: within its cost, at a line start "
	    "(%zu)", t);
	check(mcp_fit_head(lines, 1100, 5000) == 1100 && mcp_fit_tail(lines, 1100, 5000) == 0,
	    "head and tail: all of it when it fits");
	_cleanup_free_ char *e = repeat("\xc3\xa9", 100);
	t = mcp_fit_tail(e, 200, 51);
	check((t & 1) == 0 && 200 - t <= 51, "tail: never inside a character (%zu)", t);
	size_t need[3] = { 100, 5000, 9000 };
	mcp_share(need, give, 3, 6000);
	check(give[0] == 100 && give[1] == 2950 && give[2] == 2950,
	    "share: a small need met, the rest even (%zu %zu %zu)", give[0], give[1], give[2]);
	check(mcp_cursor_offset(NULL, &off) == 0 && off == 0 &&
	    mcp_cursor_offset(mcp_cursor_make(180, cur, sizeof cur), &off) == 0 && off == 180,
	    "cursor: made and read back");
	check(mcp_cursor_offset("x1", &off) < 0 && mcp_cursor_offset("-4", &off) < 0,
	    "cursor: refused when not one of ours");
}

static char *
render(const char *json, size_t budget)
{
	cJSON *o = cJSON_Parse(json);
	struct mcp_text t;

	mcp_text_init(&t, budget);
	mcp_render_generic(o, &t);
	cJSON_Delete(o);
	return mcp_text_finish(&t);
}

static void
test_generic(void)
{
	char *s = render("{\"text\":\"Hello, Alice!\"}", 1000);

	check(strcmp(s, "Hello, Alice!") == 0, "generic: a lone string is itself");
	free(s);
	s = render("{\"path\":\"/w/a\",\"size\":12,\"ok\":true,\"n\":null,\"l\":{\"a\":1},"
	    "\"stopped\":[{\"local_port\":1,\"remote_port\":2}],\"tags\":[\"x\",\"y\"]}", 1000);
	check(strcmp(s, "path: /w/a\nsize: 12\nok: true\nl.a: 1\nstopped: 1\n"
	    "- local_port=1, remote_port=2\ntags: x, y") == 0, "generic: a line a member: %s", s);
	free(s);
	_cleanup_free_ char *big = repeat("x", 5000);
	_cleanup_free_ char *j = xasprintf("{\"a\":\"%s\",\"b\":\"%s\"}", big, big);
	s = render(j, 3000);
	check(strlen(s) <= 3000 && strstr(s, "did not fit") != NULL, "generic: within the "
	    "budget, saying what it cut");
	free(s);
}

static void
test_line_cut(void)
{
	_cleanup_free_ char *big = repeat("line of output\n", 100000);	/* 1.5 MB */
	cJSON *r = cJSON_CreateObject(), *c = cJSON_AddArrayToObject(r, "content"), *b, *m;
	char *line, *out;

	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", big);
	cJSON_AddItemToArray(c, b);
	cJSON_AddItemToObject(r, "structuredContent", cJSON_Parse("{\"stdout\":\"...\"}"));
	cJSON_AddBoolToObject(r, "isError", 0);
	cJSON_AddStringToObject(r, "resultType", "complete");
	{
		_cleanup_free_ char *rt = cJSON_PrintUnformatted(r);
		line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":%s}", rt);
	}
	cJSON_Delete(r);
	out = mcp_line_cut(line, strlen(line));
	m = cJSON_Parse(out);
	r = cJSON_GetObjectItem(m, "result");
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(
	    cJSON_GetObjectItem(r, "content"), 0), "text"));
	check(strlen(out) <= MCP_LINE_OUT_MAX && cJSON_GetNumberValue(cJSON_GetObjectItem(m,
	    "id")) == 7 && cJSON_IsTrue(cJSON_GetObjectItem(r, "isError")) &&
	    !cJSON_HasObjectItem(r, "structuredContent") && strcmp(cJSON_GetStringValue(
	    cJSON_GetObjectItem(r, "resultType")), "complete") == 0,
	    "line cut: a tool result becomes an isError result for the same id, its other "
	    "members kept");
	check(t && strncmp(t, "This result was cut: it was 1,6", 31) == 0 &&
	    strstr(t, "bytes, over the 1,048,576 bytes a line may hold") &&
	    strstr(t, "line of output\nline of output\n") &&
	    strlen(t) <= MCP_BUDGET_DEFAULT, "line cut: it says what it cut, then the text's "
	    "start (%.80s)", t ? t : "");
	cJSON_Delete(m);
	free(out);
	free(line);
	/* Another answer: an error for its id. */
	_cleanup_free_ char *xs = repeat("x", MCP_LINE_OUT_MAX);
	line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"result\":{\"contents\":[{\"text\":"
	    "\"%s\"}]}}", xs);
	out = mcp_line_cut(line, strlen(line));
	m = cJSON_Parse(out);
	check(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(m, "id")), "q") == 0 &&
	    cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "error"), "code")) ==
	    -32603 && strstr(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m,
	    "error"), "message")), "over the 1,048,576 bytes a line may hold"), "line cut: another "
	    "answer becomes a -32603 error saying why");
	cJSON_Delete(m);
	free(out);
	free(line);
	line = xasprintf("{\"jsonrpc\":\"2.0\",\"method\":\"sbxtop/event\",\"params\":{\"d\":\"%s\"}}",
	    xs);
	out = mcp_line_cut(line, strlen(line));
	m = cJSON_Parse(out);
	check(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(m, "method")),
	    "notifications/message") == 0 && strstr(cJSON_GetStringValue(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(m, "params"), "data")), "sbxtop/event message of 1,048,") &&
	    strstr(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "params"),
	    "data")), "bytes was not sent"), "line cut: a notification becomes a warning that "
	    "names it");
	cJSON_Delete(m);
	free(out);
	free(line);
}

/* A session whose lines are kept, to check each against the limit. */
struct sink {
	size_t	 n, longest;
	char	*last;
};

static void
sink_send(void *arg, const char *msg, size_t len)
{
	struct sink *k = arg;

	k->n++;
	if (len > k->longest)
		k->longest = len;
	free(k->last);
	k->last = xstrndup(msg, len);
}

static void
test_session_guard(struct core *c)
{
	struct sink k = { 0 };
	struct mcp_session *s = mcp_session_new(c, "unit", sink_send, &k);
	_cleanup_free_ char *big = repeat("0123456789", 300000);
	cJSON *r = cJSON_CreateObject(), *b = cJSON_CreateObject(), *id = cJSON_CreateNumber(9);

	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", big);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "content"), b);
	mcp_session_reply(s, id, r);
	check(k.n == 1 && k.longest <= MCP_LINE_OUT_MAX && strstr(k.last, "This result was cut"),
	    "session: a 3 MB answer goes out cut, under 1 MiB (%zu bytes)", k.longest);
	cJSON_Delete(id);

	/* tools/list in every revision: 12 KB of JSON at most. */
	static const char *const revs[] = { "2024-11-05", "2025-03-26", "2025-06-18",
		"2025-11-25" };
	for (size_t i = 0; i < ARRAY_SIZE(revs); i++) {
		struct sink l = { 0 };
		struct mcp_session *ls = mcp_session_new(c, "unit", sink_send, &l);
		_cleanup_free_ char *init = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
		    "\"initialize\",\"params\":{\"protocolVersion\":\"%s\",\"capabilities\":{},"
		    "\"clientInfo\":{\"name\":\"unit\",\"version\":\"1\"}}}", revs[i]);
		const char *list = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}";
		mcp_session_input(ls, init, strlen(init));
		mcp_session_input(ls, list, strlen(list));
		cJSON *m = cJSON_Parse(l.last);
		size_t n = mcp_json_size(cJSON_GetObjectItem(m, "result"));
		check(n <= 12 * 1024 && cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(m,
		    "result"), "tools")) >= 20, "tools/list %s: %zu bytes, at most 12 KB", revs[i], n);
		cJSON_Delete(m);
		free(l.last);
		mcp_session_close(ls);
	}
	{
		struct sink l = { 0 };
		struct mcp_session *ls = mcp_session_new(c, "unit", sink_send, &l);
		const char *list = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":"
		    "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
		    "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
		mcp_session_input(ls, list, strlen(list));
		cJSON *m = cJSON_Parse(l.last);
		size_t n = mcp_json_size(cJSON_GetObjectItem(m, "result"));
		check(n <= 12 * 1024, "tools/list 2026-07-28: %zu bytes, at most 12 KB", n);
		cJSON_Delete(m);
		free(l.last);
		mcp_session_close(ls);
	}
	free(k.last);
	mcp_session_close(s);
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
	test_text();
	test_numbers();
	test_cuts();
	test_generic();
	test_line_cut();
	test_session_guard(c);
	core_free(c);
	{
		_cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpdir);
	}
	return tap_end();
}
