/* The Streamable HTTP transport's streams and sessions: what a POST or a GET
 * stream waits on, and the table of sessions with their references.  The
 * routing of what a session says is mcp/http.c's file-top comment. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/util.h"
#include "mcp/http-sess.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"

/* --- streams ------------------------------------------------------------- */

struct stream *
hstream_new(struct sess *hs, const cJSON *id)
{
	struct stream *st = xcalloc(1, sizeof *st);

	st->hs = hs;
	st->tail = &st->head;
	if (id != NULL)
		st->id = cJSON_Duplicate(id, 1);
	return st;
}

void
hstream_free(struct stream *st)
{
	struct item *it, *nx;

	for (it = st->head; it != NULL; it = nx) {
		nx = it->next;
		free(it->text);
		free(it);
	}
	cJSON_Delete(st->id);
	free(st->out);
	free(st);
}

/* With hs->mu held. */
void
hstream_push(struct stream *st, const char *msg, size_t len, int response)
{
	struct item *it;

	if (!response && st->bytes + len > QUEUE_MAX) {
		if (st->dropped++ == 0)
			log_warnx("mcp http: session %.8s: the client reads too slowly; "
			    "notifications dropped", st->hs->id);
		return;
	}
	it = xcalloc(1, sizeof *it);
	it->text = xstrndup(msg, len);
	it->len = len;
	it->response = response;
	*st->tail = it;
	st->tail = &it->next;
	if (response)
		st->answered = 1;
	else
		st->bytes += len;
}

/* With hs->mu held. */
struct item *
hstream_pop(struct stream *st)
{
	struct item *it = st->head;

	if (it == NULL)
		return NULL;
	st->head = it->next;
	if (st->head == NULL)
		st->tail = &st->head;
	if (!it->response)
		st->bytes -= it->len;
	return it;
}

struct stream *
hsess_find_post(struct sess *hs, const cJSON *id)
{
	for (struct stream *st = hs->posts; st != NULL; st = st->next)
		if (st->id != NULL && jsonrpc_id_equal(st->id, id))
			return st;
	return NULL;
}

void
hsess_unlink_post(struct sess *hs, struct stream *st)
{
	for (struct stream **pp = &hs->posts; *pp != NULL; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			return;
		}
}

/* --- sessions ------------------------------------------------------------ */

/* The session's send callback: route msg as the file-top comment says. */
static void
session_send(void *arg, const char *msg, size_t len)
{
	static const char notif[] = "{\"jsonrpc\":\"2.0\",\"method\"";
	struct sess *hs = arg;
	int response = !(len >= sizeof notif - 1 && memcmp(msg, notif, sizeof notif - 1) == 0);
	const cJSON *rid = mcp_related_request();
	struct stream *st = NULL;

	pthread_mutex_lock(&hs->mu);
	if (hs->ended) {
		pthread_mutex_unlock(&hs->mu);
		return;
	}
	if (hs->sse)
		st = hs->get;	/* HTTP+SSE: its one stream says everything */
	else if (http_feeding != NULL && http_feeding->hs == hs)
		st = http_feeding;
	else if (rid != NULL)
		st = hsess_find_post(hs, rid);
	if (st == NULL && response) {
		/* Not expected (every response has its POST); find it by its id. */
		cJSON *o = cJSON_ParseWithLength(msg, len);
		st = hsess_find_post(hs, cJSON_GetObjectItemCaseSensitive(o, "id"));
		cJSON_Delete(o);
	}
	if (st == NULL && hs->ephemeral)
		st = hs->posts;	/* a 2026-07-28 POST's session serves it alone */
	if (st != NULL && st != hs->get && st->answered)
		st = NULL;	/* a late notification: the POST's stream is over */
	if (st == NULL && !response)
		st = hs->get;
	if (st != NULL)
		hstream_push(st, msg, len, response && (st != hs->get || hs->sse));
	else if (response)
		log_warnx("mcp http: session %.8s: a response with no request waiting; "
		    "dropped", hs->id);
	pthread_cond_broadcast(&hs->cv);
	pthread_mutex_unlock(&hs->mu);
}

struct sess *
hsess_new(struct mcp_http *h, const struct mcp_http_caller *who)
{
	struct sess *hs = xcalloc(1, sizeof *hs);

	/* 256 bits from the kernel's CSPRNG: a session id cannot be guessed. */
	random_hex(hs->id, 32);
	hs->h = h;
	hs->refs = 1;
	hs->used_ms = now_ms();
	pthread_mutex_init(&hs->mu, NULL);
	pthread_mutex_init(&hs->feed_mu, NULL);
	pthread_cond_init(&hs->cv, NULL);
	hs->since_ms = wall_ms();
	hs->who = *who;
	hs->ms = mcp_session_new(h->core, "http", session_send, hs);
	if (h->on_session != NULL)
		h->on_session(h->on_session_arg, hs->ms, who);
	return hs;
}

/* Wake everything waiting on hs and make it stop: streams end, sends drop. */
void
hsess_end(struct sess *hs)
{
	pthread_mutex_lock(&hs->mu);
	hs->ended = 1;
	pthread_cond_broadcast(&hs->cv);
	pthread_mutex_unlock(&hs->mu);
}

void
hsess_unref(struct sess *hs)
{
	struct mcp_http *h = hs->h;
	int last;

	pthread_mutex_lock(&h->mu);
	last = --hs->refs == 0;
	pthread_mutex_unlock(&h->mu);
	if (!last)
		return;
	/* Cancels what is still running (an exec is killed) and waits for it;
	 * whatever those workers send meanwhile is dropped (ended). */
	hsess_end(hs);
	mcp_session_close(hs->ms);
	pthread_cond_destroy(&hs->cv);
	pthread_mutex_destroy(&hs->feed_mu);
	pthread_mutex_destroy(&hs->mu);
	free(hs);
}

/* The session named id, with a reference; NULL when unknown or ended, or
 * when it is another credential's (who). */
struct sess *
hsess_find(struct mcp_http *h, const char *id, const struct mcp_http_caller *who)
{
	struct sess *hs;

	pthread_mutex_lock(&h->mu);
	for (hs = h->sessions; hs != NULL; hs = hs->next)
		if (ct_streq(hs->id, id) && strcmp(hs->who.key_id, who->key_id) == 0) {
			hs->refs++;
			hs->used_ms = now_ms();
			break;
		}
	pthread_mutex_unlock(&h->mu);
	return hs;
}

/* Take hs out of the table (it then ends when its last user lets go); 0 when it
 * was not there. */
int
hsess_remove(struct mcp_http *h, struct sess *hs)
{
	int found = 0;

	pthread_mutex_lock(&h->mu);
	for (struct sess **pp = &h->sessions; *pp != NULL; pp = &(*pp)->next)
		if (*pp == hs) {
			*pp = hs->next;
			h->nsessions--;
			found = 1;
			break;
		}
	pthread_mutex_unlock(&h->mu);
	if (found) {
		hsess_end(hs);
		hsess_unref(hs);	/* the table's reference */
	}
	return found;
}

/* Make room for a new session: end those unused for SESSION_IDLE_MS with no
 * request or stream open.  0 when there is room. */
int
hsess_make_room(struct mcp_http *h)
{
	struct sess *victim;
	int64_t now = now_ms();

	for (;;) {
		victim = NULL;
		pthread_mutex_lock(&h->mu);
		if (h->nsessions < SESSIONS_MAX) {
			pthread_mutex_unlock(&h->mu);
			return 0;
		}
		for (struct sess *hs = h->sessions; hs != NULL; hs = hs->next)
			if (hs->refs == 1 && now - hs->used_ms > SESSION_IDLE_MS)
				victim = hs;
		if (victim != NULL)
			victim->refs++;
		pthread_mutex_unlock(&h->mu);
		if (victim == NULL)
			return -1;
		log_info("mcp http: session %.8s unused for an hour: ended for a new one",
		    victim->id);
		hsess_remove(h, victim);
		hsess_unref(victim);
	}
}
