/* JSON-RPC 2.0 messages as MCP uses them: one object per message (no batches),
 * ids that are strings or integers, params that are objects.  Reading is strict
 * and never trusts the input; writing gives the text of one message. */
#ifndef SBX_MCP_JSONRPC_H
#define SBX_MCP_JSONRPC_H

#include <stddef.h>
#include <cjson/cJSON.h>

enum {
	JSONRPC_PARSE_ERROR	 = -32700,
	JSONRPC_INVALID_REQUEST	 = -32600,
	JSONRPC_METHOD_NOT_FOUND = -32601,
	JSONRPC_INVALID_PARAMS	 = -32602,
	JSONRPC_INTERNAL_ERROR	 = -32603,
	/* Implementation-defined server errors (-32000 to -32099). */
	JSONRPC_SERVER_BUSY	 = -32000,
	/* MCP's code for resources/read of an unknown URI (so requests before
	 * initialize get -32600 with a message, not -32002 as in LSP). */
	MCP_RESOURCE_NOT_FOUND	 = -32002,
	/* The codes MCP 2026-07-28 defines (its reserved -32020 to -32099). */
	MCP_HEADER_MISMATCH	 = -32020,
	MCP_MISSING_CAPABILITY	 = -32021,
	MCP_UNSUPPORTED_VERSION	 = -32022,
};

enum jsonrpc_kind { JSONRPC_REQUEST, JSONRPC_NOTIFICATION, JSONRPC_RESPONSE };

struct jsonrpc_msg {
	enum jsonrpc_kind kind;
	cJSON		*root;		/* owns everything below */
	const cJSON	*id;		/* requests and responses: a string or an integer */
	const char	*method;	/* requests and notifications */
	const cJSON	*params;	/* an object, or NULL when absent */
};

struct jsonrpc_fault {
	int	 code;
	char	 message[160];
	cJSON	*id;	/* the id to answer with when one could be read, else NULL */
};

/* Parse and validate one message of len bytes (need not be NUL-terminated).
 * 0 with m filled (free with jsonrpc_msg_free); -1 with f filled (free f->id),
 * the error to send back unless the message was a notification. */
int jsonrpc_parse(const char *text, size_t len, struct jsonrpc_msg *m,
    struct jsonrpc_fault *f);
void jsonrpc_msg_free(struct jsonrpc_msg *m);

/* 1 when a and b are the same id (both strings or both integers, equal). */
int jsonrpc_id_equal(const cJSON *a, const cJSON *b);

/* The text of a response with result (taken; NULL means {}). */
char *jsonrpc_result(const cJSON *id, cJSON *result);
/* The text of an error response; id NULL answers with null; data (taken) may be
 * NULL. */
char *jsonrpc_error(const cJSON *id, int code, const char *message, cJSON *data);
/* The text of a notification; params (taken) may be NULL. */
char *jsonrpc_notification(const char *method, cJSON *params);

#endif
