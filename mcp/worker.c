/* The worker threads of a session (see session-int.h): tool calls and
 * resource reads are queued to workers kept between calls, at most
 * INFLIGHT_MAX at once, so a slow exec never holds up a ping. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/util.h"
#include "mcp/session-int.h"

#define WORKER_IDLE_MS	10000		/* an idle worker thread ends after this */

/* The request a worker thread is running, for transports that send a request's
 * notifications on that request's own stream (mcp_related_request). */
static __thread const cJSON *current_request;

const cJSON *
mcp_related_request(void)
{
	return current_request;
}

void
sess_set_related(const cJSON *id)
{
	current_request = id;
}

#define call_free sess_call_free

/* Run one call on this worker thread and retire it. */
static void
run_call(struct mcp_call *call)
{
	struct mcp_session *s = call->s;
	struct mcp_call **pp;
	struct sess_fault f = { 0, "", NULL };
	char *text = NULL;
	cJSON *r;

	current_request = call->id;
	sess_act_for(call);
	r = call->work(call, &f);
	if (r != NULL && call->ri.modern)
		sess_modern_result(r, call->ri.method);
	/* A cancelled request gets no answer at all (the client has moved on). */
	if (!mcp_call_cancelled(call)) {
		if (r != NULL)
			text = jsonrpc_result(call->id, steal_pointer(&r));
		else if (f.code != 0)
			text = jsonrpc_error(call->id, f.code, f.msg, steal_pointer(&f.data));
		if (text != NULL)
			sess_send_text(s, text);
	}
	cJSON_Delete(r);
	cJSON_Delete(f.data);
	current_request = NULL;
	sess_act_for(NULL);

	pthread_mutex_lock(&s->mu);
	for (pp = &s->calls; *pp != NULL; pp = &(*pp)->next)
		if (*pp == call) {
			*pp = call->next;
			break;
		}
	call_free(call);
	s->inflight--;
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->mu);
}

/* A worker takes queued calls until it has been idle WORKER_IDLE_MS or the
 * session closes.  Threads are kept rather than made per call: a fresh thread
 * pays for its thread-local state (libcurl's, OpenSSL's, a malloc arena) on
 * its first request, about a millisecond, more than MCP itself costs. */
static void *
worker(void *arg)
{
	struct mcp_session *s = arg;
	struct mcp_call *call;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		int timed_out = 0;

		while (s->qhead == NULL && !s->closing && !timed_out) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += WORKER_IDLE_MS / 1000;
			s->nidle++;
			timed_out = pthread_cond_timedwait(&s->work, &s->mu, &ts) == ETIMEDOUT;
			s->nidle--;
		}
		if ((call = s->qhead) == NULL)
			break;
		s->qhead = call->qnext;
		if (s->qhead == NULL)
			s->qtail = &s->qhead;
		s->qlen--;
		pthread_mutex_unlock(&s->mu);
		run_call(call);
		pthread_mutex_lock(&s->mu);
	}
	s->done[s->ndone++] = pthread_self();
	s->nworkers--;
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Join the workers that are done; with s->mu held. */
void
sess_reap_workers(struct mcp_session *s)
{
	while (s->ndone > 0)
		pthread_join(s->done[--s->ndone], NULL);
}

/* Hand the request (taken) to a worker; answers -32000 when too many run. */
void
sess_dispatch(struct mcp_session *s, struct jsonrpc_msg *m, const struct mcp_tool *tool,
    const struct mcp_reqinfo *ri, sess_work_fn *work)
{
	struct mcp_call *call = xcalloc(1, sizeof *call);
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(m->params, "_meta");
	const cJSON *tok = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
	pthread_t th;
	int busy = 0, closing, spawn_failed = 0;

	call->s = s;
	call->req = steal_pointer(&m->root);
	call->id = m->id;
	call->params = m->params;
	call->method = m->method;
	call->tool = tool;
	call->work = work;
	if (ri != NULL)
		call->ri = *ri;
	else
		sess_reqinfo_legacy(s, &call->ri);
	sess_call_bind(call, s);
	if (cJSON_IsString(tok) || cJSON_IsNumber(tok))
		call->token = tok;
	pthread_mutex_init(&call->progress_mu, NULL);

	pthread_mutex_lock(&s->mu);
	sess_reap_workers(s);
	closing = s->closing;
	if (!closing && s->inflight >= INFLIGHT_MAX)
		busy = 1;
	if (!closing && !busy) {
		/* Every queued call has an idle worker to take it, or a new one. */
		if (s->qlen + 1 > s->nidle && s->nworkers < INFLIGHT_MAX) {
			if (pthread_create(&th, NULL, worker, s) == 0)
				s->nworkers++;
			else
				spawn_failed = s->nworkers == 0;
		}
		if (!spawn_failed) {
			call->next = s->calls;
			s->calls = call;
			s->inflight++;
			*s->qtail = call;
			s->qtail = &call->qnext;
			s->qlen++;
			pthread_cond_signal(&s->work);
		}
	}
	pthread_mutex_unlock(&s->mu);
	if (closing) {
		call_free(call);
		return;
	}
	if (busy) {
		sess_send_error(s, call->id, JSONRPC_SERVER_BUSY, "Server busy: %d requests are "
		    "already running; retry when one has finished", INFLIGHT_MAX);
		call_free(call);
		return;
	}
	if (spawn_failed) {
		sess_send_error(s, call->id, JSONRPC_INTERNAL_ERROR, "Internal error: cannot start "
		    "a worker thread; retry");
		call_free(call);
	}
}
