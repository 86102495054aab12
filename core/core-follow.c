/* Following a sandbox live: the agent's event stream and an exec's output from
 * the journal, through the agent client (see core-follow.h). */
#include <stdio.h>
#include <string.h>

#include "core/core-follow.h"
#include "core/core-int.h"
#include "lib/util.h"

struct follow {
	core_line_fn	 fn;
	void		*arg;
	volatile int	*stop;
};

static int
follow_line(const cJSON *line, void *arg, struct sbx_err *e)
{
	struct follow *f = arg;

	if (f->stop != NULL && *f->stop)
		return sbx_error(e, SBX_EIO, NULL, "stopped");
	if (f->fn(line, f->arg) < 0)
		return sbx_error(e, SBX_EIO, NULL, "stopped");
	return 0;
}

/* The agent client asks about once a second even when no line comes, so a
 * quiet stream is left within a second of *stop. */
static int
follow_poll(void *arg, uint64_t down, uint64_t up)
{
	struct follow *f = arg;

	return f->stop != NULL && *f->stop;
}

static int
follow(struct core *c, const char *key, const char *path, core_line_fn fn, void *arg,
    volatile int *stop, struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	struct follow f = { fn, arg, stop };
	int rc;

	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, "console");
	agentc_set_progress(a, follow_poll, &f);
	rc = agentc_stream(a, "GET", path, NULL, follow_line, &f, e);
	agentc_free(a);
	sandbox_free(s);
	if (rc < 0 && stop != NULL && *stop)
		return 0;
	return rc < 0 ? -1 : 0;
}

int
core_agent_events(struct core *c, const char *key, uint64_t from, core_line_fn fn,
    void *arg, volatile int *stop, struct sbx_err *e)
{
	char path[64];

	snprintf(path, sizeof path, "/v1/events?from=%llu&follow=1",
	    (unsigned long long)(from ? from : 1));
	return follow(c, key, path, fn, arg, stop, e);
}

int
core_exec_follow(struct core *c, const char *key, const char *exec_id, uint64_t from,
    core_line_fn fn, void *arg, volatile int *stop, struct sbx_err *e)
{
	char path[96];
	size_t n = strlen(exec_id);

	if (n == 0 || n >= 32 || strspn(exec_id, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
		return sbx_error(e, SBX_EINVAL, NULL, "'%s' is not an exec id (like x12)",
		    exec_id);
	snprintf(path, sizeof path, "/v1/execs/%s/stream?from=%llu", exec_id,
	    (unsigned long long)(from ? from : 1));
	return follow(c, key, path, fn, arg, stop, e);
}
