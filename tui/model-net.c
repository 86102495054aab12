/* The console's model of the network policy (see net.c for the tab and the
 * answers): the selected sandbox's core_net_show, kept up to date by the
 * net.* events, and what every sandbox's policy holds for the operator, which
 * joins the held tool calls in one queue.  No curses here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jspec.h"
#include "lib/util.h"
#include "tui/model.h"

#define NET_KEEP	500	/* connections kept for the tab */

/* --- the model ------------------------------------------------------------- */

int
model_net_ask_find(const cJSON *asks, const char *sandbox, const char *req)
{
	int i = 0;
	const cJSON *a;

	cJSON_ArrayForEach(a, asks) {
		if (strcmp(jstr(a, "req", ""), req) == 0 && strcmp(jstr(a, "sandbox", ""), sandbox) == 0)
			return i;
		i++;
	}
	return -1;
}

static void
count_add(cJSON *net, const char *k, double by)
{
	cJSON *c = cJSON_GetObjectItem(net, "counts"), *v;

	if (!cJSON_IsObject(c))
		return;
	if ((v = cJSON_GetObjectItem(c, k)) != NULL && cJSON_IsNumber(v))
		cJSON_SetNumberValue(v, v->valuedouble + by);
	else
		cJSON_AddNumberToObject(c, k, by);
}

/* The selected sandbox's tab: event ev's line added, its counts and rules
 * brought up to date. */
static int
net_event_selected(struct model *m, const char *type, const cJSON *ev, const cJSON *d)
{
	cJSON *recent = cJSON_GetObjectItem(m->net, "recent"), *line, *pol;

	if (!cJSON_IsArray(recent))
		return 0;
	line = cJSON_Duplicate(d, 1);
	if (cJSON_GetObjectItem(line, "time_ms") == NULL)
		cJSON_AddNumberToObject(line, "time_ms", jnum(ev, "time_ms", 0));
	cJSON_AddStringToObject(line, "type", type + 4);
	cJSON_AddItemToArray(recent, line);
	while (cJSON_GetArraySize(recent) > NET_KEEP)
		cJSON_DeleteItemFromArray(recent, 0);
	if (strcmp(type, "net.connection") == 0) {
		count_add(m->net, strcmp(jstr(d, "verdict", ""), "allow") == 0 ? "allowed" : "denied", 1);
		count_add(m->net, "bytes_up", jnum(d, "up", 0));
		count_add(m->net, "bytes_down", jnum(d, "down", 0));
	} else if (strcmp(type, "net.ask") == 0 && strcmp(jstr(d, "kind", ""), "connection") == 0) {
		count_add(m->net, "asked", 1);
	} else if (strcmp(type, "net.policy") == 0 &&
	    cJSON_IsObject(pol = cJSON_GetObjectItem(m->net, "policy"))) {
		static const char *const keys[] = { "allow", "deny", "ask" };
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
			if (cJSON_GetObjectItem(d, keys[i]) != NULL)
				cJSON_ReplaceItemInObject(pol, keys[i], cJSON_Duplicate(
				    cJSON_GetObjectItem(d, keys[i]), 1));
	}
	return DIRTY_RIGHT;
}

int
model_net(struct model *m, const char *k, const cJSON *msg)
{
	const cJSON *d = cJSON_GetObjectItem(msg, "data");
	const char *type, *sb;
	int dirty = 0, i;

	if (strcmp(k, "net") == 0) {
		if (strcmp(jstr(msg, "verb", ""), "show") != 0 || !cJSON_IsTrue(cJSON_GetObjectItem(msg,
		    "ok")) || strcmp(jstr(d, "id", ""), m->sel) != 0)
			return 0;
		cJSON_Delete(m->net);
		m->net = cJSON_Duplicate(d, 1);
		return DIRTY_RIGHT;
	}
	if (strcmp(k, "net_pending") == 0) {
		cJSON_Delete(m->net_asks);
		m->net_asks = cJSON_Duplicate(cJSON_GetObjectItem(msg, "pending"), 1);
		return DIRTY_PROMPT | DIRTY_TITLE | DIRTY_RIGHT;
	}
	/* A core event. */
	type = jstr(msg, "type", "");
	sb = jstr(msg, "sandbox", "");
	if (m->net != NULL && *sb && strcmp(sb, m->sel) == 0 && d != NULL)
		dirty |= net_event_selected(m, type, msg, d);
	if (m->net_asks == NULL)
		m->net_asks = cJSON_CreateArray();
	if (strcmp(type, "net.ask") == 0 && *jstr(d, "req", "") && model_net_ask_find(m->net_asks, sb,
	    jstr(d, "req", "")) < 0) {
		cJSON *a = cJSON_Duplicate(d, 1);
		cJSON_AddStringToObject(a, "sandbox", sb);
		cJSON_AddItemToArray(m->net_asks, a);
		dirty |= DIRTY_PROMPT | DIRTY_TITLE;
	} else if (strcmp(type, "net.decided") == 0 &&
	    (i = model_net_ask_find(m->net_asks, sb, jstr(d, "req", ""))) >= 0) {
		cJSON_DeleteItemFromArray(m->net_asks, i);
		dirty |= DIRTY_PROMPT | DIRTY_TITLE;
	}
	return dirty;
}

/* A held connection is answered by its proxy's timeout when nobody does: it
 * leaves the queue then, before the next list says so. */
static int
ask_live(const cJSON *a)
{
	double exp = jnum(a, "expires_ms", 0);

	return !(exp > 0) || exp > (double)wall_ms();
}

size_t
model_queue_n(const struct model *m)
{
	size_t n = m->approvals ? (size_t)cJSON_GetArraySize(m->approvals) : 0;
	const cJSON *a;

	cJSON_ArrayForEach(a, m->net_asks)
		n += ask_live(a);
	return n;
}

const cJSON *
model_queue_at(const struct model *m, size_t i, int *net)
{
	size_t na = m->approvals ? (size_t)cJSON_GetArraySize(m->approvals) : 0;
	const cJSON *a;

	*net = 0;
	if (i < na)
		return cJSON_GetArrayItem(m->approvals, (int)i);
	i -= na;
	*net = 1;
	cJSON_ArrayForEach(a, m->net_asks)
		if (ask_live(a) && i-- == 0)
			return a;
	return NULL;
}

void
model_net_dest(const cJSON *o, char *buf, size_t len)
{
	const char *h = jstr(o, "host", "");
	int port = (int)jnum(o, "port", 0), v6 = strchr(h, ':') != NULL;

	if (port > 0)
		snprintf(buf, len, "%s%s%s:%d", v6 ? "[" : "", *h ? h : "?", v6 ? "]" : "", port);
	else
		snprintf(buf, len, "%s", *h ? h : "?");
}

