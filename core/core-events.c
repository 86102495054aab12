/* Core events: a bounded ring of numbered events, pushed to subscribers (the
 * console, MCP sessions) and replayable from a sequence number; and the
 * sandboxes the core found dead while reconciling, kept until a front end takes
 * them, so each is reported once (sandbox_list's "vanished"). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core-int.h"
#include "lib/util.h"

struct ev_slot {
	uint64_t	 seq;
	int64_t		 time_ms;
	char		*type;
	char		*sandbox;
	cJSON		*data;
};

struct sub {
	int		 handle;
	core_event_fn	 fn;
	void		*arg;
};

struct core_events {
	pthread_mutex_t	 mu;
	struct ev_slot	 ring[CORE_EVENTS_RING];
	uint64_t	 next_seq;
	struct sub	*subs;
	size_t		 nsubs;
	int		 next_handle;
	void		(*on_listen)(struct core *c);	/* a subscriber comes */
};

struct core_events *
core_events_new(void (*on_listen)(struct core *c))
{
	struct core_events *ev = xcalloc(1, sizeof *ev);

	ev->on_listen = on_listen;
	pthread_mutex_init(&ev->mu, NULL);
	ev->next_seq = 1;
	ev->next_handle = 1;
	return ev;
}

static void
slot_clear(struct ev_slot *s)
{
	free(s->type);
	free(s->sandbox);
	cJSON_Delete(s->data);
	memset(s, 0, sizeof *s);
}

void
core_events_free(struct core_events *ev)
{
	if (ev == NULL)
		return;
	for (size_t i = 0; i < CORE_EVENTS_RING; i++)
		slot_clear(&ev->ring[i]);
	free(ev->subs);
	pthread_mutex_destroy(&ev->mu);
	free(ev);
}

static void
to_event(const struct ev_slot *s, struct core_event *out)
{
	out->seq = s->seq;
	out->time_ms = s->time_ms;
	out->type = s->type;
	out->sandbox = s->sandbox;
	out->data = s->data;
}

/* Subscribers are called with the lock held, so they see events in order; they
 * must not emit or subscribe from inside the callback (queue work instead). */
uint64_t
core_events_emit(struct core *c, const char *type, const char *sandbox, cJSON *data)
{
	struct core_events *ev = core_events_of(c);
	struct ev_slot *s;
	struct core_event out;
	uint64_t seq;

	pthread_mutex_lock(&ev->mu);
	seq = ev->next_seq++;
	s = &ev->ring[seq % CORE_EVENTS_RING];
	slot_clear(s);
	s->seq = seq;
	s->time_ms = wall_ms();
	s->type = xstrdup(type);
	s->sandbox = sandbox ? xstrdup(sandbox) : NULL;
	s->data = data;
	to_event(s, &out);
	for (size_t i = 0; i < ev->nsubs; i++)
		ev->subs[i].fn(&out, ev->subs[i].arg);
	pthread_mutex_unlock(&ev->mu);
	return seq;
}

int
core_events_subscribe(struct core *c, core_event_fn fn, void *arg)
{
	struct core_events *ev = core_events_of(c);
	int h;

	/* Someone listens: the proxies' connections become events too. */
	ev->on_listen(c);
	pthread_mutex_lock(&ev->mu);
	ev->subs = xrealloc(ev->subs, (ev->nsubs + 1) * sizeof *ev->subs);
	h = ev->next_handle++;
	ev->subs[ev->nsubs++] = (struct sub){ h, fn, arg };
	pthread_mutex_unlock(&ev->mu);
	return h;
}

void
core_events_unsubscribe(struct core *c, int handle)
{
	struct core_events *ev = core_events_of(c);

	pthread_mutex_lock(&ev->mu);
	for (size_t i = 0; i < ev->nsubs; i++)
		if (ev->subs[i].handle == handle) {
			memmove(&ev->subs[i], &ev->subs[i + 1],
			    (ev->nsubs - i - 1) * sizeof *ev->subs);
			ev->nsubs--;
			break;
		}
	pthread_mutex_unlock(&ev->mu);
}

size_t
core_events_replay(struct core *c, uint64_t from, core_event_fn fn, void *arg,
    uint64_t *first)
{
	struct core_events *ev = core_events_of(c);
	uint64_t oldest, seq;
	size_t n = 0;

	pthread_mutex_lock(&ev->mu);
	oldest = ev->next_seq > CORE_EVENTS_RING ? ev->next_seq - CORE_EVENTS_RING : 1;
	if (first)
		*first = oldest;
	for (seq = from > oldest ? from : oldest; seq < ev->next_seq; seq++) {
		struct core_event out;
		to_event(&ev->ring[seq % CORE_EVENTS_RING], &out);
		fn(&out, arg);
		n++;
	}
	pthread_mutex_unlock(&ev->mu);
	return n;
}

int
core_events_subscribe_from(struct core *c, uint64_t from, core_event_fn fn, void *arg,
    uint64_t *first)
{
	struct core_events *ev = core_events_of(c);
	uint64_t oldest;
	int h;

	ev->on_listen(c);
	pthread_mutex_lock(&ev->mu);
	oldest = ev->next_seq > CORE_EVENTS_RING ? ev->next_seq - CORE_EVENTS_RING : 1;
	if (first)
		*first = oldest;
	for (uint64_t seq = from > oldest ? from : oldest; seq < ev->next_seq; seq++) {
		struct core_event out;
		to_event(&ev->ring[seq % CORE_EVENTS_RING], &out);
		fn(&out, arg);
	}
	ev->subs = xrealloc(ev->subs, (ev->nsubs + 1) * sizeof *ev->subs);
	h = ev->next_handle++;
	ev->subs[ev->nsubs++] = (struct sub){ h, fn, arg };
	pthread_mutex_unlock(&ev->mu);
	return h;
}

/* --- vanished sandboxes, each reported once ---------------------------------- */

#define VANISHED_MAX 256	/* older ones are dropped past this */

struct core_vanishing {
	pthread_mutex_t		 mu;
	struct core_vanished	 v[VANISHED_MAX];
	size_t			 n;
};

struct core_vanishing *
core_vanishing_new(void)
{
	struct core_vanishing *v = xcalloc(1, sizeof *v);

	pthread_mutex_init(&v->mu, NULL);
	return v;
}

void
core_vanishing_free(struct core_vanishing *v)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < v->n; i++)
		free(v->v[i].reason);
	pthread_mutex_destroy(&v->mu);
	free(v);
}

void
core_vanishing_note(struct core *c, const char *id, const char *api_key, const char *reason)
{
	struct core_vanishing *v = core_vanishing_of(c);

	pthread_mutex_lock(&v->mu);
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i].id, id) == 0) {	/* already waiting */
			pthread_mutex_unlock(&v->mu);
			return;
		}
	if (v->n == VANISHED_MAX) {
		free(v->v[0].reason);
		memmove(&v->v[0], &v->v[1], (VANISHED_MAX - 1) * sizeof v->v[0]);
		v->n--;
	}
	snprintf(v->v[v->n].id, sizeof v->v[v->n].id, "%s", id);
	snprintf(v->v[v->n].api_key, sizeof v->v[v->n].api_key, "%s", api_key ? api_key : "");
	v->v[v->n].reason = xstrdup(reason ? reason : "no reason given");
	v->n++;
	pthread_mutex_unlock(&v->mu);
}

void
core_vanished_take(struct core *c, struct core_vanished **out, size_t *n)
{
	struct core_vanishing *v = core_vanishing_of(c);

	pthread_mutex_lock(&v->mu);
	*n = 0;
	*out = xcalloc(v->n + 1, sizeof **out);
	/* Only what this thread's calls may see (core_act_for): another API
	 * key's stay for it. */
	for (size_t i = 0, k = 0; i < v->n; i++) {
		if (core_sees_key(v->v[i].api_key))
			(*out)[(*n)++] = v->v[i];
		else
			v->v[k++] = v->v[i];
	}
	v->n -= *n;
	pthread_mutex_unlock(&v->mu);
}

void
core_vanished_free(struct core_vanished *v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++)
		free(v[i].reason);
	free(v);
}
