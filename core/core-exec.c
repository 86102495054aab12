/* Commands in a sandbox: core_exec (buffered or streamed through the agent's
 * NDJSON, with the exit status as a shell gives it) and a PTY connection
 * (GET /v1/pty, an HTTP/1.1 upgrade) for the console's "open a shell".
 * libcurl has no way to hand over an upgraded connection, so the PTY speaks
 * the few lines of HTTP itself, as core-forward.c does for tunnels; afterwards the
 * socket carries the agent's PTY frames. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "backends/backend.h"
#include "core/core-watch.h"
#include "core/client/agentc.h"
#include "core/core-int.h"
#include "lib/b64.h"
#include "lib/sig.h"
#include "lib/utf8.h"
#include "lib/util.h"

#define PTY_HEAD_MAX 8192

/* A connected socket to the agent of s, and the Host header value. */
static int
agent_connect(const struct sandbox *s, char *host, size_t hostlen, struct sbx_err *e)
{
	const char *ep = s->agent_endpoint;
	_cleanup_close_ int fd = -1;

	if (ep == NULL || *ep == '\0')
		return sbx_error(e, SBX_ESTATE, "run `sbxtop status ID`",
		    "sandbox %s has no agent endpoint", s->id);
	if (strncmp(ep, "unix:", 5) == 0) {
		char why[256];
		if ((fd = agent_sock_connect(ep + 5, 0, why, sizeof why)) < 0)
			return sbx_error(e, SBX_EAGENT, "run `sbxtop status ID`",
			    "cannot reach the agent of %s: %s", s->id, why);
		snprintf(host, hostlen, "sbxtop-agent");
		return steal_fd(&fd);
	}
	if (strncmp(ep, "http://", 7) == 0) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *p;
		const char *hp = ep + 7, *slash = strchr(hp, '/');
		char hbuf[256], *colon, *name = hbuf;
		const char *port = "80";
		int rc;

		snprintf(hbuf, sizeof hbuf, "%.*s", slash ? (int)(slash - hp) : (int)strlen(hp),
		    hp);
		snprintf(host, hostlen, "%s", hbuf);
		colon = hbuf[0] == '[' ? strstr(hbuf, "]:") : strrchr(hbuf, ':');
		if (colon != NULL) {
			port = colon + (hbuf[0] == '[' ? 2 : 1);
			*colon = '\0';
			if (hbuf[0] == '[')
				name = hbuf + 1;
		}
		if ((rc = getaddrinfo(name, port, &hints, &ai)) != 0)
			return sbx_error(e, SBX_EAGENT, NULL, "cannot resolve the agent of %s "
			    "(%s): %s", s->id, ep, gai_strerror(rc));
		for (p = ai; p != NULL && fd < 0; p = p->ai_next) {
			fd = socket(p->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (fd >= 0 && connect(fd, p->ai_addr, p->ai_addrlen) < 0) {
				close(fd);
				fd = -1;
			}
		}
		freeaddrinfo(ai);
		if (fd < 0)
			return sbx_error_errno(e, SBX_EAGENT, "run `sbxtop status ID`",
			    "cannot reach the agent of %s at %s", s->id, ep);
		return steal_fd(&fd);
	}
	return sbx_error(e, SBX_EUNSUPPORTED, "shells reach agents over a unix socket or "
	    "plain http for now", "sandbox %s: cannot open a shell through %s yet", s->id, ep);
}

/* Read the answer head byte by byte: nothing after it may be consumed, since
 * the frames start right there. */
static int
read_head(int fd, char *head, size_t max, struct sbx_err *e)
{
	size_t n = 0;

	while (n + 1 < max) {
		ssize_t r = read(fd, head + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return sbx_error(e, SBX_EAGENT, NULL, "the agent closed the PTY "
			    "connection before answering");
		n++;
		head[n] = '\0';
		if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
			return (int)n;
	}
	return sbx_error(e, SBX_EAGENT, NULL, "the agent's answer head is too long");
}

int
core_pty_open(struct core *c, const char *key, int cols, int rows, const char *command,
    const char *origin, struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	const struct backend *b;
	_cleanup_free_ char *req = NULL, *q = NULL;
	_cleanup_close_ int fd = -1;
	char host[256], extra[2048], head[PTY_HEAD_MAX];
	int status = 0;

	if (core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_free(a);
	b = backend_find(s->backend);
	if (b != NULL && b->pty_open != NULL) {
		/* Through a proxy the backend knows: it speaks to the endpoint. */
		q = command ? agentc_escape(command) : NULL;
		req = xasprintf("cols=%d&rows=%d%s%s", cols, rows, q ? "&command=" : "",
		    q ? q : "");
		fd = b->pty_open(s, req, origin, e);
		sandbox_free(s);
		return steal_fd(&fd);
	}
	if ((fd = agent_connect(s, host, sizeof host, e)) < 0)
		goto fail;
	if (sandbox_agent_header_lines(s, extra, sizeof extra, e) < 0)
		goto fail;
	q = command ? agentc_escape(command) : NULL;
	req = xasprintf("GET /v1/pty?cols=%d&rows=%d%s%s HTTP/1.1\r\nHost: %s\r\n"
	    "Connection: Upgrade\r\nUpgrade: pty\r\nX-Sbx-Origin: %s\r\n"
	    "X-Sandbox-Secret: %s\r\n%s\r\n", cols, rows, q ? "&command=" : "", q ? q : "",
	    host, origin ? origin : "console", s->agent_secret ? s->agent_secret : "", extra);
	if (write_all(fd, req, strlen(req)) < 0) {
		sbx_error_errno(e, SBX_EAGENT, NULL, "cannot talk to the agent of %s", s->id);
		goto fail;
	}
	if (read_head(fd, head, sizeof head, e) < 0)
		goto fail;
	if (sscanf(head, "HTTP/1.%*d %d", &status) != 1 || status != 101) {
		const char *body = strstr(head, "\r\n\r\n");
		char *eol = strstr(head, "\r\n");
		if (eol)
			*eol = '\0';
		sbx_error(e, SBX_EAGENT, NULL, "sandbox %s: the agent refused the shell: %s%s",
		    s->id, head, body ? "" : "");
		goto fail;
	}
	sandbox_free(s);
	return steal_fd(&fd);
fail:
	sandbox_free(s);
	return -1;
}

/* ---- exec -------------------------------------------------------------- */

/* Signal names as the agent sends them, back to numbers for 128+N. */
static int
signal_number(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return v->valueint;
	return cJSON_IsString(v) ? sig_number(v->valuestring) : 0;
}

int
core_exec_status(const struct core_exec_result *res)
{
	return res->signo > 0 ? 128 + res->signo : res->exit_code;
}

struct exec_run {
	struct core		*c;
	const char		*id;
	core_output_fn		 out;
	void			*arg;
	struct core_exec_result	*res;
	int			 got_exit;
	int			(*cancelled)(void *arg);
};

static int
exec_poll(void *arg, uint64_t down, uint64_t up)
{
	struct exec_run *x = arg;

	(void)down;
	(void)up;
	return x->cancelled(x->arg);
}

/* What an exec's exit line o says of its output: each stream's size, and the
 * file the agent keeps it in, into res. */
static void
core_exec_kept(const cJSON *o, struct core_exec_result *res)
{
	static const char *const k[2][3] = {
		{ "stdout_bytes", "stdout_path", "stdout_kept" },
		{ "stderr_bytes", "stderr_path", "stderr_kept" },
	};

	for (int i = 0; i < 2; i++) {
		const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(o, k[i][1]));
		double b = cJSON_GetNumberValue(cJSON_GetObjectItem(o, k[i][0]));
		double kept = cJSON_GetNumberValue(cJSON_GetObjectItem(o, k[i][2]));

		res->bytes[i] = isnan(b) || b < 0 ? 0 : (uint64_t)b;
		if (p != NULL && p[0] == '/' && strlen(p) < sizeof res->kept_path[i] &&
		    !isnan(kept) && kept >= 0) {
			snprintf(res->kept_path[i], sizeof res->kept_path[i], "%s", p);
			res->kept[i] = (uint64_t)kept;
		}
	}
}

static int
exec_line(const cJSON *l, void *arg, struct sbx_err *e)
{
	struct exec_run *x = arg;
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(l, "type"));
	const char *data, *b64;
	int stream;

	if (type == NULL)
		return 0;
	if (strcmp(type, "start") == 0) {
		const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(l, "id"));
		snprintf(x->res->exec_id, sizeof x->res->exec_id, "%s", id ? id : "");
		x->res->pid = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(l, "pid"));
		/* In the agent's journal from now on: a listing that asked
		 * since core_exec's note was told nothing ran. */
		core_runs_note(x->c, x->id);
		return 0;
	}
	if (strcmp(type, "exit") == 0) {
		const cJSON *ec = cJSON_GetObjectItem(l, "exit_code");
		x->res->exit_code = cJSON_IsNumber(ec) ? ec->valueint : -1;
		x->res->signo = signal_number(cJSON_GetObjectItem(l, "signal"));
		x->res->timed_out = cJSON_IsTrue(cJSON_GetObjectItem(l, "timed_out"));
		x->res->truncated = cJSON_IsTrue(cJSON_GetObjectItem(l, "truncated"));
		x->res->oom = strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(l, "reason")) ?: "", "oom") == 0;
		x->res->duration_ms = (int64_t)cJSON_GetNumberValue(
		    cJSON_GetObjectItem(l, "duration_ms"));
		core_exec_kept(l, x->res);
		x->got_exit = 1;
		return 0;
	}
	if (strcmp(type, "stdout") == 0)
		stream = 1;
	else if (strcmp(type, "stderr") == 0)
		stream = 2;
	else
		return 0;	/* "gap" and kinds added later */
	data = cJSON_GetStringValue(cJSON_GetObjectItem(l, "data"));
	b64 = cJSON_GetStringValue(cJSON_GetObjectItem(l, "data_b64"));
	if (data != NULL) {
		size_t n = strlen(data);
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddStringToObject(ev, "exec", x->res->exec_id);
		cJSON_AddStringToObject(ev, "stream", stream == 1 ? "stdout" : "stderr");
		cJSON_AddStringToObject(ev, "data", data);
		core_events_emit(x->c, "exec.output", x->id, ev);
		if (x->out(stream, data, n, x->arg) < 0)
			return sbx_error(e, SBX_EIO, NULL, "output stopped");
	} else if (b64 != NULL) {
		size_t n;
		_cleanup_free_ unsigned char *d = b64_decode(b64, strlen(b64), &n);
		if (d == NULL)
			return sbx_error(e, SBX_EAGENT, NULL, "the agent sent bad base64 output");
		if (x->out(stream, (const char *)d, n, x->arg) < 0)
			return sbx_error(e, SBX_EIO, NULL, "output stopped");
	}
	return 0;
}

int
core_exec(struct core *c, const char *key, const struct core_exec_opts *o,
    core_output_fn out, void *arg, struct core_exec_result *res, struct sbx_err *e)
{
	struct sandbox *s = NULL;
	struct agentc *a = NULL;
	cJSON *req, *ans = NULL, *ev;
	struct exec_run x = { c, NULL, out, arg, res, 0, o->cancelled };
	int rc = -1;

	memset(res, 0, sizeof *res);
	res->exit_code = -1;
	if (o->stdin_data != NULL && (!utf8_valid(o->stdin_data, o->stdin_len) ||
	    memchr(o->stdin_data, '\0', o->stdin_len) != NULL))
		return sbx_error(e, SBX_EINVAL, "copy binary input in with `sbxtop cp` and "
		    "redirect from the file", "stdin is not UTF-8 text");
	if (core_env_valid(o->env, e) < 0 || core_agent_for(c, key, &s, &a, e) < 0)
		return -1;
	agentc_set_origin(a, o->origin ? o->origin : "cli");
	if (o->cancelled != NULL)
		agentc_set_progress(a, exec_poll, &x);
	x.id = s->id;

	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "command", o->command);
	if (o->cwd)
		cJSON_AddStringToObject(req, "cwd", o->cwd);
	if (o->env || cJSON_IsObject(s->env)) {
		/* The sandbox's environment from create, under the command's own. */
		cJSON *env = cJSON_IsObject(s->env) ? cJSON_Duplicate(s->env, 1) :
		    cJSON_CreateObject();
		const cJSON *it;
		cJSON_ArrayForEach(it, o->env) {
			cJSON_DeleteItemFromObjectCaseSensitive(env, it->string);
			cJSON_AddItemToObject(env, it->string, cJSON_Duplicate(it, 1));
		}
		cJSON_AddItemToObject(req, "env", env);
	}
	if (o->stdin_data) {
		_cleanup_free_ char *in = xstrndup(o->stdin_data, o->stdin_len);
		cJSON_AddStringToObject(req, "stdin", in);
	}
	if (o->timeout_s > 0)
		cJSON_AddNumberToObject(req, "timeout_s", (double)o->timeout_s);
	if (o->as_root)
		cJSON_AddBoolToObject(req, "as_root", 1);
	ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "command", o->command);
	cJSON_AddStringToObject(ev, "origin", o->origin ? o->origin : "cli");
	core_events_emit(c, "exec.started", s->id, ev);
	core_runs_note(c, s->id);

	if (o->background) {
		cJSON_AddBoolToObject(req, "background", 1);
		if (agentc_call(a, "POST", "/v1/exec", req, 30000, &ans, e) < 0)
			goto done;
		const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "id"));
		const char *lp = cJSON_GetStringValue(cJSON_GetObjectItem(ans, "log_path"));
		snprintf(res->exec_id, sizeof res->exec_id, "%s", id ? id : "");
		res->pid = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(ans, "pid"));
		res->log_path = lp ? xstrdup(lp) : NULL;
		core_runs_note(c, s->id);	/* as at an exec's start frame */
		rc = 0;
		goto done;
	}
	/* A command that runs is activity for as long as it runs. */
	if (s->idle_suspend_s > 0)
		core_idle_busy(c, s->id, 1);
	rc = agentc_stream(a, "POST", "/v1/exec", req, exec_line, &x, e);
	if (s->idle_suspend_s > 0)
		core_idle_busy(c, s->id, -1);
	if (rc < 0) {
		/* Broken off once the command ran (an agent that never answered
		 * says so itself). */
		if (res->exec_id[0] != '\0')
			core_agent_broke(c, s, "the command", e);
		goto done;
	}
	rc = -1;
	if (!x.got_exit) {
		sbx_error(e, SBX_EAGENT, "run `sbxtop status ID`", "sandbox %s: the output ended "
		    "before the command's exit status", s->id);
		goto done;
	}
	ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "exec", res->exec_id);
	cJSON_AddNumberToObject(ev, "status", core_exec_status(res));
	cJSON_AddNumberToObject(ev, "duration_ms", (double)res->duration_ms);
	core_events_emit(c, "exec.exited", s->id, ev);
	core_runs_note(c, s->id);
	rc = 0;
done:
	cJSON_Delete(req);
	cJSON_Delete(ans);
	agentc_free(a);
	sandbox_free(s);
	return rc;
}
