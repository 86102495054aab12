/* The ssh backend: an ns sandbox on a remote host (s->host), brought up by the
 * same launcher code a local create runs (sbxtop-launch, from the agent bundle
 * copied to the host, backends/ssh/hosts.c), over the host's one shared SSH session.  The
 * agent listens on a unix socket on the host; this process relays a local unix
 * socket to it through an SSH channel (backends/ssh/ssh.c), so the agent client, files,
 * PTYs and forwards work unchanged.
 *
 * backend_data: {"remote": the ns backend's own data on the host, "endpoint":
 * the agent socket there}.  Its logs are copied here as they are read (see
 * "logs" below).  A host that does not answer makes its sandboxes
 * "unreachable" with the reason (never terminated: the registry forgets
 * nothing), and the next status after it answers again says what they are. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/ssh/hosts.h"
#include "lib/log.h"
#include "core/paths.h"
#include "core/registry.h"
#include "lib/util.h"

/* The record as the launcher on the host knows it: an ns sandbox. */
static cJSON *
remote_spec(const struct sandbox *s)
{
	struct sandbox *r = sandbox_dup(s);
	const cJSON *bd = s->backend_data;
	const cJSON *rem = cJSON_GetObjectItemCaseSensitive(bd, "remote");
	const cJSON *ep = cJSON_GetObjectItemCaseSensitive(bd, "endpoint");
	cJSON *o;

	char label[PATHS_LABEL_LEN + 1];

	free(r->backend);
	r->backend = xstrdup("ns");
	free(r->host);
	r->host = NULL;
	cJSON_Delete(r->backend_data);
	r->backend_data = cJSON_IsObject(rem) ? cJSON_Duplicate(rem, 1) : NULL;
	/* A create there is labelled with this state directory's label, as a
	 * local one is: gc here sweeps that host for it (ssh_gc). */
	if (r->backend_data == NULL && paths_state_label(label, NULL) == 0) {
		r->backend_data = cJSON_CreateObject();
		cJSON_AddStringToObject(r->backend_data, "label", label);
	}
	free(r->agent_endpoint);
	r->agent_endpoint = cJSON_IsString(ep) ? xstrdup(ep->valuestring) : NULL;
	cJSON_Delete(r->forwards);
	r->forwards = NULL;
	o = sandbox_to_json(r, 1);
	sandbox_free(r);
	return o;
}

static struct host *
host_of(const struct sandbox *s, struct sbx_err *e)
{
	if (s->host == NULL || s->host[0] == '\0') {
		sbx_error(e, SBX_EINVAL, "give --host NAME (or auto)",
		    "sandbox %s has no host: the ssh backend needs one", s->id);
		return NULL;
	}
	return hosts_get(s->host, e);
}

/* Run verb for s on its host; *r gets the host's record (caller frees). */
static int
launch(const struct sandbox *s, const char *verb, struct sandbox **r, struct sbx_err *e)
{
	struct host *h = host_of(s, e);
	cJSON *spec, *out = NULL;
	int rc;

	*r = NULL;
	if (h == NULL)
		return -1;
	spec = remote_spec(s);
	rc = hosts_launch(h, verb, spec, &out, e);
	cJSON_Delete(spec);
	host_free(h);
	if (rc < 0)
		return -1;
	*r = sandbox_from_json(cJSON_GetObjectItemCaseSensitive(out, "sandbox"), e);
	cJSON_Delete(out);
	return *r != NULL ? 0 : -1;
}

static void mirror_remove(const struct sandbox *s);

/* "auto" picks the host with most headroom (probing each); a named host must
 * exist and, against the locked registry r, have room. */
static int
ssh_place(struct sandbox *s, const char *name, const struct registry *r, struct sbx_err *e)
{
	struct host *h;
	int count;

	if (strcmp(name, "auto") == 0) {
		char *pick;
		if (hosts_pick(r, &pick, e) < 0)
			return -1;
		free(s->host);
		s->host = pick;
		return 0;
	}
	if ((h = hosts_get(name, e)) == NULL)
		return -1;
	count = hosts_sandbox_count(r, h->name);
	if (h->max_sandboxes > 0 && count >= h->max_sandboxes) {
		sbx_error(e, SBX_EDENIED, "destroy one there, pick another host, or use --host auto",
		    "host %s is full: %d sandboxes, at most %d", h->name, count, h->max_sandboxes);
		host_free(h);
		return -1;
	}
	free(s->host);
	s->host = xstrdup(h->name);
	host_free(h);
	return 0;
}

static int
ssh_create(struct sandbox *s, struct sbx_err *e)
{
	struct sandbox *r = NULL;

	if (s->image != NULL)
		return sbx_error(e, SBX_EUNSUPPORTED, "leave out --image: remote sandboxes use the "
		    "host's default image", "--image is not supported on remote hosts yet");
	if (launch(s, "create", &r, e) < 0)
		return -1;
	cJSON_Delete(s->backend_data);
	s->backend_data = cJSON_CreateObject();
	cJSON_AddItemToObject(s->backend_data, "remote", r->backend_data ?
	    cJSON_Duplicate(r->backend_data, 1) : cJSON_CreateNull());
	cJSON_AddStringToObject(s->backend_data, "endpoint", r->agent_endpoint ?
	    r->agent_endpoint : "");
	/* The local end of the relay is made by whoever talks to the agent. */
	free(s->agent_endpoint);
	s->agent_endpoint = NULL;
	free(s->limits_note);
	s->limits_note = steal_pointer(&r->limits_note);
	free(s->state_reason);
	s->state_reason = NULL;
	s->state = SBX_RUNNING;
	sandbox_free(r);
	return 0;
}

static int
ssh_status(struct sandbox *s, struct sbx_err *e)
{
	struct sandbox *r;
	struct sbx_err sub;

	if (launch(s, "status", &r, &sub) < 0) {
		if (sub.code != SBX_EBACKEND && sub.code != SBX_ENOTFOUND) {
			*e = sub;
			return -1;
		}
		/* Not gone, just out of reach: say so and ask again next time. */
		s->state = SBX_UNREACHABLE;
		free(s->state_reason);
		s->state_reason = xstrdup(sub.msg);
		return 0;
	}
	s->state = r->state;
	free(s->state_reason);
	s->state_reason = steal_pointer(&r->state_reason);
	sandbox_free(r);
	return 0;
}

static int
ssh_verb(struct sandbox *s, const char *verb, struct sbx_err *e)
{
	struct sandbox *r;

	if (launch(s, verb, &r, e) < 0)
		return -1;
	s->state = r->state;
	free(s->state_reason);
	s->state_reason = steal_pointer(&r->state_reason);
	sandbox_free(r);
	return 0;
}

static int ssh_suspend(struct sandbox *s, struct sbx_err *e) { return ssh_verb(s, "suspend", e); }
static int ssh_resume(struct sandbox *s, struct sbx_err *e) { return ssh_verb(s, "resume", e); }

static int
ssh_destroy(struct sandbox *s, struct sbx_err *e)
{
	if (ssh_verb(s, "destroy", e) < 0)
		return -1;
	mirror_remove(s);
	return 0;
}

/* The local end of the relay to the agent, in this process. */
static int
ssh_agent_endpoint(struct sandbox *s, struct sbx_err *e)
{
	struct host *h = host_of(s, e);
	const cJSON *ep = cJSON_GetObjectItemCaseSensitive(s->backend_data, "endpoint");
	struct ssh_conn *c;
	char *local = NULL;
	int rc;

	if (h == NULL)
		return -1;
	if (!cJSON_IsString(ep) || strncmp(ep->valuestring, "unix:", 5) != 0) {
		host_free(h);
		return sbx_error(e, SBX_ESTATE, "run `sbxtop status ID`",
		    "sandbox %s has no agent endpoint on host %s", s->id, s->host);
	}
	if ((c = hosts_connect(h, 0, e)) == NULL) {
		host_free(h);
		return -1;
	}
	rc = ssh_relay(c, s->id, ep->valuestring + 5, &local, e);
	host_free(h);
	if (rc < 0)
		return -1;
	free(s->agent_endpoint);
	s->agent_endpoint = xasprintf("unix:%s", local);
	free(local);
	return 0;
}

/* ---- logs: a local mirror of the log on the host ---------------------------
 *
 * A remote sandbox's logs are files in its directory on the host.  Every reader
 * of logs (core_logs, the core server's follower, MCP) opens the file
 * log_path names, so log_path keeps a copy here, in STATE/sandboxes/ID/, and
 * brings it up to date over SFTP each time it is called: what the host's file
 * has past what the copy holds is appended.  Readers that follow call it again
 * as they poll.  The host's file is written by the sandbox, so it is bounded: a
 * call fetches at most LOG_WINDOW, and a copy that would pass LOG_MIRROR_MAX, or
 * falls more than LOG_WINDOW behind, or a log that shrank, starts over with the
 * host file's last LOG_WINDOW (readers see a truncated file and replay).
 * NAME.base holds the host file's offset of the copy's first byte. */
#define LOG_WINDOW	(1 << 20)
#define LOG_MIRROR_MAX	(16 << 20)

static char *
mirror_dir(const struct sandbox *s, struct sbx_err *e)
{
	_cleanup_free_ char *state = paths_ensure(PATHS_STATE, e), *root = NULL;
	char *dir;

	if (state == NULL)
		return NULL;
	/* The id names a directory here: only the id's own characters. */
	if (!sandbox_id_valid(s->id)) {
		sbx_error(e, SBX_EINVAL, NULL, "invalid sandbox id '%s'", s->id);
		return NULL;
	}
	root = xasprintf("%s/sandboxes", state);
	dir = xasprintf("%s/%s", root, s->id);
	if ((mkdir(root, 0700) < 0 && errno != EEXIST) || (mkdir(dir, 0700) < 0 && errno != EEXIST)) {
		sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", dir);
		free(dir);
		return NULL;
	}
	return dir;
}

static uint64_t
mirror_base(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char buf[32];
	ssize_t n;

	if (fd < 0 || (n = read(fd, buf, sizeof buf - 1)) <= 0)
		return 0;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

static int
mirror_set_base(const char *path, uint64_t base, struct sbx_err *e)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%llu\n", (unsigned long long)base);

	if (fd < 0 || write_all(fd, buf, (size_t)n) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", path);
	return 0;
}

/* Bring the copy at local (base file local.base) up to the host's remote. */
static int
mirror_sync(const struct sandbox *s, const char *remote, const char *local, struct sbx_err *e)
{
	_cleanup_close_ int fd = open(local, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	_cleanup_free_ char *basef = xasprintf("%s.base", local), *buf = NULL;
	struct host *h;
	struct ssh_conn *c;
	struct stat st;
	uint64_t base, have, size;
	size_t got;
	int rc;

	if (fd < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", local);
	/* Two processes (a CLI, the core server) may bring it up at once. */
	if (flock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot lock %s", local);
	if ((h = host_of(s, e)) == NULL)
		return -1;
	c = hosts_connect(h, 0, e);
	host_free(h);
	if (c == NULL)
		return -1;
	base = mirror_base(basef);
	have = base + (uint64_t)st.st_size;
	buf = xmalloc(LOG_WINDOW);
	if (ssh_read_file(c, remote, have, buf, LOG_WINDOW, &got, &size, e) < 0)
		return -1;
	if (size < have || size - have > LOG_WINDOW ||
	    (uint64_t)st.st_size + (size - have) > LOG_MIRROR_MAX) {
		/* Shrank, or too much to copy: start over at the last window. */
		base = size > LOG_WINDOW ? size - LOG_WINDOW : 0;
		if (ftruncate(fd, 0) < 0 || mirror_set_base(basef, base, e) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "cannot reset %s", local);
		st.st_size = 0;
		if (ssh_read_file(c, remote, base, buf, LOG_WINDOW, &got, &size, e) < 0)
			return -1;
	}
	rc = got > 0 && pwrite(fd, buf, got, st.st_size) != (ssize_t)got ? -1 : 0;
	if (rc < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot write %s", local);
	return 0;
}

static char *
ssh_log_path(const struct sandbox *s, const char *which, struct sbx_err *e)
{
	const cJSON *rem = cJSON_GetObjectItemCaseSensitive(s->backend_data, "remote");
	const char *rdir = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rem, "dir"));
	int console = strcmp(which, "console") == 0;
	_cleanup_free_ char *dir = NULL, *remote = NULL;
	char *local;
	struct sbx_err sub;

	if (!console && strcmp(which, "agent") != 0) {
		sbx_error(e, SBX_EINVAL, "ask for the \"console\" or the \"agent\" log",
		    "no log '%s' for the ssh backend", which);
		return NULL;
	}
	if (rdir == NULL || rdir[0] != '/') {
		sbx_error(e, SBX_ESTATE, "run `sbxtop status ID`",
		    "sandbox %s has no directory on host %s", s->id, s->host ? s->host : "?");
		return NULL;
	}
	if ((dir = mirror_dir(s, e)) == NULL)
		return NULL;
	remote = xasprintf("%s/%s", rdir, console ? "console.log" : "run/agent.log");
	local = xasprintf("%s/%s", dir, console ? "console.log" : "agent.log");
	if (mirror_sync(s, remote, local, &sub) < 0) {
		if (sub.code == SBX_ENOTFOUND)
			return local;	/* none there yet: readers say so */
		/* A host out of reach still leaves what was copied to read. */
		if (sub.code == SBX_EBACKEND && access(local, F_OK) == 0) {
			log_debug("%s log of %s: %s", which, s->id, sub.msg);
			return local;
		}
		*e = sub;
		free(local);
		return NULL;
	}
	return local;
}

/* The copies go with the sandbox. */
static void
mirror_remove(const struct sandbox *s)
{
	static const char *const names[] = { "agent.log", "agent.log.base", "console.log",
	    "console.log.base" };
	struct sbx_err e;
	_cleanup_free_ char *dir = paths_sandbox_dir(s->id, &e);

	if (dir == NULL)
		return;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, names[i]);
		(void)unlink(p);
	}
	(void)rmdir(dir);
}

static void
ssh_doctor(check_fn report, void *arg)
{
	struct host *v;
	size_t n;
	struct sbx_err e;

	if (hosts_list(&v, &n, &e) < 0) {
		report(arg, CHECK_FAIL, "ssh hosts", e.msg, e.hint);
		return;
	}
	if (n == 0)
		report(arg, CHECK_OK, "ssh hosts", "none (add one with `sbxtop host add`)", NULL);
	for (size_t i = 0; i < n; i++) {
		char what[64], detail[300];
		snprintf(what, sizeof what, "host %s", v[i].name);
		snprintf(detail, sizeof detail, "%s@%s port %d (`sbxtop host check %s` checks it)",
		    v[i].user, v[i].addr, v[i].port, v[i].name);
		report(arg, CHECK_OK, what, detail, NULL);
	}
	hosts_free(v, n);
}

/* Each host's sweep, through its launcher: what carries this state
 * directory's label there and no live record here names.  Not for a
 * listing's count (no host is asked then); a host that does not answer is
 * passed over, saying so. */
static int
ssh_gc(const struct backend_gc *g, struct sbx_err *e)
{
	char label[PATHS_LABEL_LEN + 1];
	struct host *v;
	size_t n;
	int removed = 0;

	if (g->quick || paths_state_label(label, e) < 0 || hosts_list(&v, &n, e) < 0)
		return g->quick ? 0 : -1;
	for (size_t i = 0; i < n; i++) {
		cJSON *in = cJSON_CreateObject(), *out = NULL, *known;
		const cJSON *it;
		struct sbx_err sub;

		known = cJSON_AddArrayToObject(in, "known");
		for (size_t k = 0; k < g->nknown; k++)
			cJSON_AddItemToArray(known, cJSON_CreateString(g->known[k]));
		cJSON_AddStringToObject(in, "label", label);
		cJSON_AddBoolToObject(in, "dry_run", g->dry_run);
		if (hosts_launch(&v[i], "gc", in, &out, &sub) < 0) {
			log_warnx("gc: host %s passed over: %s", v[i].name, sub.msg);
			cJSON_Delete(in);
			continue;
		}
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(out, "found")) {
			const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(it, "kind"));
			const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(it, "id"));
			const char *what = cJSON_GetStringValue(cJSON_GetObjectItem(it, "what"));
			_cleanup_free_ char *where = NULL;
			if (kind == NULL || id == NULL || !sandbox_id_valid(id) || g->found == NULL)
				continue;
			where = xasprintf("host %s: %s", v[i].name, what ? what : "");
			g->found(g->arg, kind, id, where,
			    cJSON_IsTrue(cJSON_GetObjectItem(it, "live")));
		}
		if (cJSON_IsNumber(cJSON_GetObjectItem(out, "removed")))
			removed += cJSON_GetObjectItem(out, "removed")->valueint;
		cJSON_Delete(out);
		cJSON_Delete(in);
	}
	hosts_free(v, n);
	return removed;
}

const struct backend backend_ssh = {
	.name = "ssh",
	.description = "ns sandboxes on remote hosts over SSH (`sbxtop host add`)",
	.create = ssh_create,
	.suspend = ssh_suspend,
	.resume = ssh_resume,
	.destroy = ssh_destroy,
	.status = ssh_status,
	.log_path = ssh_log_path,
	.doctor = ssh_doctor,
	.gc = ssh_gc,
	.agent_endpoint = ssh_agent_endpoint,
	.place = ssh_place,
	.hosts_run = "ns",
	.verbs = ssh_verbs,
};
