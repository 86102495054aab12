/* The sandbox logs as MCP resources (sbx://ID/logs): resources/list of them
 * and the image list (resource-images.c), resources/read of one (its last
 * 256 KiB, from a line's start), and the template that names them.  The rows
 * of both eras' tables of methods run these on a worker. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/session-int.h"

#define LOG_TAIL_MAX	(256u << 10)	/* resources/read of a log: its last 256 KiB */
#define LOG_URI_PREFIX "sbx://"
#define LOG_URI_SUFFIX "/logs"

cJSON *
sess_resources_list(struct mcp_call *call, struct sess_fault *f)
{
	struct sandbox **v;
	struct sbx_err e;
	size_t n;
	cJSON *r, *a;

	if (core_list(call->core, &v, &n, &e) < 0) {
		f->code = JSONRPC_INTERNAL_ERROR;
		snprintf(f->msg, sizeof f->msg, "%s", e.msg);
		return NULL;
	}
	r = cJSON_CreateObject();
	a = cJSON_AddArrayToObject(r, "resources");
	mcp_images_resource(call, a);
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		_cleanup_free_ char *uri = xasprintf(LOG_URI_PREFIX "%s" LOG_URI_SUFFIX, v[i]->id);
		_cleanup_free_ char *title = xasprintf("Log of sandbox %s%s%s%s", v[i]->id,
		    v[i]->name ? " (" : "", v[i]->name ? v[i]->name : "", v[i]->name ? ")" : "");
		_cleanup_free_ char *desc = xasprintf("The log of %s sandbox %s (%s): what "
		    "its agent (init, execs, files) reported", v[i]->backend ? v[i]->backend : "",
		    v[i]->id, sbx_state_name(v[i]->state));
		cJSON_AddStringToObject(o, "uri", uri);
		cJSON_AddStringToObject(o, "name", v[i]->id);
		if (HAS_STRUCTURED(call->ri.rev))
			cJSON_AddStringToObject(o, "title", title);
		cJSON_AddStringToObject(o, "description", desc);
		cJSON_AddStringToObject(o, "mimeType", "text/plain");
		cJSON_AddItemToArray(a, o);
	}
	core_list_free(v, n);
	return r;
}

/* Bytes as JSON-safe text: invalid UTF-8 and NULs become U+FFFD. */
static char *
text_of(const char *p, size_t n)
{
	char *out = xmalloc(n * 3 + 1), *o = out;

	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)p[i];
		size_t k = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		if (c != 0 && i + k <= n && utf8_valid(p + i, k)) {
			memcpy(o, p + i, k);
			o += k;
			i += k;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';
	return out;
}

/* The last LOG_TAIL_MAX bytes of path from a line start ("" when there is no
 * log yet); NULL with msg on a read error. */
static char *
log_tail(const char *path, char *msg, size_t len)
{
	/* Never through a link or a FIFO the sandbox put there. */
	size_t n;
	_cleanup_free_ char *b = tail_read(path, LOG_TAIL_MAX, &n);

	if (b == NULL && errno == ENOENT)
		return xstrdup("");
	if (b == NULL && (errno == ELOOP || errno == EINVAL)) {
		snprintf(msg, len, "the log at %s is not a regular file (the sandbox replaced it): "
		    "not read", path);
		return NULL;
	}
	if (b == NULL) {
		snprintf(msg, len, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	return text_of(b, n);
}

/* resources/read of uri: the result, or NULL with code and msg. */
static cJSON *
resource_read(struct mcp_call *call, const char *uri, int *code, char *msg, size_t len)
{
	char id[32];
	size_t n;
	struct sbx_err e;
	_cleanup_free_ char *path = NULL, *text = NULL;
	cJSON *r, *c;

	if ((r = mcp_images_read(call, uri, code, msg, len)) != NULL || *code != 0)
		return r;
	n = strlen(uri);
	if (n <= strlen(LOG_URI_PREFIX LOG_URI_SUFFIX) || n - strlen(LOG_URI_PREFIX
	    LOG_URI_SUFFIX) >= sizeof id || strncmp(uri, LOG_URI_PREFIX,
	    strlen(LOG_URI_PREFIX)) != 0 || strcmp(uri + n - strlen(LOG_URI_SUFFIX),
	    LOG_URI_SUFFIX) != 0)
		goto unknown;
	snprintf(id, sizeof id, "%.*s", (int)(n - strlen(LOG_URI_PREFIX LOG_URI_SUFFIX)),
	    uri + strlen(LOG_URI_PREFIX));
	if (strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
	    strlen(id))
		goto unknown;
	/* The agent's log says the most; a backend without one has its console. */
	if ((path = core_log_path(call->core, id, "agent", &e)) == NULL ||
	    access(path, F_OK) < 0) {
		free(path);
		path = core_log_path(call->core, id, "console", &e);
	}
	if (path == NULL) {
		if (e.code == SBX_ENOTFOUND)
			goto unknown;
		*code = JSONRPC_INTERNAL_ERROR;
		snprintf(msg, len, "%s", e.msg);
		return NULL;
	}
	if ((text = log_tail(path, msg, len)) == NULL) {
		*code = JSONRPC_INTERNAL_ERROR;
		return NULL;
	}
	r = cJSON_CreateObject();
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "uri", uri);
	cJSON_AddStringToObject(c, "mimeType", "text/plain");
	cJSON_AddStringToObject(c, "text", text);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "contents"), c);
	return r;
unknown:
	/* 2026-07-28 answers an unknown resource as invalid params. */
	*code = call->ri.modern ? JSONRPC_INVALID_PARAMS : MCP_RESOURCE_NOT_FOUND;
	snprintf(msg, len, "Resource not found: %.200s (resources/list shows the sandbox "
	    "logs there are)", uri);
	return NULL;
}

cJSON *
sess_resources_read(struct mcp_call *call, struct sess_fault *f)
{
	const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call->params,
	    "uri"));
	cJSON *r;

	if (uri == NULL) {
		f->code = JSONRPC_INVALID_PARAMS;
		snprintf(f->msg, sizeof f->msg, "Invalid params: resources/read needs \"uri\", "
		    "a string");
		return NULL;
	}
	r = resource_read(call, uri, &f->code, f->msg, sizeof f->msg);
	/* The uri not found, as 2026-07-28 asks. */
	if (r == NULL && (f->code == MCP_RESOURCE_NOT_FOUND || f->code == JSONRPC_INVALID_PARAMS)) {
		f->data = cJSON_CreateObject();
		cJSON_AddStringToObject(f->data, "uri", uri);
	}
	return r;
}

cJSON *
sess_resource_templates(enum rev rev)
{
	cJSON *r = cJSON_CreateObject(), *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "uriTemplate", LOG_URI_PREFIX "{sandbox_id}" LOG_URI_SUFFIX);
	cJSON_AddStringToObject(o, "name", "sandbox-log");
	if (HAS_STRUCTURED(rev))
		cJSON_AddStringToObject(o, "title", "Sandbox log");
	cJSON_AddStringToObject(o, "description", "The log of a sandbox (what its "
	    "agent reported: start, execs, files, stop); the last 256 KiB");
	cJSON_AddStringToObject(o, "mimeType", "text/plain");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "resourceTemplates"), o);
	return r;
}
