/* The part of a console source that both implementations share: a queue of
 * messages from the source's threads to the console's one thread, an eventfd
 * that wakes the console's poll, and workers for asynchronous tool calls. */
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "lib/util.h"
#include "tui/source-int.h"

struct source_msg {
	struct source_msg	*next;
	cJSON			*m;
};

void
source_init(struct source *s, const struct source_ops *ops, void *impl)
{
	memset(s, 0, sizeof *s);
	s->ops = ops;
	s->impl = impl;
	s->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake < 0)
		fatal("eventfd: out of descriptors");
	pthread_mutex_init(&s->mu, NULL);
}

void
source_post(struct source *s, const char *k, cJSON *m)
{
	struct source_msg *q;
	uint64_t one = 1;
	int wake;

	cJSON_AddStringToObject(m, "k", k);
	pthread_mutex_lock(&s->mu);
	/* A console that cannot keep up loses output, never state changes. */
	if (s->queued >= SOURCE_QUEUE_MAX && (strcmp(k, "output") == 0 ||
	    (strcmp(k, "log") == 0 && !cJSON_IsTrue(cJSON_GetObjectItem(m, "reset"))))) {
		s->dropped++;
		pthread_mutex_unlock(&s->mu);
		cJSON_Delete(m);
		return;
	}
	q = xmalloc(sizeof *q);
	q->next = NULL;
	q->m = m;
	if (s->tail)
		s->tail->next = q;
	else
		s->head = q;
	s->tail = q;
	wake = s->queued++ == 0;
	pthread_mutex_unlock(&s->mu);
	/* Only the first message of a batch needs to wake the console. */
	if (wake && write(s->wake, &one, sizeof one) < 0) {
		/* The counter is full only when the console is gone. */
	}
}

cJSON *
source_next(struct source *s)
{
	struct source_msg *q;
	cJSON *m = NULL;
	uint64_t v;

	pthread_mutex_lock(&s->mu);
	if ((q = s->head) != NULL) {
		s->head = q->next;
		if (s->head == NULL)
			s->tail = NULL;
		s->queued--;
		m = q->m;
		free(q);
	}
	if (s->head == NULL && read(s->wake, &v, sizeof v) < 0) {
		/* Already drained. */
	}
	pthread_mutex_unlock(&s->mu);
	return m;
}

int
source_wake_fd(const struct source *s)
{
	return s->wake;
}

const char *
source_kind(const struct source *s)
{
	return s->ops->kind;
}

struct async {
	struct source	*s;
	char		*tool;
	char		*what;
	cJSON		*args;
	int		 net;		/* source_net_async: tool is the verb */
};

static void *
async_run(void *arg)
{
	struct async *a = arg;
	struct sbx_err e;
	cJSON *res = NULL, *m = cJSON_CreateObject();
	/* The args go with the call: the sandbox they name is kept first. */
	const char *sb = cJSON_GetStringValue(cJSON_GetObjectItem(a->args, "sandbox_id"));
	_cleanup_free_ char *sandbox = sb ? xstrdup(sb) : NULL;
	int rc = a->net ? source_net(a->s, a->tool, a->args, &res, &e) :
	    a->s->ops->call(a->s, a->tool, a->args, &res, &e);

	cJSON_AddStringToObject(m, a->net ? "verb" : "what", a->what);
	if (sandbox != NULL)
		cJSON_AddStringToObject(m, "sandbox", sandbox);
	cJSON_AddBoolToObject(m, "ok", rc == 0);
	if (rc < 0)
		cJSON_AddStringToObject(m, "message", e.msg);
	if (rc < 0 && e.hint[0])
		cJSON_AddStringToObject(m, "hint", e.hint);
	cJSON_AddItemToObject(m, "data", res ? res : cJSON_CreateNull());
	source_post(a->s, a->net ? "net" : "result", m);
	free(a->tool);
	free(a->what);
	free(a);
	return NULL;
}

static void
async_start(struct source *s, const char *tool, cJSON *args, const char *what, int net)
{
	struct async *a = xcalloc(1, sizeof *a);
	pthread_t t;

	a->s = s;
	a->net = net;
	a->tool = xstrdup(tool);
	a->what = xstrdup(what);
	a->args = args;
	if (pthread_create(&t, NULL, async_run, a) != 0) {
		/* No thread to spare: run it here, the console waits. */
		async_run(a);
		return;
	}
	pthread_mutex_lock(&s->mu);
	s->workers = xrealloc(s->workers, (s->nworkers + 1) * sizeof *s->workers);
	s->workers[s->nworkers++] = t;
	pthread_mutex_unlock(&s->mu);
}

void
source_call_async(struct source *s, const char *tool, cJSON *args, const char *what)
{
	async_start(s, tool, args, what, 0);
}

void
source_net_async(struct source *s, const char *verb, cJSON *params)
{
	async_start(s, verb, params, verb, 1);
}

int
source_net(struct source *s, const char *verb, cJSON *params, cJSON **result,
    struct sbx_err *e)
{
	cJSON *r = NULL;
	int rc;

	if (result)
		*result = NULL;
	if (s->ops->net == NULL) {
		cJSON_Delete(params);
		return sbx_error(e, SBX_EUNSUPPORTED, NULL, "no network policy here");
	}
	rc = s->ops->net(s, verb, params, &r, e);
	cJSON_Delete(params);
	if (rc == 0 && result)
		*result = r;
	else
		cJSON_Delete(r);
	return rc;
}

void
source_fini(struct source *s)
{
	cJSON *m;

	for (size_t i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);
	free(s->workers);
	s->workers = NULL;
	s->nworkers = 0;
	while ((m = source_next(s)) != NULL)
		cJSON_Delete(m);
}

void
source_free(struct source *s)
{
	if (s == NULL)
		return;
	s->ops->free(s);
	close(s->wake);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void
source_select(struct source *s, const char *id)
{
	s->ops->select(s, id);
}

char *
source_log_path(struct source *s, const char *id)
{
	return s->ops->log_path ? s->ops->log_path(s, id) : NULL;
}

int
source_call(struct source *s, const char *tool, cJSON *args, cJSON **result,
    struct sbx_err *e)
{
	return s->ops->call(s, tool, args, result, e);
}

int
source_approvals(struct source *s, cJSON **list, struct sbx_err *e)
{
	*list = NULL;
	if (s->ops->approvals == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "run the console without --standalone",
		    "approvals need the core server");
	return s->ops->approvals(s, list, e);
}

int
source_approve(struct source *s, const char *id, int allow, const char *reason,
    struct sbx_err *e)
{
	if (s->ops->approve == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "run the console without --standalone",
		    "approvals need the core server");
	return s->ops->approve(s, id, allow, reason, e);
}

int
source_approve_mode(struct source *s, const char *mode, struct sbx_err *e)
{
	if (s->ops->approve_mode == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "run the console without --standalone",
		    "approvals need the core server");
	return s->ops->approve_mode(s, mode, e);
}

int
source_pty_open(struct source *s, const char *id, int cols, int rows, struct sbx_err *e)
{
	if (s->ops->pty_open == NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, NULL, "shells are not available here");
	return s->ops->pty_open(s, id, cols, rows, e);
}
