/* The checks of mcp/http.c that need no connection (see http-check.h): the
 * listen address, the local listener's Host and Origin rule, and the
 * 2026-07-28 request headers, which must say what the body says so that a
 * proxy routing on a header and this server reading the body agree on what is
 * asked. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/b64.h"
#include "lib/err.h"
#include "lib/jspec.h"
#include "lib/util.h"
#include "mcp/http-check.h"
#include "mcp/jsonrpc.h"
#include "mcp/session-int.h"
#include "mcp/tool.h"

int
mcp_http_host_ok(const char *hostport, const char *bound, int port)
{
	char host[300], pt[16] = "";
	const char *p;

	if (hostport[0] == '[') {
		p = strchr(hostport, ']');
		if (p == NULL || (size_t)(p - hostport) + 1 >= sizeof host)
			return 0;
		snprintf(host, sizeof host, "%.*s", (int)(p - hostport + 1), hostport);
		p++;
	} else {
		p = strchr(hostport, ':');
		size_t n = p ? (size_t)(p - hostport) : strlen(hostport);
		if (n >= sizeof host)
			return 0;
		snprintf(host, sizeof host, "%.*s", (int)n, hostport);
		if (p == NULL)
			p = hostport + n;
	}
	if (*p == ':')
		snprintf(pt, sizeof pt, "%.10s", p + 1);
	else if (*p != '\0')
		return 0;
	if (pt[0] != '\0' && (strspn(pt, "0123456789") != strlen(pt) || atoi(pt) != port))
		return 0;
	if (strcasecmp(host, "localhost") == 0 || strcmp(host, "127.0.0.1") == 0 ||
	    strcmp(host, "[::1]") == 0)
		return 1;
	return strcmp(host, bound) == 0;
}

int
mcp_http_parse_listen(const char *spec, struct sockaddr_in *sin, char *host, size_t hostlen,
    struct sbx_err *e)
{
	const char *colon = strrchr(spec, ':');
	char *end;
	long port;

	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	if (colon == NULL || colon == spec || (size_t)(colon - spec) >= hostlen) {
		sbx_error(e, SBX_EINVAL, "give HOST:PORT, e.g. 127.0.0.1:8765 (port 0: any "
		    "free port)", "bad listen address '%.100s'", spec);
		return -1;
	}
	snprintf(host, hostlen, "%.*s", (int)(colon - spec), spec);
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno != 0 || port < 0 || port > 65535) {
		sbx_error(e, SBX_EINVAL, "give a port from 0 to 65535", "bad port in listen "
		    "address '%.100s'", spec);
		return -1;
	}
	if (strcasecmp(host, "localhost") == 0)
		snprintf(host, hostlen, "127.0.0.1");
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
		sbx_error(e, SBX_EINVAL, "give an IPv4 address or localhost, e.g. "
		    "127.0.0.1:8765", "bad host in listen address '%.100s'", spec);
		return -1;
	}
	sin->sin_port = htons((uint16_t)port);
	return 0;
}

int
mcp_http_origin_ok(const char *origin, const char *host, int loopback, const char *bound,
    int port)
{
	const char *o = origin;

	if (loopback && host != NULL && !mcp_http_host_ok(host, bound, port))
		return 0;
	if (o == NULL)
		return 1;
	if (strncmp(o, "http://", 7) == 0)
		o += 7;
	else if (strncmp(o, "https://", 8) == 0)
		o += 8;
	else
		return 0;	/* "null", file://, ... */
	return strchr(o, '/') == NULL && mcp_http_host_ok(o, bound, port);
}

static int
modern_only(const char *method)
{
	return method != NULL && (strcmp(method, "server/discover") == 0 ||
	    strcmp(method, "subscriptions/listen") == 0 || strncmp(method, "tasks/", 6) == 0);
}

int
mcp_http_is_modern(const cJSON *m, const char *version)
{
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "params");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");

	if (cJSON_HasObjectItem(meta, META_VERSION) || modern_only(jstr(m, "method", NULL)))
		return 1;
	if (version == NULL)
		return 0;
	for (int i = 0; i <= REV_LEGACY_LAST; i++)
		if (strcmp(version, sess_rev_names[i]) == 0)
			return 0;
	return 1;
}

/* 1 when v is fit for a header value: visible ASCII, space and tab. */
static int
header_clean(const char *v)
{
	for (; *v; v++)
		if (((unsigned char)*v < 0x20 && *v != '\t') || (unsigned char)*v >= 0x7f)
			return 0;
	return 1;
}

/* The value of a header that may carry the base64 sentinel (=?base64?...?=),
 * decoded (caller frees); NULL when the encoding is broken. */
static char *
header_decoded(const char *v)
{
	size_t n = strlen(v), k;
	unsigned char *d;
	char *out;

	if (n < 11 || strncmp(v, "=?base64?", 9) != 0 || strcmp(v + n - 2, "?=") != 0)
		return xstrdup(v);
	if ((d = b64_decode(v + 9, n - 11, &k)) == NULL)
		return NULL;
	out = xmalloc(k + 1);
	memcpy(out, d, k);
	out[k] = '\0';
	free(d);
	if (strlen(out) != k) {		/* a NUL inside: no body string has one */
		free(out);
		return NULL;
	}
	return out;
}

/* The body field Mcp-Name mirrors for method, or NULL when it has none. */
static const char *
name_field(const char *method)
{
	if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
		return "name";
	if (strcmp(method, "resources/read") == 0)
		return "uri";
	if (strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/update") == 0 ||
	    strcmp(method, "tasks/cancel") == 0)
		return "taskId";
	return NULL;
}

#define FAIL(status, c, ...) do { *code = (c); snprintf(msg, len, __VA_ARGS__); \
	return (status); } while (0)

/* A header value as the body's (RFC 9110 5.5: whitespace around it is not
 * part of it, unless it came base64): NULL when its base64 is broken. */
static char *
header_value(const char *h)
{
	char *v = header_decoded(h);

	if (v != NULL && v[0] != '\0' && h[0] != '=') {
		size_t n = strlen(v), b = strspn(v, " \t");
		while (n > b && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
		memmove(v, v + b, n - b);
		v[n - b] = '\0';
	}
	return v;
}

/* SEP-2243: each argument whose schema names an x-mcp-header comes in the
 * header Mcp-Param-NAME too (a gateway routes on it), and must be what the
 * body says: 0, or the status with the error. */
static int
check_params(const cJSON *params, mcp_http_header_fn hdr, void *arg, int *code, char *msg,
    size_t len)
{
	const struct mcp_tool *t = mcp_tool_find(jstr(params, "name", NULL));
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments"), *p;

	if (t == NULL)
		return 0;	/* the session says it is unknown */
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(mcp_tool_input_schema(t),
	    "properties")) {
		const char *name = jstr(p, "x-mcp-header", NULL), *h;
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, p->string);
		char hname[128], body[64];
		const char *want = NULL;
		_cleanup_free_ char *got = NULL;

		if (name == NULL)
			continue;
		snprintf(hname, sizeof hname, "Mcp-Param-%s", name);
		h = hdr(arg, hname);
		if (cJSON_IsString(v))
			want = v->valuestring;
		else if (cJSON_IsBool(v))
			want = cJSON_IsTrue(v) ? "true" : "false";
		else if (cJSON_IsNumber(v)) {
			snprintf(body, sizeof body, "%.17g", v->valuedouble);
			want = body;
		}
		if (want == NULL && h == NULL)
			continue;
		if (h == NULL)
			FAIL(400, MCP_HEADER_MISMATCH, "Header mismatch: the %s header is required "
			    "(the body's arguments.%s)", hname, p->string);
		if (!header_clean(h) || (got = header_value(h)) == NULL)
			FAIL(400, MCP_HEADER_MISMATCH, "Header mismatch: the %s header is not a "
			    "valid value (non-ASCII values go as =?base64?...?=)", hname);
		if (want == NULL)
			FAIL(400, MCP_HEADER_MISMATCH, "Header mismatch: %s says '%.80s' but the body "
			    "has no arguments.%s", hname, got, p->string);
		if (strcmp(got, want) != 0)
			FAIL(400, MCP_HEADER_MISMATCH, "Header mismatch: %s header value '%.80s' does "
			    "not match body value '%.80s'", hname, got, want);
	}
	return 0;
}

int
mcp_http_check_modern(const cJSON *m, mcp_http_header_fn hdr, void *arg, int *code,
    char *msg, size_t len, cJSON **data)
{
	const char *method = jstr(m, "method", NULL), *field, *body;
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "params");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
	const char *pv = jstr(meta, META_VERSION, NULL);
	const char *hv = hdr(arg, "MCP-Protocol-Version"), *hm = hdr(arg, "Mcp-Method");
	const char *hn = hdr(arg, "Mcp-Name");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	_cleanup_free_ char *name = NULL;

	*data = NULL;
	/* A response, or a notification: the revision sets no header rules for
	 * those, and the session answers a malformed message. */
	if (method == NULL || id == NULL || cJSON_IsNull(id))
		return 0;
	if ((hv && !header_clean(hv)) || (hm && !header_clean(hm)) || (hn && !header_clean(hn)))
		FAIL(400, MCP_HEADER_MISMATCH, "Header mismatch: a header value holds characters "
		    "a header may not (non-ASCII values go as =?base64?...?=)");
	if (pv == NULL)
		FAIL(400, JSONRPC_INVALID_PARAMS, "Invalid params: %.60s needs params._meta[\""
		    META_VERSION "\"], a string", method);
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(meta, META_CAPS)))
		FAIL(400, JSONRPC_INVALID_PARAMS, "Invalid params: %.60s needs params._meta[\""
		    META_CAPS "\"], an object (send {} for none)", method);
	if (hv == NULL)
		FAIL(400, MCP_HEADER_MISMATCH, "Header mismatch: the MCP-Protocol-Version header "
		    "is required (%.40s, as the body's _meta says)", pv);
	if (strcmp(hv, pv) != 0)
		FAIL(400, MCP_HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version header "
		    "value '%.40s' does not match body value '%.40s'", hv, pv);
	if (strcmp(pv, sess_rev_names[REV_MODERN]) != 0) {
		*data = cJSON_CreateObject();
		cJSON *a = cJSON_AddArrayToObject(*data, "supported");
		for (int i = REV_COUNT - 1; i >= 0; i--)
			cJSON_AddItemToArray(a, cJSON_CreateString(sess_rev_names[i]));
		cJSON_AddStringToObject(*data, "requested", pv);
		FAIL(400, MCP_UNSUPPORTED_VERSION, "Unsupported protocol version %.40s: this "
		    "server speaks %s (and the 2025 revisions and 2024-11-05 with initialize)",
		    pv, sess_rev_names[REV_MODERN]);
	}
	if (hm == NULL)
		FAIL(400, MCP_HEADER_MISMATCH, "Header mismatch: the Mcp-Method header is "
		    "required (%.60s, the body's method)", method);
	if (strcmp(hm, method) != 0)
		FAIL(400, MCP_HEADER_MISMATCH, "Header mismatch: Mcp-Method header value "
		    "'%.60s' does not match body value '%.60s'", hm, method);
	if (strcmp(method, "tools/call") == 0) {
		int status = check_params(params, hdr, arg, code, msg, len);
		if (status != 0)
			return status;
	}
	if ((field = name_field(method)) == NULL || (body = jstr(params, field, NULL)) == NULL)
		return 0;
	if (hn == NULL)
		FAIL(400, MCP_HEADER_MISMATCH, "Header mismatch: the Mcp-Name header is required "
		    "for %.60s (params.%s)", method, field);
	if ((name = header_value(hn)) == NULL)
		FAIL(400, MCP_HEADER_MISMATCH, "Header mismatch: the Mcp-Name header's "
		    "=?base64?...?= value is not valid base64 text");
	if (strcmp(name, body) != 0)
		FAIL(400, MCP_HEADER_MISMATCH, "Header mismatch: Mcp-Name header value '%.80s' "
		    "does not match body value '%.80s'", name, body);
	return 0;
}

unsigned
mcp_http_modern_status(const char *text, size_t len)
{
	cJSON *o = cJSON_ParseWithLength(text, len);
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o,
	    "error"), "code");
	unsigned status = 200;

	if (cJSON_IsNumber(c)) {
		switch (c->valueint) {
		case JSONRPC_METHOD_NOT_FOUND:
			status = 404;
			break;
		case JSONRPC_PARSE_ERROR:
		case JSONRPC_INVALID_REQUEST:
		case JSONRPC_INVALID_PARAMS:
		case MCP_HEADER_MISMATCH:
		case MCP_MISSING_CAPABILITY:
		case MCP_UNSUPPORTED_VERSION:
			status = 400;
			break;
		}
	}
	cJSON_Delete(o);
	return status;
}
