/* Agent Sandbox's key API, /admin/keys (admin scope), on the store `sbxtop
 * key` keeps (core/keys/): POST {name, scopes?, rateLimit?, expiresAt?} is 201
 * {key, record}; GET {keys}; POST /admin/keys/ID/revoke {record}; POST
 * /admin/keys/ID/rotate {key, record}; DELETE /admin/keys/ID {deleted, id};
 * an unknown id is 404.  Errors are {"error": "...", "hint": "..."}, as its
 * routes say them.  A key appears in an answer once, when it is made; the
 * log and the event stream name keys by id and name only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/util.h"
#include "server/rest-int.h"

static enum MHD_Result
fail(struct rest_req *rq, const struct sbx_err *e)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "error", e->msg);
	if (e->hint[0] != '\0')
		cJSON_AddStringToObject(o, "hint", e->hint);
	return rest_json(rq->conn, rest_status(e), o);
}

/* What changed, for the console and the log: never the key. */
static void
changed(struct rest_req *rq, const char *action, const cJSON *record)
{
	const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(record, "id"));
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(record, "name"));
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "action", action);
	cJSON_AddStringToObject(d, "id", id ? id : "");
	cJSON_AddStringToObject(d, "name", name ? name : "");
	cJSON_AddStringToObject(d, "by", rq->who.key_id[0] ? rq->who.key_name : "the token");
	core_events_emit(rq->r->core, "key.changed", NULL, d);
	log_info("rest: API key %s ('%s') %s by %s", id ? id : "?", name ? name : "?", action,
	    rq->who.key_id[0] ? rq->who.key_id : "the listener's token");
}

/* {key, record} (both taken): the one answer the key is ever in. */
static enum MHD_Result
made(struct rest_req *rq, unsigned status, char *key, cJSON *record)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "key", key);
	cJSON_AddItemToObject(o, "record", record);
	explicit_bzero(key, strlen(key));
	free(key);
	return rest_json(rq->conn, status, o);
}

enum MHD_Result
rest_keys_add(struct rest_req *rq)
{
	struct key_spec s;
	struct sbx_err e;
	cJSON *body, *record;
	char *key;

	if ((body = rest_body_object(rq, &e)) == NULL)
		return fail(rq, &e);
	if (key_spec_from_json(body, wall_ms(), &s, &e) < 0 ||
	    keys_add(&s, &key, &record, &e) < 0) {
		cJSON_Delete(body);
		return fail(rq, &e);
	}
	cJSON_Delete(body);
	changed(rq, "added", record);
	return made(rq, MHD_HTTP_CREATED, key, record);
}

enum MHD_Result
rest_keys_list(struct rest_req *rq)
{
	struct sbx_err e;
	cJSON *a, *o;

	if (keys_list(&a, &e) < 0)
		return fail(rq, &e);
	o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "keys", a);
	return rest_json(rq->conn, MHD_HTTP_OK, o);
}

enum MHD_Result
rest_keys_revoke(struct rest_req *rq)
{
	struct sbx_err e;
	cJSON *record, *o;

	if (keys_revoke(rq->seg[2], 0, &record, &e) < 0)
		return fail(rq, &e);
	changed(rq, "revoked", record);
	o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "record", record);
	return rest_json(rq->conn, MHD_HTTP_OK, o);
}

enum MHD_Result
rest_keys_rotate(struct rest_req *rq)
{
	struct sbx_err e;
	cJSON *record;
	char *key;

	if (keys_rotate(rq->seg[2], 0, &key, &record, &e) < 0)
		return fail(rq, &e);
	changed(rq, "rotated", record);
	return made(rq, MHD_HTTP_OK, key, record);
}

enum MHD_Result
rest_keys_rm(struct rest_req *rq)
{
	struct sbx_err e;
	cJSON *o = cJSON_CreateObject();

	if (keys_rm(rq->seg[2], 0, &e) < 0) {
		cJSON_Delete(o);
		return fail(rq, &e);
	}
	cJSON_AddStringToObject(o, "id", rq->seg[2]);
	changed(rq, "deleted", o);
	cJSON_AddBoolToObject(o, "deleted", 1);
	return rest_json(rq->conn, MHD_HTTP_OK, o);
}
