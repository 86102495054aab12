/* STUB, deleted at merge: minimal mcp_call_* helpers (see call-stub.h) until the
 * protocol layer (sessions, progress, cancellation) lands. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/util.h"
#include "mcp/call-stub.h"

struct mcp_call {
	struct core	*core;
	char		*client;
	int		 cancelled;	/* atomic */
	pthread_mutex_t	 mu;
	int		 nprogress;
	char		*last;
};

struct mcp_call *
mcp_call_stub_new(struct core *c, const char *client)
{
	struct mcp_call *call = xcalloc(1, sizeof *call);

	call->core = c;
	call->client = client ? xstrdup(client) : NULL;
	pthread_mutex_init(&call->mu, NULL);
	return call;
}

void
mcp_call_stub_free(struct mcp_call *call)
{
	if (call == NULL)
		return;
	free(call->client);
	free(call->last);
	pthread_mutex_destroy(&call->mu);
	free(call);
}

void mcp_call_stub_cancel(struct mcp_call *call)
{ __atomic_store_n(&call->cancelled, 1, __ATOMIC_SEQ_CST); }

int
mcp_call_stub_progress_count(struct mcp_call *call)
{
	int n;

	pthread_mutex_lock(&call->mu);
	n = call->nprogress;
	pthread_mutex_unlock(&call->mu);
	return n;
}

const char *
mcp_call_stub_last_message(struct mcp_call *call)
{
	return call->last;
}

struct core *mcp_call_core(struct mcp_call *call) { return call->core; }
const char *mcp_call_client(struct mcp_call *call) { return call->client; }

void
mcp_call_progress(struct mcp_call *call, double progress, double total,
    const char *message)
{
	(void)progress;
	(void)total;
	pthread_mutex_lock(&call->mu);
	call->nprogress++;
	if (message != NULL) {
		free(call->last);
		call->last = xstrdup(message);
	}
	pthread_mutex_unlock(&call->mu);
}

int mcp_call_cancelled(struct mcp_call *call)
{ return __atomic_load_n(&call->cancelled, __ATOMIC_SEQ_CST); }

void
mcp_call_log(struct mcp_call *call, const char *level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	(void)call;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	log_debug("mcp log (%s): %s", level, msg);
}
