/* Fuzz target: the result budget's cuts and renderings (mcp/budget.c), over
 * bytes a command or a sandbox chose.  The head and the tail of any bytes cost
 * at most what they were given and never start or end inside a character;
 * text built within a budget never exceeds it and stays UTF-8; a JSON value
 * drawn generically stays within its budget; a line cut by the guard is JSON
 * that fits the line limit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/utf8.h"
#include "mcp/budget.h"

static void
check_cuts(const char *s, size_t n, size_t max)
{
	size_t h = mcp_fit_head(s, n, max), t = mcp_fit_tail(s, n, max);

	if (h > n || mcp_json_cost(s, h) > max || t > n || mcp_json_cost(s + t, n - t) > max)
		abort();
	/* A cut never splits a valid character: a valid text's pieces are valid. */
	if (utf8_valid(s, n) && memchr(s, '\0', n) == NULL &&
	    (!utf8_valid(s, h) || !utf8_valid(s + t, n - t)))
		abort();
	if (mcp_json_cost(s, n) <= max && (h != n || t != 0))
		abort();		/* what fits is taken whole */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	size_t max = size > 0 ? data[0] * 7u : 0;
	struct mcp_text t;
	char *out;
	cJSON *v;

	check_cuts(s, size, max);
	check_cuts(s, size, size / 2);
	/* Text within a budget, whatever is added. */
	mcp_text_init(&t, 2000);
	for (size_t i = 0; i + 1 < size; i += 97) {
		size_t k = utf8_complete_prefix(s + i, size - i < 97 ? size - i : 97);
		if (utf8_valid(s + i, k))
			mcp_text_add(&t, s + i, k);
	}
	out = mcp_text_finish(&t);
	if (strlen(out) > 2000 || !utf8_valid(out, strlen(out)))
		abort();
	free(out);
	/* Any JSON value, drawn generically. */
	if ((v = cJSON_ParseWithLength(s, size)) != NULL) {
		mcp_text_init(&t, MCP_BUDGET_MIN);
		mcp_render_generic(v, &t);
		out = mcp_text_finish(&t);
		if (strlen(out) > MCP_BUDGET_MIN)
			abort();
		free(out);
		cJSON_Delete(v);
	}
	/* The line guard on any line. */
	if ((out = mcp_line_cut(s, size)) != NULL) {
		cJSON *m = cJSON_Parse(out);
		if (m == NULL || strlen(out) > MCP_LINE_OUT_MAX)
			abort();
		cJSON_Delete(m);
		free(out);
	}
	return 0;
}
