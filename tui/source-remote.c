/* The console's source through the core server (core/client.h): sandboxes and
 * forwards from the sandbox_list tool (again on every sandbox or forward
 * event, and every few seconds), everything else from the event subscription,
 * actions as tools/call, approvals as sbxtop/approvals and sbxtop/approve. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/client.h"
#include "core/log.h"
#include "core/util.h"
#include "tui/source-int.h"

#define REFRESH_MS 2000

struct remote {
	struct source	*src;
	struct client	*cl;
	int		 kick[2];	/* pipe: refresh now, or stop ("q") */
	pthread_t	 refresher;
	char		 sel[32];
	pthread_mutex_t	 mu;
};

static void
kick(struct remote *r, char c)
{
	if (write(r->kick[1], &c, 1) < 0) {
		/* A full pipe already asks for a refresh. */
	}
}

static void
post_list(struct remote *r)
{
	cJSON *args = cJSON_CreateObject(), *res = NULL, *m, *p;
	struct sbx_err e;

	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "name", "sandbox_list");
	cJSON_AddItemToObject(p, "arguments", args);
	if (client_call(r->cl, "tools/call", p, &res, &e) == 0) {
		cJSON *sc = cJSON_GetObjectItem(res, "structuredContent");
		m = cJSON_CreateObject();
		cJSON_AddItemToObject(m, "sandboxes", cJSON_Duplicate(
		    cJSON_GetObjectItem(sc, "sandboxes"), 1));
		source_post(r->src, "list", m);
	}
	cJSON_Delete(p);
	cJSON_Delete(res);
	p = NULL;
	res = NULL;
	if (client_call(r->cl, "sbxtop/clients", NULL, &res, &e) == 0) {
		m = cJSON_CreateObject();
		cJSON_AddItemToObject(m, "mcp", cJSON_Duplicate(cJSON_GetObjectItem(res, "mcp"),
		    1));
		source_post(r->src, "sessions", m);
	}
	cJSON_Delete(res);
}

static void *
refresher(void *arg)
{
	struct remote *r = arg;
	char c = 0;

	for (;;) {
		post_list(r);
		struct pollfd p = { r->kick[0], POLLIN, 0 };
		if (poll(&p, 1, REFRESH_MS) > 0 && read(r->kick[0], &c, 1) == 1 && c == 'q')
			break;
	}
	return NULL;
}

static void
on_event(const cJSON *ev, void *arg)
{
	struct remote *r = arg;
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "type"));
	const char *sb = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "sandbox"));
	const cJSON *d = cJSON_GetObjectItem(ev, "data");
	cJSON *m;

	if (type == NULL)
		return;
	if (strncmp(type, "sandbox.", 8) == 0 || strncmp(type, "forward.", 8) == 0 ||
	    strncmp(type, "approval.", 9) == 0)
		kick(r, 'r');
	/* Exec output comes as events from the core server. */
	if (strcmp(type, "exec.output") == 0 && sb != NULL) {
		m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "sandbox", sb);
		cJSON_AddItemToObject(m, "exec", cJSON_Duplicate(cJSON_GetObjectItem(d, "exec"),
		    1));
		cJSON_AddItemToObject(m, "data", cJSON_Duplicate(cJSON_GetObjectItem(d, "data"),
		    1));
		source_post(r->src, "output", m);
		return;
	}
	source_post(r->src, "event", cJSON_Duplicate(ev, 1));
}

static void
remote_select(struct source *s, const char *id)
{
	struct remote *r = s->impl;

	pthread_mutex_lock(&r->mu);
	snprintf(r->sel, sizeof r->sel, "%s", id ? id : "");
	pthread_mutex_unlock(&r->mu);
}

static int
remote_call(struct source *s, const char *tool, cJSON *args, cJSON **result,
    struct sbx_err *e)
{
	struct remote *r = s->impl;
	cJSON *p = cJSON_CreateObject(), *res = NULL;
	int rc;

	if (result)
		*result = NULL;
	cJSON_AddStringToObject(p, "name", tool);
	cJSON_AddItemToObject(p, "arguments", args);
	rc = client_call(r->cl, "tools/call", p, &res, e);
	cJSON_Delete(p);
	if (rc < 0)
		return -1;
	if (cJSON_IsTrue(cJSON_GetObjectItem(res, "isError"))) {
		const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "content"), 0);
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(c0, "text"));
		sbx_error(e, SBX_EINTERNAL, NULL, "%s", t ? t : "the tool failed");
		cJSON_Delete(res);
		return -1;
	}
	if (result)
		*result = cJSON_DetachItemFromObject(res, "structuredContent");
	cJSON_Delete(res);
	return 0;
}

static int
remote_approvals(struct source *s, cJSON **list, struct sbx_err *e)
{
	struct remote *r = s->impl;

	return client_call(r->cl, "sbxtop/approvals", NULL, list, e);
}

static int
remote_approve(struct source *s, const char *id, int allow, const char *reason,
    struct sbx_err *e)
{
	struct remote *r = s->impl;
	cJSON *p = cJSON_CreateObject();
	int rc;

	cJSON_AddStringToObject(p, "id", id);
	cJSON_AddBoolToObject(p, "allow", allow);
	if (reason && *reason)
		cJSON_AddStringToObject(p, "reason", reason);
	rc = client_call(r->cl, "sbxtop/approve", p, NULL, e);
	cJSON_Delete(p);
	return rc;
}

static int
remote_approve_mode(struct source *s, const char *mode, struct sbx_err *e)
{
	struct remote *r = s->impl;
	cJSON *p = cJSON_CreateObject();
	int rc;

	cJSON_AddStringToObject(p, "mode", mode);
	rc = client_call(r->cl, "sbxtop/approve_mode", p, NULL, e);
	cJSON_Delete(p);
	return rc;
}

static void
remote_free(struct source *s)
{
	struct remote *r = s->impl;

	kick(r, 'q');
	pthread_join(r->refresher, NULL);
	client_close(r->cl);
	source_fini(s);
	close(r->kick[0]);
	close(r->kick[1]);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static const struct source_ops remote_ops = {
	.kind = "local",
	.free = remote_free,
	.select = remote_select,
	.call = remote_call,
	.approvals = remote_approvals,
	.approve = remote_approve,
	.approve_mode = remote_approve_mode,
};

struct source *
source_remote_new(struct sbx_err *e)
{
	struct client *cl = client_connect("console", 1, e);
	struct source *s;
	struct remote *r;

	if (cl == NULL)
		return NULL;
	s = xcalloc(1, sizeof *s);
	r = xcalloc(1, sizeof *r);
	source_init(s, &remote_ops, r);
	r->src = s;
	r->cl = cl;
	pthread_mutex_init(&r->mu, NULL);
	if (pipe(r->kick) < 0)
		fatal("pipe: out of descriptors");
	if (client_subscribe(cl, 0, on_event, r, e) < 0) {
		client_close(cl);
		close(r->kick[0]);
		close(r->kick[1]);
		source_fini(s);
		close(s->wake);
		free(r);
		free(s);
		return NULL;
	}
	if (pthread_create(&r->refresher, NULL, refresher, r) != 0)
		fatal("cannot start the console's threads");
	return s;
}
