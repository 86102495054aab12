/* The REST routes of the OCI image store (core/image/): GET /v1/images (the
 * store, as `sbxtop image ls`), POST /v1/images {ref, platform?, plain_http?}
 * (a pull), DELETE /v1/images?ref=REF (a reference forgotten), POST
 * /v1/images/gc.  Each is in the journal and passes the approval gate as the
 * other routes' calls do. */
#include <string.h>

#include "core/image/image.h"
#include "server/rest-int.h"

/* Journal and gate around one core call; the answer is out, or e. */
static enum MHD_Result
run(struct rest_req *rq, const char *what, const cJSON *args, unsigned status,
    int (*fn)(struct rest_req *rq, const cJSON *args, cJSON **out, struct sbx_err *e))
{
	struct rest_op op;
	struct sbx_err e;
	cJSON *out = NULL;
	int rc;

	if (rest_op_begin(&op, rq->r, what, NULL, args, &e) < 0)
		return rest_error(rq->conn, &e);
	rc = fn(rq, args, &out, &e);
	rest_op_end(&op, rc, &e);
	if (rc < 0)
		return rest_error(rq->conn, &e);
	return rest_json(rq->conn, status, out);
}

static int
list(struct rest_req *rq, const cJSON *args, cJSON **out, struct sbx_err *e)
{
	(void)args;
	return core_image_list(rq->r->core, out, e);
}

static int
pull(struct rest_req *rq, const cJSON *args, cJSON **out, struct sbx_err *e)
{
	struct core_image_pull_opts o = { 0 };
	const cJSON *ref = cJSON_GetObjectItemCaseSensitive(args, "ref");
	const cJSON *pf = cJSON_GetObjectItemCaseSensitive(args, "platform");
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(args, "plain_http");

	if (!cJSON_IsString(ref) || (pf != NULL && !cJSON_IsString(pf)) ||
	    (ph != NULL && !cJSON_IsBool(ph)))
		return sbx_error(e, SBX_EINVAL, "send {\"ref\": \"debian:12\"} (platform: a "
		    "string, plain_http: a boolean)", "invalid request: ref must be an image "
		    "reference");
	o.platform = pf ? pf->valuestring : NULL;
	o.plain_http = cJSON_IsTrue(ph);
	return core_image_pull(rq->r->core, ref->valuestring, &o, out, e);
}

static int
rm(struct rest_req *rq, const cJSON *args, cJSON **out, struct sbx_err *e)
{
	return core_image_rm(rq->r->core, cJSON_GetStringValue(cJSON_GetObjectItem(args, "ref")),
	    out, e);
}

static int
gc(struct rest_req *rq, const cJSON *args, cJSON **out, struct sbx_err *e)
{
	(void)args;
	return core_image_gc(rq->r->core, out, e);
}

enum MHD_Result
rest_images_list(struct rest_req *rq)
{
	return run(rq, "image_list", NULL, MHD_HTTP_OK, list);
}

enum MHD_Result
rest_images_pull(struct rest_req *rq)
{
	struct sbx_err e;
	enum MHD_Result rc;
	cJSON *args;

	if ((args = rest_body_object(rq, &e)) == NULL)
		return rest_error(rq->conn, &e);
	rc = run(rq, "image_pull", args, MHD_HTTP_CREATED, pull);
	cJSON_Delete(args);
	return rc;
}

enum MHD_Result
rest_images_rm(struct rest_req *rq)
{
	const char *ref = rest_query(rq, "ref");
	enum MHD_Result rc;
	cJSON *args;

	if (ref == NULL || ref[0] == '\0')
		return rest_fail(rq->conn, SBX_EINVAL, "add ?ref=REFERENCE (or an id)",
		    "invalid request: ref is required");
	args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "ref", ref);
	rc = run(rq, "image_rm", args, MHD_HTTP_OK, rm);
	cJSON_Delete(args);
	return rc;
}

enum MHD_Result
rest_images_gc(struct rest_req *rq)
{
	return run(rq, "image_gc", NULL, MHD_HTTP_OK, gc);
}
