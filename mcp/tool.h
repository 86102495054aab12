/* One file per tool (mcp/tool-<name>.c), each exporting a struct mcp_tool listed
 * in mcp_tools[] (mcp/tools.c), as tmux lists its commands. */
#ifndef SBX_MCP_TOOL_H
#define SBX_MCP_TOOL_H

#include <cjson/cJSON.h>

#include "core/core.h"
#include "lib/err.h"

enum {
	MCP_READONLY	= 1 << 0,	/* readOnlyHint */
	MCP_DESTRUCTIVE	= 1 << 1,	/* destructiveHint */
	MCP_IDEMPOTENT	= 1 << 2,	/* idempotentHint */
	MCP_OPENWORLD	= 1 << 3,	/* openWorldHint */
	/* May run as a task (io.modelcontextprotocol/tasks) for a client that
	 * declares the extension: long work a client should poll, not wait on. */
	MCP_TASK	= 1 << 8,
	/* TEST ONLY (fixtures): a 2026-07-28 client must declare the tasks
	 * extension, or sampling, to call it (-32021 otherwise). */
	MCP_NEEDS_TASKS	= 1 << 9,
	MCP_NEEDS_SAMPLING = 1 << 10,
};

/* What a tool run knows about its call. */
struct mcp_call;
struct mcp_text;

struct mcp_tool {
	const char	*name;		/* "sandbox_exec" */
	const char	*title;
	const char	*description;	/* what it does and when to use it */
	const char	*input_schema;	/* JSON Schema text (an object schema) */
	const char	*output_schema;	/* JSON Schema text of structuredContent */
	unsigned	 hints;		/* MCP_* annotations */
	/* Run with validated arguments (args matches input_schema).  On success
	 * *result is the structuredContent object (taken); on failure fill e, whose
	 * message and hint become the isError text. */
	int		(*run)(struct mcp_call *call, const cJSON *args, cJSON **result,
			    struct sbx_err *e);
	/* The text a model reads of result (what run gave), drawn into t, whose
	 * budget it fits (mcp/budget.h); NULL: mcp_render_generic. */
	void		(*render)(const cJSON *result, struct mcp_text *t);
	/* Optional: add to the schema calls are checked against (and the full
	 * one, tools/list with _meta "sbxtop/schemas": "full") what the listing
	 * leaves out for its size; sandbox_create's ranges, from the create's
	 * option table. */
	void		(*input_fill)(cJSON *schema);
};

/* Every tool, NULL-terminated. */
extern const struct mcp_tool *const mcp_tools[];
/* Every tool, or with the fixtures on, a fixture tool too. */
const struct mcp_tool *mcp_tool_find(const char *name);
/* The schema a call's arguments are checked against (parsed once, for the life
 * of the process): the tool's input_schema, which for the tools of mcp_tools
 * leaves additionalProperties out (the instructions say it once for all), with
 * additionalProperties false: an argument it does not name is refused. */
const cJSON *mcp_tool_input_schema(const struct mcp_tool *t);
/* TEST ONLY: the MCP conformance suite's fixture tools (mcp/tool-fixtures.c),
 * NULL-terminated; listed and found only once turned on (sbxtop serve
 * --conformance-fixtures).  on: 1 turns them on, 0 off, -1 asks; returns the
 * state. */
extern const struct mcp_tool *const mcp_fixture_tools[];
int mcp_tools_fixtures(int on);

/* For tools. */
struct core *mcp_call_core(struct mcp_call *call);
/* Who is calling: the client's name from initialize (for owner, origin). */
const char *mcp_call_client(struct mcp_call *call);
/* The session's kind from the core server's hello ("mcp": an agent, "console",
 * "cli"), or NULL for a call the console made in its own process. */
const char *mcp_call_kind(struct mcp_call *call);
/* Report progress when the request had a progressToken (no-op otherwise);
 * message (may be NULL) says what is new since the last one that went out.
 * Safe to call often: rate-limited; 1 when it went out (or was kept: a local
 * call, a task's status), 0 when dropped, so a caller keeps what is new. */
int mcp_call_progress(struct mcp_call *call, double progress, double total,
    const char *message);
/* The call's result budget (mcp/budget.h): the most bytes of text its result
 * may hold; its structuredContent is shaped to the same size.  The request's
 * _meta "sbxtop/budget", else its session's (initialize's _meta, the
 * connection's, the mcp_budget option), else MCP_BUDGET_DEFAULT;
 * MCP_BUDGET_LOCAL for a call made in this process unless set. */
size_t mcp_call_budget(struct mcp_call *call);
/* 1 once the client sent notifications/cancelled for this request or the session
 * ended: stop and return (the result is discarded). */
int mcp_call_cancelled(struct mcp_call *call);
/* The text content of the call's result, for the model to read (taken):
 * instead of the structuredContent object as JSON text. */
void mcp_call_set_text(struct mcp_call *call, char *text);
/* A notifications/message log line at level ("info", "warning", ...). */
void mcp_call_log(struct mcp_call *call, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
