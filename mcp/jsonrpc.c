/* JSON-RPC 2.0 reading and writing (see jsonrpc.h).  The reader is the first
 * thing untrusted input meets, so it checks everything and is fuzzed
 * (tests/fuzz/jsonrpc.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jspec.h"
#include "lib/utf8.h"
#include "lib/util.h"
#include "mcp/jsonrpc.h"

/* Integer ids beyond 2^53 would not survive the trip through a double. */
#define ID_INT_MAX 9007199254740992.0

static int
fault(struct jsonrpc_fault *f, int code, const char *msg)
{
	f->code = code;
	snprintf(f->message, sizeof f->message, "%s", msg);
	return -1;
}

static int
id_valid(const cJSON *id)
{
	if (cJSON_IsString(id))
		return 1;
	if (cJSON_IsNumber(id)) {
		double d = id->valuedouble;
		return isfinite(d) && floor(d) == d && fabs(d) <= ID_INT_MAX;
	}
	return 0;
}

int
jsonrpc_parse(const char *text, size_t len, struct jsonrpc_msg *m, struct jsonrpc_fault *f)
{
	const cJSON *v, *id, *method, *params;
	const char *end = NULL;
	cJSON *root;

	memset(m, 0, sizeof *m);
	memset(f, 0, sizeof *f);
	/* JSON text is UTF-8; cJSON would pass other bytes through to our answers. */
	if (!utf8_valid(text, len))
		return fault(f, JSONRPC_PARSE_ERROR, "Parse error: the message is not valid "
		    "UTF-8");
	if ((root = cJSON_ParseWithLengthOpts(text, len, &end, 0)) == NULL)
		return fault(f, JSONRPC_PARSE_ERROR, "Parse error: the message is not valid "
		    "JSON");
	/* One message per line: anything but blanks after the value is an error. */
	for (; end < text + len; end++)
		if (*end != ' ' && *end != '\t' && *end != '\r' && *end != '\n') {
			cJSON_Delete(root);
			return fault(f, JSONRPC_PARSE_ERROR, "Parse error: text after the JSON "
			    "value");
		}
	if (cJSON_IsArray(root)) {
		cJSON_Delete(root);
		return fault(f, JSONRPC_INVALID_REQUEST, "Invalid Request: batches are not "
		    "supported; send one message per line");
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return fault(f, JSONRPC_INVALID_REQUEST, "Invalid Request: a message is a JSON "
		    "object");
	}
	id = cJSON_GetObjectItemCaseSensitive(root, "id");
	if (id != NULL && id_valid(id))
		f->id = cJSON_Duplicate(id, 1);
	v = cJSON_GetObjectItemCaseSensitive(root, "jsonrpc");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0") != 0) {
		cJSON_Delete(root);
		return fault(f, JSONRPC_INVALID_REQUEST, "Invalid Request: \"jsonrpc\" must be "
		    "\"2.0\"");
	}
	method = cJSON_GetObjectItemCaseSensitive(root, "method");
	if (method == NULL) {
		/* A response to a request of ours: a valid id (or null, for an error
		 * about a message whose id could not be read) and a result or an
		 * error. */
		if (id == NULL || !(id_valid(id) || (cJSON_IsNull(id) &&
		    cJSON_GetObjectItemCaseSensitive(root, "error") != NULL)) ||
		    (cJSON_GetObjectItemCaseSensitive(root, "result") == NULL) ==
		    (cJSON_GetObjectItemCaseSensitive(root, "error") == NULL)) {
			cJSON_Delete(root);
			return fault(f, JSONRPC_INVALID_REQUEST, "Invalid Request: no \"method\", "
			    "and not a response (an id and one of result or error)");
		}
		m->kind = JSONRPC_RESPONSE;
		m->root = root;
		m->id = id;
		cJSON_Delete(f->id);
		f->id = NULL;
		return 0;
	}
	if (!cJSON_IsString(method) || method->valuestring[0] == '\0') {
		cJSON_Delete(root);
		return fault(f, JSONRPC_INVALID_REQUEST, "Invalid Request: \"method\" must be a "
		    "non-empty string");
	}
	if (id != NULL && !id_valid(id)) {
		cJSON_Delete(root);
		return fault(f, JSONRPC_INVALID_REQUEST, "Invalid Request: \"id\" must be a "
		    "string or an integer");
	}
	params = cJSON_GetObjectItemCaseSensitive(root, "params");
	if (params != NULL && !cJSON_IsObject(params)) {
		int code = cJSON_IsArray(params) ? JSONRPC_INVALID_PARAMS :
		    JSONRPC_INVALID_REQUEST;
		cJSON_Delete(root);
		return fault(f, code, code == JSONRPC_INVALID_PARAMS ? "Invalid params: "
		    "\"params\" must be an object" : "Invalid Request: \"params\" must be an "
		    "object");
	}
	m->kind = id != NULL ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
	m->root = root;
	m->id = id;
	m->method = method->valuestring;
	m->params = params;
	cJSON_Delete(f->id);
	f->id = NULL;
	return 0;
}

void
jsonrpc_msg_free(struct jsonrpc_msg *m)
{
	cJSON_Delete(m->root);
	memset(m, 0, sizeof *m);
}

int
jsonrpc_id_equal(const cJSON *a, const cJSON *b)
{
	if (a == NULL || b == NULL)
		return 0;
	if (cJSON_IsString(a) && cJSON_IsString(b))
		return strcmp(a->valuestring, b->valuestring) == 0;
	if (cJSON_IsNumber(a) && cJSON_IsNumber(b))
		return a->valuedouble == b->valuedouble;
	return 0;
}

static char *
print(cJSON *o)
{
	char *t = cJSON_PrintUnformatted(o);

	if (t == NULL)
		fatal("out of memory");
	/* A JSON text is UTF-8 (RFC 8259): what a sandbox named otherwise is
	 * replaced, never sent raw to a strict client. */
	if (!utf8_valid(t, strlen(t)) && jfix_utf8(o)) {
		free(t);
		if ((t = cJSON_PrintUnformatted(o)) == NULL)
			fatal("out of memory");
	}
	cJSON_Delete(o);
	return t;
}

static cJSON *
envelope(const cJSON *id)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddItemToObject(o, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	return o;
}

char *
jsonrpc_result(const cJSON *id, cJSON *result)
{
	cJSON *o = envelope(id);

	cJSON_AddItemToObject(o, "result", result ? result : cJSON_CreateObject());
	return print(o);
}

char *
jsonrpc_error(const cJSON *id, int code, const char *message, cJSON *data)
{
	cJSON *o = envelope(id), *err = cJSON_CreateObject();

	cJSON_AddNumberToObject(err, "code", code);
	cJSON_AddStringToObject(err, "message", message);
	if (data)
		cJSON_AddItemToObject(err, "data", data);
	cJSON_AddItemToObject(o, "error", err);
	return print(o);
}

char *
jsonrpc_notification(const char *method, cJSON *params)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddStringToObject(o, "method", method);
	if (params)
		cJSON_AddItemToObject(o, "params", params);
	return print(o);
}
