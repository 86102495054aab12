/* Vanished sandboxes: ones the core found dead while reconciling, kept until a
 * front end takes them, so each is reported once (sandbox_list's "vanished"). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core-int.h"
#include "lib/util.h"

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
core_vanishing_note(struct core *c, const char *id, const char *reason)
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
	v->v[v->n].reason = xstrdup(reason ? reason : "no reason given");
	v->n++;
	pthread_mutex_unlock(&v->mu);
}

void
core_vanished_take(struct core *c, struct core_vanished **out, size_t *n)
{
	struct core_vanishing *v = core_vanishing_of(c);

	pthread_mutex_lock(&v->mu);
	*n = v->n;
	*out = xcalloc(v->n + 1, sizeof **out);
	memcpy(*out, v->v, v->n * sizeof v->v[0]);
	v->n = 0;
	pthread_mutex_unlock(&v->mu);
}

void
core_vanished_free(struct core_vanished *v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++)
		free(v[i].reason);
	free(v);
}
