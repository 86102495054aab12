/* Prometheus metrics for /metrics (http.h): sandboxes by state and backend, MCP
 * tool calls by tool and outcome, exec durations as a histogram.  Every label
 * comes from a fixed set (the state names, the compiled-in backends, the mcp_tools[]
 * table, three outcomes), never from input such as sandbox ids or client names,
 * so the number of series stays bounded whatever the clients do.  Per-sandbox
 * series (state, execs, forward bytes) are labelled with the sandbox id and
 * kept for at most SANDBOXES_MAX sandboxes; execs of any more are counted
 * under sandbox="other", and a sandbox's series go when it does.  The network
 * counters of a sandbox with rules are its proxy's totals (counts.json).  Tool
 * calls made with an API key are counted by its name, the one label an
 * operator chooses: at most KEYS_MAX names (the calls of any more under
 * key="other"), each escaped as the text format says. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "core/keys/keys.h"
#include "core/net.h"
#include "core/sandbox.h"
#include "lib/util.h"
#include "mcp/http.h"
#include "mcp/tool.h"

#define NSTATES		(SBX_UNREACHABLE + 1)
#define NOUTCOMES	3
#define TOOLS_MAX	64
#define BACKENDS_MAX	16
#define SANDBOXES_MAX	64	/* sandboxes with series of their own */
#define KEYS_MAX	32	/* API keys' names with series of their own */

static const char *const outcomes[NOUTCOMES] = { "ok", "error", "cancelled" };
/* Upper bounds in seconds: from a quick `true` to an hour-long build. */
static const double buckets[] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600,
};
#define NBUCKETS (sizeof buckets / sizeof buckets[0])

struct mcp_metrics {
	struct core	*core;
	int		 sub;
	pthread_mutex_t	 mu;
	uint64_t	 calls[TOOLS_MAX][NOUTCOMES];
	uint64_t	 exec_bucket[NBUCKETS];	/* not cumulative here */
	uint64_t	 exec_count;
	double		 exec_sum;		/* seconds */
	/* Execs per sandbox; the last slot is "other". */
	struct sbx_execs {
		char		 id[32];
		uint64_t	 bucket[NBUCKETS];
		uint64_t	 count;
		double		 sum;
	} per[SANDBOXES_MAX + 1];
	/* Tool calls per API key, by its name; the last slot is "other". */
	struct key_calls {
		char		 name[KEY_NAME_MAX + 1];
		uint64_t	 calls;
	} keys[KEYS_MAX + 1];
};

/* Count one call of the key named name.  With m->mu held. */
static void
key_count(struct mcp_metrics *m, const char *name)
{
	int i;

	for (i = 0; i < KEYS_MAX && m->keys[i].name[0] != '\0'; i++)
		if (strcmp(m->keys[i].name, name) == 0)
			break;
	if (i < KEYS_MAX && m->keys[i].name[0] == '\0')
		snprintf(m->keys[i].name, sizeof m->keys[i].name, "%s", name);
	m->keys[i].calls++;
}

/* A label's value as the text format has it: backslash, double quote and
 * line feed escaped. */
static void
label_value(struct buf *b, const char *v)
{
	for (; *v; v++)
		if (*v == '\\' || *v == '"')
			buf_printf(b, "\\%c", *v);
		else if (*v == '\n')
			buf_printf(b, "\\n");
		else
			buf_append(b, v, 1);
}

/* The slot of sandbox id, made when there is room; "other" otherwise.  With
 * m->mu held. */
static struct sbx_execs *
sandbox_slot(struct mcp_metrics *m, const char *id)
{
	struct sbx_execs *free_slot = NULL;

	for (int i = 0; id != NULL && i < SANDBOXES_MAX; i++) {
		if (strcmp(m->per[i].id, id) == 0)
			return &m->per[i];
		if (m->per[i].id[0] == '\0' && free_slot == NULL)
			free_slot = &m->per[i];
	}
	if (id == NULL || free_slot == NULL || strlen(id) >= sizeof free_slot->id)
		return &m->per[SANDBOXES_MAX];
	snprintf(free_slot->id, sizeof free_slot->id, "%s", id);
	return free_slot;
}

static int
tool_slot(const char *name)
{
	for (int i = 0; name != NULL && mcp_tools[i] != NULL && i < TOOLS_MAX; i++)
		if (strcmp(mcp_tools[i]->name, name) == 0)
			return i;
	return -1;
}

static void
on_event(const struct core_event *ev, void *arg)
{
	struct mcp_metrics *m = arg;

	if (strcmp(ev->type, "tool.finished") == 0) {
		const char *tool = cJSON_GetStringValue(cJSON_GetObjectItem(ev->data, "tool"));
		const char *out = cJSON_GetStringValue(cJSON_GetObjectItem(ev->data, "outcome"));
		const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(ev->data, "key"));
		int t = tool_slot(tool), o = -1;

		if (key != NULL && *key != '\0') {
			pthread_mutex_lock(&m->mu);
			key_count(m, key);
			pthread_mutex_unlock(&m->mu);
		}

		for (int i = 0; out != NULL && i < NOUTCOMES; i++)
			if (strcmp(out, outcomes[i]) == 0)
				o = i;
		if (t < 0 || o < 0)
			return;
		pthread_mutex_lock(&m->mu);
		m->calls[t][o]++;
		pthread_mutex_unlock(&m->mu);
	} else if (strcmp(ev->type, "exec.exited") == 0) {
		const cJSON *d = cJSON_GetObjectItem(ev->data, "duration_ms");
		double s = cJSON_IsNumber(d) ? d->valuedouble / 1000.0 : 0;
		size_t b = 0;

		while (b < NBUCKETS && s > buckets[b])
			b++;
		pthread_mutex_lock(&m->mu);
		if (b < NBUCKETS)
			m->exec_bucket[b]++;
		m->exec_count++;
		m->exec_sum += s;
		struct sbx_execs *x = sandbox_slot(m, ev->sandbox);
		if (b < NBUCKETS)
			x->bucket[b]++;
		x->count++;
		x->sum += s;
		pthread_mutex_unlock(&m->mu);
	}
}

struct mcp_metrics *
mcp_metrics_new(struct core *c)
{
	struct mcp_metrics *m = xcalloc(1, sizeof *m);

	m->core = c;
	pthread_mutex_init(&m->mu, NULL);
	m->sub = core_events_subscribe(c, on_event, m);
	return m;
}

void
mcp_metrics_free(struct mcp_metrics *m)
{
	if (m == NULL)
		return;
	core_events_unsubscribe(m->core, m->sub);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static double
num_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

static int
backend_slot(const char *name)
{
	for (int i = 0; name != NULL && core_backend_name((size_t)i) != NULL && i < BACKENDS_MAX; i++)
		if (strcmp(core_backend_name((size_t)i), name) == 0)
			return i;
	return -1;
}

/* The network policy's counters of those of the n sandboxes v with rules. */
static void
net_text(struct buf *b, struct sandbox **v, size_t n)
{
	static const char *const verdicts[] = { "allowed", "denied", "asked" };
	cJSON **k = xcalloc(n ? n : 1, sizeof *k);

	for (size_t i = 0; i < n; i++)
		if (v[i]->net != NULL && (k[i] = net_counts(v[i]->id)) == NULL)
			k[i] = cJSON_CreateObject();
	buf_printf(b, "# HELP sbxtop_sandbox_net_connections_total Connections through a "
	    "sandbox's network proxy, by verdict (asked: held for the operator, then allowed "
	    "or denied too).\n# TYPE sbxtop_sandbox_net_connections_total counter\n");
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; k[i] != NULL && j < ARRAY_SIZE(verdicts); j++)
			buf_printf(b, "sbxtop_sandbox_net_connections_total{sandbox=\"%s\","
			    "verdict=\"%s\"} %.0f\n", v[i]->id, verdicts[j], num_of(k[i],
			    verdicts[j]));
	buf_printf(b, "# HELP sbxtop_sandbox_net_bytes_total Bytes through a sandbox's "
	    "network proxy (in: to the sandbox).\n"
	    "# TYPE sbxtop_sandbox_net_bytes_total counter\n");
	for (size_t i = 0; i < n; i++) {
		if (k[i] == NULL)
			continue;
		buf_printf(b, "sbxtop_sandbox_net_bytes_total{sandbox=\"%s\",direction=\"in\"} "
		    "%.0f\n", v[i]->id, num_of(k[i], "bytes_down"));
		buf_printf(b, "sbxtop_sandbox_net_bytes_total{sandbox=\"%s\",direction=\"out\"} "
		    "%.0f\n", v[i]->id, num_of(k[i], "bytes_up"));
		cJSON_Delete(k[i]);
	}
	free(k);
}

/* The per-sandbox series of the n sandboxes v (at most SANDBOXES_MAX of
 * them); exec slots of sandboxes no longer listed are freed. */
static void
sandbox_text(struct mcp_metrics *m, struct buf *b, struct sandbox **v, size_t n)
{
	struct core_forward *f = NULL;
	struct sbx_err e;
	size_t nf = 0, shown = n < SANDBOXES_MAX ? n : SANDBOXES_MAX;

	if (core_forward_list(m->core, NULL, &f, &nf, &e) < 0)
		nf = 0;
	buf_printf(b, "# HELP sbxtop_sandbox_state 1 for the state each sandbox is in "
	    "(the first %d sandboxes).\n# TYPE sbxtop_sandbox_state gauge\n", SANDBOXES_MAX);
	for (size_t i = 0; i < shown; i++)
		buf_printf(b, "sbxtop_sandbox_state{sandbox=\"%s\",backend=\"%s\","
		    "state=\"%s\"} 1\n", v[i]->id, backend_slot(v[i]->backend) < 0 ? "other" :
		    v[i]->backend, sbx_state_name(v[i]->state));
	buf_printf(b, "# HELP sbxtop_sandbox_forward_bytes_total Bytes through a "
	    "sandbox's port forwards (in: to the sandbox).\n"
	    "# TYPE sbxtop_sandbox_forward_bytes_total counter\n");
	for (size_t i = 0; i < shown; i++) {
		uint64_t in = 0, out = 0;
		for (size_t k = 0; k < nf; k++)
			if (strcmp(f[k].sandbox, v[i]->id) == 0) {
				in += f[k].bytes_in;
				out += f[k].bytes_out;
			}
		buf_printf(b, "sbxtop_sandbox_forward_bytes_total{sandbox=\"%s\","
		    "direction=\"in\"} %llu\n", v[i]->id, (unsigned long long)in);
		buf_printf(b, "sbxtop_sandbox_forward_bytes_total{sandbox=\"%s\","
		    "direction=\"out\"} %llu\n", v[i]->id, (unsigned long long)out);
	}
	free(f);
	net_text(b, v, shown);

	pthread_mutex_lock(&m->mu);
	for (int i = 0; i < SANDBOXES_MAX; i++) {
		int live = 0;
		for (size_t k = 0; k < n && m->per[i].id[0]; k++)
			live |= strcmp(v[k]->id, m->per[i].id) == 0;
		if (!live)
			memset(&m->per[i], 0, sizeof m->per[i]);
	}
	buf_printf(b, "# HELP sbxtop_sandbox_exec_duration_seconds How long commands ran, "
	    "per sandbox (\"other\": sandboxes past the first %d).\n"
	    "# TYPE sbxtop_sandbox_exec_duration_seconds histogram\n", SANDBOXES_MAX);
	for (int i = 0; i <= SANDBOXES_MAX; i++) {
		const struct sbx_execs *x = &m->per[i];
		const char *id = i == SANDBOXES_MAX ? "other" : x->id;
		uint64_t cum = 0;
		if (id[0] == '\0' || (i == SANDBOXES_MAX && x->count == 0))
			continue;
		for (size_t k = 0; k < NBUCKETS; k++) {
			cum += x->bucket[k];
			buf_printf(b, "sbxtop_sandbox_exec_duration_seconds_bucket{sandbox=\"%s\","
			    "le=\"%g\"} %llu\n", id, buckets[k], (unsigned long long)cum);
		}
		buf_printf(b, "sbxtop_sandbox_exec_duration_seconds_bucket{sandbox=\"%s\","
		    "le=\"+Inf\"} %llu\nsbxtop_sandbox_exec_duration_seconds_sum{sandbox="
		    "\"%s\"} %.6f\nsbxtop_sandbox_exec_duration_seconds_count{sandbox=\"%s\"} "
		    "%llu\n", id, (unsigned long long)x->count, id, x->sum, id,
		    (unsigned long long)x->count);
	}
	pthread_mutex_unlock(&m->mu);
}

char *
mcp_metrics_text(struct mcp_metrics *m, unsigned sessions)
{
	uint64_t count[NSTATES][BACKENDS_MAX + 1];	/* the last: a backend not built in */
	struct sandbox **v = NULL;
	struct sbx_err e;
	struct buf b;
	size_t n = 0;
	int list_ok, nbackends = 0;

	while (nbackends < BACKENDS_MAX && core_backend_name((size_t)nbackends) != NULL)
		nbackends++;
	memset(count, 0, sizeof count);
	list_ok = core_list(m->core, &v, &n, &e) == 0;
	struct buf use;
	buf_init(&use, 1u << 20);
	for (size_t i = 0; list_ok && i < n; i++) {
		int k = backend_slot(v[i]->backend);
		if ((int)v[i]->state >= 0 && v[i]->state < NSTATES)
			count[v[i]->state][k < 0 ? BACKENDS_MAX : k]++;
	}
	/* Live use per sandbox (core_usage_attach), where known: one family at a time. */
	static const char *const uk[] = { "cpu_pct", "mem_bytes", "pids", "disk_bytes",
		"net_rx_bytes", "net_tx_bytes", "oom_kills" };
	for (size_t j = 0; list_ok && j < sizeof uk / sizeof *uk; j++) {
		buf_printf(&use, "# TYPE sbxtop_sandbox_%s gauge\n", uk[j]);
		for (size_t i = 0; i < n; i++) {
			const cJSON *x = cJSON_GetObjectItem(v[i]->usage, uk[j]);
			if (cJSON_IsNumber(x))
				buf_printf(&use, "sbxtop_sandbox_%s{sandbox=\"%s\"} %.17g\n", uk[j],
				    v[i]->id, x->valuedouble);
		}
	}

	buf_init(&b, 1u << 20);
	buf_printf(&b, "# HELP sbxtop_up 1 when the core could list its sandboxes.\n"
	    "# TYPE sbxtop_up gauge\nsbxtop_up %d\n", list_ok);
	buf_printf(&b, "# HELP sbxtop_sandboxes Sandboxes known to the core, by state and "
	    "backend.\n# TYPE sbxtop_sandboxes gauge\n");
	for (int s = 0; s < NSTATES; s++)
		for (int k = 0; k <= BACKENDS_MAX; k++) {
			const char *bn = k == BACKENDS_MAX ? "other" : k < nbackends ?
			    core_backend_name((size_t)k) : NULL;
			/* "other" (a record of a backend not built in) only when seen. */
			if (bn == NULL || (k == BACKENDS_MAX && count[s][k] == 0))
				continue;
			buf_printf(&b, "sbxtop_sandboxes{state=\"%s\",backend=\"%s\"} %llu\n",
			    sbx_state_name((enum sbx_state)s), bn,
			    (unsigned long long)count[s][k]);
		}
	if (use.len > 0)
		buf_printf(&b, "# HELP sbxtop_sandbox_cpu_pct What each sandbox uses now "
		    "(sbxtop_sandbox_*: CPU %% of a core, bytes, tasks, OOM kills).\n%s", use.data);
	buf_free(&use);
	buf_printf(&b, "# HELP sbxtop_mcp_sessions MCP sessions open on this listener.\n"
	    "# TYPE sbxtop_mcp_sessions gauge\nsbxtop_mcp_sessions %u\n", sessions);

	pthread_mutex_lock(&m->mu);
	buf_printf(&b, "# HELP sbxtop_tool_calls_total MCP tool calls finished, by tool "
	    "and outcome.\n# TYPE sbxtop_tool_calls_total counter\n");
	for (int t = 0; t < TOOLS_MAX && mcp_tools[t] != NULL; t++)
		for (int o = 0; o < NOUTCOMES; o++)
			buf_printf(&b, "sbxtop_tool_calls_total{tool=\"%s\",outcome=\"%s\"} "
			    "%llu\n", mcp_tools[t]->name, outcomes[o],
			    (unsigned long long)m->calls[t][o]);
	buf_printf(&b, "# HELP sbxtop_key_calls_total Tool calls made with each API key, "
	    "by its name (the first %d names; the rest under key=\"other\").\n"
	    "# TYPE sbxtop_key_calls_total counter\n", KEYS_MAX);
	for (int i = 0; i <= KEYS_MAX; i++) {
		if (i < KEYS_MAX ? m->keys[i].name[0] == '\0' : m->keys[i].calls == 0)
			continue;
		buf_printf(&b, "sbxtop_key_calls_total{key=\"");
		label_value(&b, i < KEYS_MAX ? m->keys[i].name : "other");
		buf_printf(&b, "\"} %llu\n", (unsigned long long)m->keys[i].calls);
	}
	buf_printf(&b, "# HELP sbxtop_exec_duration_seconds How long commands ran in "
	    "sandboxes (foreground execs, any front end).\n"
	    "# TYPE sbxtop_exec_duration_seconds histogram\n");
	uint64_t cum = 0;
	for (size_t i = 0; i < NBUCKETS; i++) {
		cum += m->exec_bucket[i];
		buf_printf(&b, "sbxtop_exec_duration_seconds_bucket{le=\"%g\"} %llu\n",
		    buckets[i], (unsigned long long)cum);
	}
	buf_printf(&b, "sbxtop_exec_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
	    "sbxtop_exec_duration_seconds_sum %.6f\n"
	    "sbxtop_exec_duration_seconds_count %llu\n",
	    (unsigned long long)m->exec_count, m->exec_sum,
	    (unsigned long long)m->exec_count);
	pthread_mutex_unlock(&m->mu);
	sandbox_text(m, &b, list_ok ? v : NULL, list_ok ? n : 0);
	if (list_ok)
		core_list_free(v, n);
	return buf_steal(&b);
}
