/* Event ring and the GET /v1/events NDJSON stream. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/agent.h"
#include "agent/events.h"
#include "agent/http.h"
#include "lib/util.h"

static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cv = PTHREAD_COND_INITIALIZER;
static char *ring[EVENTS_RING];		/* serialized lines, '\n'-terminated */
static uint64_t next_seq = 1;		/* seq of the next event */
static int stopping;

uint64_t
events_emit(const char *type, cJSON *fields)
{
	cJSON *o = cJSON_CreateObject();
	uint64_t seq;
	char *line;

	pthread_mutex_lock(&ev_mu);
	seq = next_seq++;
	cJSON_AddNumberToObject(o, "seq", (double)seq);
	cJSON_AddStringToObject(o, "type", type);
	cJSON_AddNumberToObject(o, "ts_ms", (double)wall_ms());
	if (fields != NULL) {
		cJSON *f;
		while ((f = fields->child) != NULL) {
			cJSON_DetachItemViaPointer(fields, f);
			cJSON_AddItemToObject(o, f->string, f);
		}
		cJSON_Delete(fields);
	}
	line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	size_t n = strlen(line);
	line = xrealloc(line, n + 2);
	line[n] = '\n';
	line[n + 1] = '\0';
	free(ring[seq % EVENTS_RING]);
	ring[seq % EVENTS_RING] = line;
	pthread_cond_broadcast(&ev_cv);
	pthread_mutex_unlock(&ev_mu);
	return seq;
}

void
events_shutdown(void)
{
	pthread_mutex_lock(&ev_mu);
	stopping = 1;
	pthread_cond_broadcast(&ev_cv);
	pthread_mutex_unlock(&ev_mu);
}

struct follower {
	uint64_t	 seq;		/* next seq to send */
	int		 follow;
	int		 fd;		/* client socket, to notice it leaving */
	char		*pending;	/* a line that did not fit the last buffer */
	size_t		 pending_off;
};

static ssize_t
events_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct follower *f = cls;
	size_t n = 0;

	pthread_mutex_lock(&ev_mu);
	for (;;) {
		if (f->pending == NULL) {
			uint64_t oldest = next_seq > EVENTS_RING ? next_seq - EVENTS_RING : 1;
			if (f->seq < oldest) {
				/* The ring moved on: say what was lost, then go on. */
				f->pending = xasprintf("{\"type\":\"gap\",\"from\":%llu,\"to\":%llu}\n",
				    (unsigned long long)f->seq, (unsigned long long)oldest - 1);
				f->seq = oldest;
			} else if (f->seq < next_seq)
				f->pending = xstrdup(ring[f->seq++ % EVENTS_RING]);
		}
		if (f->pending != NULL) {
			size_t len = strlen(f->pending + f->pending_off);
			size_t k = len < max - n ? len : max - n;
			memcpy(buf + n, f->pending + f->pending_off, k);
			n += k;
			f->pending_off += k;
			if (k == len) {
				free(f->pending);
				f->pending = NULL;
				f->pending_off = 0;
				continue;
			}
		}
		if (n > 0)
			break;
		if (!f->follow || stopping) {
			pthread_mutex_unlock(&ev_mu);
			return HTTP_STREAM_END;
		}
		if (http_peer_gone(f->fd)) {
			pthread_mutex_unlock(&ev_mu);
			return HTTP_STREAM_ERROR;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&ev_cv, &ev_mu, &ts);
	}
	pthread_mutex_unlock(&ev_mu);
	return (ssize_t)n;
}

static void
events_free(void *cls)
{
	struct follower *f = cls;
	free(f->pending);
	free(f);
}

static enum http_rc
events_get(struct req *r)
{
	const char *from = http_query(r, "from"), *follow = http_query(r, "follow");
	struct follower *f = xcalloc(1, sizeof *f);
	char *end;

	f->seq = 1;
	if (from != NULL) {
		unsigned long long v = strtoull(from, &end, 10);
		if (*from == '\0' || *end != '\0') {
			free(f);
			return http_bad_request(r, "query 'from' must be a sequence number");
		}
		f->seq = v ? v : 1;
	}
	f->follow = follow == NULL || strcmp(follow, "0") != 0;
	f->fd = http_conn_fd(r);
	return http_stream(r, HTTP_STATUS_OK, "application/x-ndjson", events_read, f, events_free);
}

const struct route events_routes[] = {
	{ "GET", "/v1/events", 0, events_get, NULL, 0 },
	{ NULL, NULL, 0, NULL, NULL, 0 }
};
