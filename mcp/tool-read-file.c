/* sandbox_read_file: a page of a file of the sandbox (offset, length) within the
 * call's budget, with the file's size and where the next page starts; a binary
 * file is said to be one, its bytes given (base64) only when asked for. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/b64.h"
#include "lib/jspec.h"
#include "lib/util.h"
#include "mcp/budget.h"
#include "mcp/tool-util.h"

#define STATUS_ROOM	600	/* of the budget: the line before the content */
#define PEEK		16	/* bytes of a binary file shown in hex */

/* What a binary file's first bytes say it is, or NULL. */
static const char *
kind_of(const unsigned char *p, size_t n)
{
	static const struct {
		size_t		 off, len;
		const char	*magic, *what;
	} magics[] = {
		{ 0, 4, "\x7f" "ELF", "an ELF executable or library" },
		{ 0, 8, "\x89PNG\r\n\x1a\n", "a PNG image" },
		{ 0, 3, "\xff\xd8\xff", "a JPEG image" },
		{ 0, 4, "GIF8", "a GIF image" },
		{ 0, 4, "%PDF", "a PDF document" },
		{ 0, 2, "\x1f\x8b", "gzip data" },
		{ 0, 4, "PK\x03\x04", "a zip archive (or a jar, docx, xlsx)" },
		{ 0, 4, "\x28\xb5\x2f\xfd", "zstd data" },
		{ 0, 6, "\xfd" "7zXZ\0", "xz data" },
		{ 0, 3, "BZh", "bzip2 data" },
		{ 0, 16, "SQLite format 3\0", "an SQLite database" },
		{ 0, 4, "\0asm", "a WebAssembly module" },
		{ 0, 4, "\xca\xfe\xba\xbe", "a Java class (or a Mach-O universal binary)" },
		{ 257, 5, "ustar", "a tar archive" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(magics); i++)
		if (n >= magics[i].off + magics[i].len &&
		    memcmp(p + magics[i].off, magics[i].magic, magics[i].len) == 0)
			return magics[i].what;
	return NULL;
}

/* A failed read's hint for the agent, by its reason. */
static void
read_hint(struct sbx_err *e)
{
	if (e->reason == SBX_R_IS_DIR)
		snprintf(e->tool_hint, sizeof e->tool_hint, "use sandbox_list_files for "
		    "directories");
	else if (e->reason == SBX_R_NOT_FOUND)
		snprintf(e->tool_hint, sizeof e->tool_hint, "relative paths start at "
		    "/workspace; sandbox_list_files shows what is there");
	else if (e->reason == SBX_R_NOT_TEXT)
		snprintf(e->tool_hint, sizeof e->tool_hint, "it is binary: leave out "
		    "encoding to be told what it is, or ask for \"base64\"");
	mcp_err_fix(e);
}

/* A binary file not asked for as such (content: its page in base64 from
 * offset off, of size bytes in all): what it is and its first bytes, not
 * its bytes, into result. */
static void
binary_summary(cJSON *result, const char *content, double off, double size)
{
	size_t n = 0;
	_cleanup_free_ unsigned char *raw = b64_decode(content, strlen(content), &n);
	const char *what = raw ? kind_of(raw, n) : NULL;
	char hex[PEEK * 3 + 1] = "";

	for (size_t i = 0, k = 0; raw && i < n && i < PEEK; i++)
		k += (size_t)snprintf(hex + k, sizeof hex - k, "%s%02x", i ? " " : "", raw[i]);
	cJSON_AddBoolToObject(result, "binary", 1);
	if (what != NULL)
		cJSON_AddStringToObject(result, "kind", what);
	cJSON_AddStringToObject(result, "first_bytes", hex);
	cJSON_AddStringToObject(result, "content", "");
	cJSON_AddStringToObject(result, "encoding", "base64");
	cJSON_AddNumberToObject(result, "offset", off);
	cJSON_AddNumberToObject(result, "length", 0);
	cJSON_AddBoolToObject(result, "truncated", size > off);
}

static int
run(struct mcp_call *call, const cJSON *args, cJSON **result, struct sbx_err *e)
{
	const char *id = mcp_arg_need(args, "sandbox_id", e), *path, *enc;
	size_t budget = mcp_call_budget(call);
	size_t room = budget > 2 * STATUS_ROOM ? budget - STATUS_ROOM : budget / 2;
	int64_t offset = mcp_arg_int(args, "offset", 0);
	int64_t length = mcp_arg_int(args, "length", (int64_t)room);
	char origin[96];
	cJSON *req, *ans = NULL;
	const char *content, *got_enc;
	double size, got_off, got_len;
	int rc, more;

	if (id == NULL || (path = mcp_arg_need(args, "path", e)) == NULL)
		return -1;
	enc = mcp_arg_str(args, "encoding");
	/* Bytes that fit: text costs at least a byte a byte, base64 4 for 3. */
	if (enc != NULL && strcmp(enc, "base64") == 0)
		room = room / 4 * 3;
	if ((size_t)length > room)
		length = (int64_t)room;
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "path", path);
	if (enc != NULL)
		cJSON_AddStringToObject(req, "encoding", enc);
	cJSON_AddNumberToObject(req, "max_bytes", (double)length);
	if (offset > 0)		/* an older agent knows no offset: 0 works with it */
		cJSON_AddNumberToObject(req, "offset", (double)offset);
	mcp_origin(call, origin, sizeof origin);
	rc = core_files(mcp_call_core(call), id, "read", req, origin, &ans, e);
	cJSON_Delete(req);
	if (rc < 0) {
		read_hint(e);
		return -1;
	}
	content = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "content"));
	got_enc = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "encoding"));
	size = cJSON_GetNumberValue(cJSON_GetObjectItem(ans, "size"));
	got_off = cJSON_GetNumberValue(cJSON_GetObjectItem(ans, "offset"));
	got_len = cJSON_GetNumberValue(cJSON_GetObjectItem(ans, "length"));
	more = cJSON_IsTrue(cJSON_GetObjectItem(ans, "truncated"));
	if (content == NULL)
		content = "";
	if (isnan(got_off))		/* an older agent: no offset or length */
		got_off = (double)offset;
	*result = cJSON_CreateObject();
	cJSON_AddItemToObject(*result, "path", cJSON_DetachItemFromObject(ans, "path"));
	cJSON_AddNumberToObject(*result, "size", size);
	if (got_enc != NULL && strcmp(got_enc, "base64") == 0 && enc == NULL) {
		binary_summary(*result, content, got_off, size);
		cJSON_Delete(ans);
		return 0;
	}
	if (got_enc != NULL && strcmp(got_enc, "utf-8") == 0) {
		/* Escapes make text cost more than its bytes: keep what fits. */
		size_t n = strlen(content), k = mcp_fit_head(content, n, room);
		if (k < n) {
			_cleanup_free_ char *c = xstrndup(content, k);
			cJSON_AddStringToObject(*result, "content", c);
			got_len = (double)k;
			more = 1;
		} else {
			cJSON_AddStringToObject(*result, "content", content);
		}
		if (isnan(got_len))
			got_len = (double)strlen(content);
	} else {
		cJSON_AddStringToObject(*result, "content", content);
		if (isnan(got_len)) {
			size_t n = 0;
			free(b64_decode(content, strlen(content), &n));
			got_len = (double)n;
		}
	}
	cJSON_AddStringToObject(*result, "encoding", got_enc ? got_enc : "utf-8");
	cJSON_AddNumberToObject(*result, "offset", got_off);
	cJSON_AddNumberToObject(*result, "length", got_len);
	cJSON_AddBoolToObject(*result, "truncated", more);
	if (more)
		cJSON_AddNumberToObject(*result, "next_offset", got_off + got_len);
	cJSON_Delete(ans);
	return 0;
}

static void
render(const cJSON *r, struct mcp_text *t)
{
	const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(r, "path"));
	const char *content = cJSON_GetStringValue(cJSON_GetObjectItem(r, "content"));
	const char *enc = cJSON_GetStringValue(cJSON_GetObjectItem(r, "encoding"));
	const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(r, "kind"));
	double size = jnum(r, "size", NAN), off = jnum(r, "offset", NAN), len = jnum(r, "length", NAN);
	char a[32], b[32], c[32];

	mcp_text_printf(t, "%s: %s bytes", path, mcp_fmt_count((uint64_t)size, a, sizeof a));
	if (cJSON_IsTrue(cJSON_GetObjectItem(r, "binary"))) {
		mcp_text_printf(t, ", binary%s%s%s, not shown as text. Its first bytes: %s.\n"
		    "For its bytes, ask again with encoding \"base64\" (offset and length page "
		    "through it); to see what it is, sandbox_exec file or od.", kind ? " (" : "",
		    kind ? kind : "", kind ? ")" : "",
		    cJSON_GetStringValue(cJSON_GetObjectItem(r, "first_bytes")));
		return;
	}
	if (size == 0 && len == 0) {
		mcp_text_add(t, ", empty", 7);
		return;
	}
	if (off == 0 && !cJSON_IsTrue(cJSON_GetObjectItem(r, "truncated")))
		mcp_text_add(t, strcmp(enc, "base64") == 0 ? ", all below in base64\n" :
		    ", all below\n", strcmp(enc, "base64") == 0 ? 22 : 12);
	else {
		mcp_text_printf(t, "; bytes %s to %s below%s", mcp_fmt_count((uint64_t)off, a,
		    sizeof a), mcp_fmt_count((uint64_t)(off + len), b, sizeof b),
		    strcmp(enc, "base64") == 0 ? " in base64" : "");
		if (cJSON_IsTrue(cJSON_GetObjectItem(r, "truncated")))
			mcp_text_printf(t, "; the next page: offset %s",
			    mcp_cursor_make((int64_t)(off + len), c, sizeof c));
		mcp_text_add(t, "\n", 1);
	}
	mcp_text_add(t, content ? content : "", content ? strlen(content) : 0);
}

const struct mcp_tool mcp_tool_read_file = {
	.name = "sandbox_read_file",
	.title = "Read a file",
	.description =
	    "Read a file a page at a time (offset, length); a binary one "
	    "is said to be, encoding \"base64\" gives its bytes.",
	.input_schema =
	    "{\"type\":\"object\",\"properties\":{" MCP_SANDBOX_ID_PROP
	    ",\"path\":{\"type\":\"string\"},\"offset\":{\"type\":\"integer\"},"
	    "\"length\":{\"type\":\"integer\",\"minimum\":1},\"encoding\":{\"en"
	    "um\":[\"utf-8\",\"base64\"]}},\"required\":[\"sandbox_id\","
	    "\"path\"]}",
	.output_schema =
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\""
	    "},\"content\":{\"type\":\"string\",\"description\":\"Empty "
	    "for a binary file not asked for as base64.\"},\"encoding\":{\"enum"
	    "\":[\"utf-8\",\"base64\"]},\"size\":{\"type\":\"integer\","
	    "\"description\":\"The file's whole size.\"},\"offset\":{\"type\":\""
	    "integer\",\"description\":\"Where content starts in the file.\"},"
	    "\"length\":{\"type\":\"integer\",\"description\":\"How many "
	    "of the file's bytes content is.\"},\"truncated\":{\"type\":\"boole"
	    "an\",\"description\":\"The file holds more after them.\"},"
	    "\"next_offset\":{\"type\":\"integer\"},\"binary\":{\"type\":\"bool"
	    "ean\"},\"kind\":{\"type\":\"string\",\"description\":\"What "
	    "a binary file's first bytes say it is.\"},\"first_bytes\":{\"type\""
	    ":\"string\",\"description\":\"Its first bytes, in hex.\"}},"
	    "\"required\":[\"path\",\"content\",\"encoding\",\"size\",\"offset\""
	    ",\"length\",\"truncated\"]}",
	.hints = MCP_READONLY | MCP_IDEMPOTENT,
	.run = run,
	.render = render,
};
