/* What a model reads (DESIGN.md section 14): every tool result within a budget.
 *
 * A call has a budget (mcp_call_budget, tool.h): the most bytes of UTF-8 the
 * text of its result may hold, which is never fewer than the characters a
 * client counts.  A tool shapes its structuredContent to the same size (a head
 * and a tail of long output, a page of a collection with its total and a
 * cursor) and draws the text from it with its render function, into a
 * struct mcp_text that never grows past the budget and says what it cut.  The
 * session (server.c) is the last guard: a text over the budget is cut with a
 * note, and no JSON-RPC line it writes is over MCP_LINE_OUT_MAX. */
#ifndef SBX_MCP_BUDGET_H
#define SBX_MCP_BUDGET_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "lib/buf.h"

#define MCP_BUDGET_DEFAULT	20000
#define MCP_BUDGET_MIN		2000
#define MCP_BUDGET_MAX		200000
/* A call made in this process (REST, the console's own core): programs, whose
 * answers are not JSON-RPC lines. */
#define MCP_BUDGET_LOCAL	(1u << 20)
/* The _meta key of initialize and of a tools/call that sets the budget. */
#define MCP_BUDGET_META		"sbxtop/budget"
/* No JSON-RPC line a session writes is longer. */
#define MCP_LINE_OUT_MAX	(1u << 20)

/* Text for a model, built within a budget. */
struct mcp_text {
	struct buf	 b;
	size_t		 max;		/* what the content may use */
	size_t		 budget;
	uint64_t	 cut;		/* bytes that did not fit */
};

void mcp_text_init(struct mcp_text *t, size_t budget);
void mcp_text_free(struct mcp_text *t);
/* Append n bytes of s (valid UTF-8), as much as fits, cut on a character
 * boundary; what does not fit is counted as cut. */
void mcp_text_add(struct mcp_text *t, const char *s, size_t n);
void mcp_text_printf(struct mcp_text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Bytes still free. */
size_t mcp_text_room(const struct mcp_text *t);
/* The text (caller frees; t is left empty), ending with a line that says how
 * much was cut when anything was. */
char *mcp_text_finish(struct mcp_text *t);

/* Numbers as a model reads them: "1.6 MB", "12.0 KB", "312 B"; "41 s", "0.3 s",
 * "3 min 5 s", "2 h 59 min"; "1,234,567".  Each returns buf. */
char *mcp_fmt_size(uint64_t bytes, char *buf, size_t len);
char *mcp_fmt_ms(int64_t ms, char *buf, size_t len);
char *mcp_fmt_count(uint64_t n, char *buf, size_t len);

/* What n bytes of valid UTF-8 cost inside a JSON string, escapes counted: an
 * upper bound of the characters a model reads of them. */
size_t mcp_json_cost(const char *s, size_t n);
/* The serialized size of v. */
size_t mcp_json_size(const cJSON *v);
/* The longest head of s (n bytes of valid UTF-8) costing at most max: its
 * length, ending after a newline when one falls in its last quarter. */
size_t mcp_fit_head(const char *s, size_t n, size_t max);
/* The longest tail of s costing at most max: the offset it starts at, just
 * after a newline when one falls in its first quarter. */
size_t mcp_fit_tail(const char *s, size_t n, size_t max);
/* Share budget among n parts that need need[i]: a part that needs less than
 * an even share gets its need, the others share the rest evenly. */
void mcp_share(const size_t *need, size_t *give, size_t n, size_t budget);

/* A collection's page: cursor (NULL: the first page) as the offset it names;
 * -1 when it is not a cursor this server gave. */
int mcp_cursor_offset(const char *cursor, int64_t *offset);
/* The cursor of the page at offset, into buf. */
const char *mcp_cursor_make(int64_t offset, char *buf, size_t len);

/* Where a page of a collection stands, after its total: "; 181 to 360 below;
 * the next page: cursor \"360\"" (the page of n entries from off; next: its
 * next_cursor, NULL on the last). */
void mcp_text_page(struct mcp_text *t, uint64_t off, size_t n, const char *next);

/* The rendering of a result without a render function of its own: an object
 * whose one member is a string is that string; anything else is its members,
 * one "key: value" line each (an array of objects one line per item), all
 * within t's budget. */
void mcp_render_generic(const cJSON *result, struct mcp_text *t);

/* A message (len bytes) over MCP_LINE_OUT_MAX, as what goes out instead
 * (caller frees), or NULL when nothing can: a tool result becomes an isError
 * result with the start of its text and what was cut, another answer a
 * -32603 error saying so, a notification a notifications/message warning. */
char *mcp_line_cut(const char *text, size_t len);

#endif
