/* What the tool files share (mcp/summary.c, mcp/tool-util.c): the sandbox
 * summary object and its schema, argument access, and error hints rewritten for
 * an agent (tool names instead of CLI commands). */
#ifndef SBX_MCP_TOOL_UTIL_H
#define SBX_MCP_TOOL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "core/sandbox.h"
#include "mcp/tool.h"

/* JSON Schema of the sandbox summary (the structuredContent of create, status,
 * suspend, resume, and each item of sandbox_list and sandbox_fork).  Output
 * schemas are whole here (they check every result, and REST's document is
 * made of them); tools/list shows a model only their required fields. */
#define MCP_SUMMARY_PROPS \
	"\"sandbox_id\":{\"type\":\"string\",\"description\":\"Pass it as sandbox_id to every other tool.\"}," \
	"\"name\":{\"type\":\"string\",\"description\":\"Absent when it has none.\"}," \
	"\"backend\":{\"type\":\"string\"}," \
	"\"state\":{\"type\":\"string\",\"enum\":[\"creating\",\"running\",\"suspended\",\"stopping\",\"terminated\",\"error\",\"unreachable\"],\"description\":\"unreachable: its host does not answer now (state_reason says why); it is asked again on every call\"}," \
	"\"host\":{\"type\":\"string\",\"description\":\"The remote host it runs on (ssh backend); absent: this machine.\"}," \
	"\"state_reason\":{\"type\":\"string\",\"description\":\"Why it is in its state, when there is more to say.\"}," \
	"\"created_at\":{\"type\":\"string\",\"format\":\"date-time\",\"description\":\"RFC 3339, UTC.\"}," \
	"\"expires_at\":{\"type\":\"string\",\"format\":\"date-time\",\"description\":\"RFC 3339, UTC: the sandbox destroys itself then; absent: no deadline.\"}," \
	"\"time_left_s\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Seconds until expires_at; absent with it.\"}," \
	"\"network\":{\"type\":\"string\",\"enum\":[\"none\",\"egress\",\"rules\"]}," \
	"\"limits\":{\"type\":\"object\",\"properties\":{" \
		"\"memory_mib\":{\"type\":\"integer\",\"description\":\"0: no limit\"}," \
		"\"cpus\":{\"type\":\"number\",\"description\":\"0: no limit\"}," \
		"\"pids\":{\"type\":\"integer\",\"description\":\"0: no limit\"}," \
		"\"disk_mib\":{\"type\":\"integer\",\"description\":\"What it may write, in MiB; 0: no limit\"}}," \
		"\"required\":[\"memory_mib\",\"cpus\",\"pids\"]}," \
	"\"limits_note\":{\"type\":\"string\",\"description\":\"Limits asked for but not enforced on this host, and why; absent when all are.\"}," \
	"\"owner\":{\"type\":\"string\",\"description\":\"The client that created it, when known.\"}," \
	"\"image\":{\"type\":\"string\",\"description\":\"Absent: the backend's default.\"}," \
	"\"usage\":{\"type\":\"object\",\"description\":\"What it uses now, where its backend can " \
	"tell: cpu_pct, mem_bytes, pids, disk_bytes, net_rx_bytes, net_tx_bytes, oom_kills " \
	"(sandbox_status only).\"}"
#define MCP_SUMMARY_REQUIRED \
	"\"sandbox_id\",\"backend\",\"state\",\"created_at\",\"network\",\"limits\""
#define MCP_SUMMARY_SCHEMA \
	"{\"type\":\"object\",\"properties\":{" MCP_SUMMARY_PROPS "},\"required\":[" \
	MCP_SUMMARY_REQUIRED "]}"

/* The input property every per-sandbox tool takes; gateways may route on the
 * Mcp-Param-Sandbox header a 2026-07-28 client mirrors it into (SEP-2243). */
#define MCP_SANDBOX_ID_PROP \
	"\"sandbox_id\":{\"type\":\"string\",\"x-mcp-header\":\"Sandbox\"}"

/* The summary object of s. */
cJSON *mcp_summary(const struct sandbox *s);
/* A summary (with usage, when it has one) as a model reads it; one_line: its
 * id, name, state, time left and owner only. */
struct mcp_text;
void mcp_render_summary(const cJSON *summary, struct mcp_text *t, int one_line);
/* The render function of a tool whose result is a summary. */
void mcp_render_summary_result(const cJSON *r, struct mcp_text *t);
/* Of a tool whose result lists sandboxes ({sandboxes, vanished?, total?,
 * next_cursor?}), a line each. */
void mcp_render_sandboxes(const cJSON *r, struct mcp_text *t);
/* ms since the epoch as "2025-01-31T12:00:00Z" into buf (at least 32 bytes). */
void mcp_iso8601(int64_t ms, char *buf, size_t len);

/* Arguments (already checked against the input schema by the protocol layer;
 * a wrong type here reads as absent). */
const char *mcp_arg_str(const cJSON *args, const char *name);
int64_t mcp_arg_int(const cJSON *args, const char *name, int64_t def);
double mcp_arg_num(const cJSON *args, const char *name, double def);
int mcp_arg_bool(const cJSON *args, const char *name, int def);
/* The "cursor" argument of a collection's tool as the offset it names (0
 * when absent); -1 with e filled when it is not one this server gave. */
int mcp_arg_cursor(const cJSON *args, int64_t *offset, struct sbx_err *e);
/* A required string: NULL with e filled when missing or empty. */
const char *mcp_arg_need(const cJSON *args, const char *name, struct sbx_err *e);

/* The "exclude" argument as a NULL-terminated array (caller frees the array,
 * not the strings), or NULL when absent (the core's defaults apply). */
const char **mcp_arg_names(const cJSON *args, const char *name);
/* A transfer's progress callback: reports to call, stops when it is cancelled. */
int mcp_xfer_progress(uint64_t done, uint64_t total, const char *what, void *call);
struct core_xfer_result;
/* A transfer's tool result, {path_key: its path, bytes, files, sha256}; res is
 * freed. */
cJSON *mcp_xfer_result(const char *path_key, struct core_xfer_result *res);

/* The origin of execs and events: "console" for the operator's console (by
 * the session's kind), else "mcp:" + the client's name. */
void mcp_origin(struct mcp_call *call, char *buf, size_t len);
/* The client's name, or "mcp" before initialize. */
const char *mcp_client_name(struct mcp_call *call);
/* Whether the caller is an agent, for the limits the operator sets for agents
 * (net_limit, images_allowed): 1 a connection of kind mcp, -1 the operator's
 * (console, cli), 0 unknown (in-process: the core decides by the owner's
 * name).  A client calling itself "console" over MCP is still an agent. */
int mcp_call_agent(struct mcp_call *call);

/* Give e a hint for an agent (e->tool_hint), by its reason: tool names instead
 * of the `sbxtop` commands of e->hint (an unknown sandbox: run sandbox_list;
 * suspended: call sandbox_resume).  A tool_hint the tool set already is kept. */
void mcp_err_fix(struct sbx_err *e);
/* The hint an agent reads: e->tool_hint, else e->hint. */
const char *mcp_err_hint(const struct sbx_err *e);
/* Text for JSON: invalid UTF-8 sequences and NUL bytes become U+FFFD (caller
 * frees). */
char *mcp_utf8_lossy(const char *s, size_t n);

#endif
