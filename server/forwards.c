/* The forwards' methods of the core server (forwards.h): sbxtop/forward_start,
 * forward_stop, forward_list and forward_restore, the console's and `sbxtop
 * forward`'s calls into core/core-forward.c.  The address a forward binds to is the
 * operator's to choose: no agent reaches these (server.c's table). */
#include <stdlib.h>

#include "mcp/tool-util.h"
#include "server/forwards.h"

static cJSON *
forward_json(const struct core_forward *f)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "sandbox", f->sandbox);
	cJSON_AddStringToObject(o, "bind", f->bind);
	cJSON_AddNumberToObject(o, "local_port", f->local_port);
	cJSON_AddNumberToObject(o, "remote_port", f->remote_port);
	cJSON_AddNumberToObject(o, "pid", f->pid);
	cJSON_AddBoolToObject(o, "live", f->live);
	cJSON_AddNumberToObject(o, "since_ms", (double)f->since_ms);
	cJSON_AddNumberToObject(o, "conns", (double)f->conns_now);
	cJSON_AddNumberToObject(o, "conns_total", (double)f->conns_total);
	cJSON_AddNumberToObject(o, "bytes_in", (double)f->bytes_in);
	cJSON_AddNumberToObject(o, "bytes_out", (double)f->bytes_out);
	cJSON_AddNumberToObject(o, "failures", (double)f->failures);
	if (f->last_error[0])
		cJSON_AddStringToObject(o, "last_error", f->last_error);
	else
		cJSON_AddNullToObject(o, "last_error");
	return o;
}

void
forwards_start(struct srv_call *c)
{
	const cJSON *params = c->params;
	struct core_forward_opts o = { 0 };
	struct core_forward f;
	const char *key = mcp_arg_str(params, "sandbox");
	struct sbx_err e;

	o.bind = mcp_arg_str(params, "bind");
	o.remote_port = (int)srv_int_param(params, "remote_port", 1, 65535, -2);
	o.local_port = (int)srv_int_param(params, "local_port", 0, 65535, 0);
	o.http = cJSON_IsTrue(cJSON_GetObjectItem(params, "http"));
	if (key == NULL || o.remote_port < 0 || o.local_port < 0) {
		srv_invalid(c, "Invalid params: sbxtop/forward_start needs {sandbox, "
		    "remote_port: 1..65535, local_port?: 0..65535, bind?}");
		return;
	}
	if (core_forward_start(c->core, key, &o, &f, &e) < 0) {
		srv_reply_err(c, &e);
		return;
	}
	mcp_session_reply(c->s, c->id, forward_json(&f));
}

void
forwards_stop(struct srv_call *c)
{
	const cJSON *params = c->params;
	const char *key = mcp_arg_str(params, "sandbox");
	int remote = (int)srv_int_param(params, "remote_port", 1, 65535, 0), n = 0;
	struct sbx_err e;
	cJSON *r;

	if (key == NULL || remote < 0) {
		srv_invalid(c, "Invalid params: sbxtop/forward_stop needs {sandbox, "
		    "remote_port?: 1..65535}");
		return;
	}
	if (core_forward_stop(c->core, key, remote, &n, &e) < 0) {
		srv_reply_err(c, &e);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "stopped", n);
	mcp_session_reply(c->s, c->id, r);
}

void
forwards_list(struct srv_call *c)
{
	const cJSON *params = c->params;
	struct core_forward *v;
	size_t n;
	struct sbx_err e;
	cJSON *r, *a;

	if (core_forward_list(c->core, mcp_arg_str(params, "sandbox"), &v, &n, &e) < 0) {
		srv_reply_err(c, &e);
		return;
	}
	r = cJSON_CreateObject();
	a = cJSON_AddArrayToObject(r, "forwards");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, forward_json(&v[i]));
	free(v);
	mcp_session_reply(c->s, c->id, r);
}

void
forwards_restore(struct srv_call *c)
{
	struct sbx_err e;
	int n = core_forward_restore(c->core, 1, NULL, &e);
	cJSON *r;

	if (n < 0) {
		srv_reply_err(c, &e);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "restored", n);
	mcp_session_reply(c->s, c->id, r);
}
