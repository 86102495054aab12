/* Port forwards, the core's front door (core_forward_* in core.h): a forward
 * is checked, its local port bound and its record written here, then handed to
 * the manager's relay thread (fwd/relay.c).  The tunnel's handshake and TLS
 * are in fwd/tls.c, the records in fwd/store.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/core-int.h"
#include "core/fwd/fwd.h"
#include "core/registry.h"
#include "lib/fault.h"
#include "lib/log.h"
#include "lib/util.h"

/* The local address: an IPv4 or IPv6 literal, or localhost. */
static int
parse_bind(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *len,
    struct sbx_err *e)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof *ss);
	if (strcmp(addr, "localhost") == 0)
		addr = "127.0.0.1";
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		*len = sizeof *s4;
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof *s6;
		return 0;
	}
	return sbx_error(e, SBX_EINVAL, "give an IP address such as 127.0.0.1, ::1 or 0.0.0.0",
	    "--addr: '%s' is not an IP address", addr);
}

static int
listen_on(const char *addr, int port, int *bound, struct sbx_err *e)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1;
	_cleanup_close_ int fd = -1;

	if (parse_bind(addr, port, &ss, &len, e) < 0)
		return -1;
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "socket");
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ss.ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
		if (errno == EADDRINUSE)
			return sbx_error(e, SBX_EINVAL, "choose another local port, or leave it "
			    "out for a free one", "%s port %d is already in use", addr, port);
		if (errno == EACCES)
			return sbx_error(e, SBX_EDENIED, "use a local port of 1024 or more",
			    "%s port %d needs privileges", addr, port);
		return sbx_error_errno(e, SBX_EINVAL, NULL, "cannot listen on %s port %d", addr,
		    port);
	}
	if (listen(fd, SOMAXCONN) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "listen on %s port %d", addr, port);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "getsockname");
	*bound = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
	    ((struct sockaddr_in6 *)&ss)->sin6_port);
	return steal_fd(&fd);
}

/* Where the agent is (the endpoint's address, and whether it is TLS). */
static int
agent_target(struct fwd *f, const struct sandbox *s, struct sbx_err *e)
{
	const char *ep = s->agent_endpoint;

	if (ep == NULL || *ep == '\0')
		return sbx_error(e, SBX_ESTATE, "run `sbxtop status ID`",
		    "sandbox %s has no agent endpoint (it may not have started)", s->id);
	if (strncmp(ep, "unix:", 5) == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)&f->ep;
		if (strlen(ep + 5) >= sizeof un->sun_path)
			return sbx_error(e, SBX_EINVAL, "use a shorter XDG_STATE_HOME",
			    "the agent socket path of %s is too long", s->id);
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, ep + 5);
		f->eplen = sizeof *un;
		f->hosthdr = xstrdup("sbxtop-agent");
	} else if (strncmp(ep, "http://", 7) == 0 || strncmp(ep, "https://", 8) == 0) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
		const char *hp, *slash, *colon;
		_cleanup_free_ char *name = NULL;
		const char *port;
		f->tls = ep[4] == 's';
		hp = ep + (f->tls ? 8 : 7);
		slash = strchr(hp, '/');
		port = f->tls ? "443" : "80";
		f->hosthdr = slash ? xstrndup(hp, (size_t)(slash - hp)) : xstrdup(hp);
		colon = f->hosthdr[0] == '[' ? strstr(f->hosthdr, "]:") : strrchr(f->hosthdr, ':');
		if (colon != NULL) {
			port = colon + (f->hosthdr[0] == '[' ? 2 : 1);
			name = xstrndup(f->hosthdr + (f->hosthdr[0] == '['), (size_t)(colon -
			    f->hosthdr) - (f->hosthdr[0] == '['));
		} else if (f->hosthdr[0] == '[') {
			name = xstrndup(f->hosthdr + 1, strcspn(f->hosthdr + 1, "]"));
		} else {
			name = xstrdup(f->hosthdr);
		}
		if (strlen(name) >= sizeof f->host)
			return sbx_error(e, SBX_EINVAL, NULL, "the endpoint of %s has a host name "
			    "that is too long", s->id);
		snprintf(f->host, sizeof f->host, "%s", name);
		int rc = getaddrinfo(name, port, &hints, &ai);
		if (rc != 0)
			return sbx_error(e, SBX_EAGENT, NULL, "cannot resolve the agent of %s "
			    "(%s): %s", s->id, ep, gai_strerror(rc));
		memcpy(&f->ep, ai->ai_addr, ai->ai_addrlen);
		f->eplen = ai->ai_addrlen;
		freeaddrinfo(ai);
	} else {
		return sbx_error(e, SBX_EUNSUPPORTED, "forwards reach agents over a unix "
		    "socket, http or https", "sandbox %s: cannot open tunnels to the agent at "
		    "%s", s->id, ep);
	}
	if (f->http && !f->tls)
		return sbx_error(e, SBX_EUNSUPPORTED, "leave out --http: a tunnel carries HTTP "
		    "too", "--http is for sandboxes behind an HTTPS endpoint (lambda); %s is "
		    "reached at %s", s->id, ep);
	return 0;
}

int
core_forward_start(struct core *c, const char *key, const struct core_forward_opts *o,
    struct core_forward *out, struct sbx_err *e)
{
	const char *addr = o->bind && *o->bind ? o->bind : "127.0.0.1";
	struct sandbox *s;
	struct fwd *f;
	char id[32];
	cJSON *ev;

	if (o->remote_port < 1 || o->remote_port > 65535)
		return sbx_error(e, SBX_EINVAL, NULL, "remote port %d is not valid: expected 1 "
		    "to 65535", o->remote_port);
	if (o->local_port < 0 || o->local_port > 65535)
		return sbx_error(e, SBX_EINVAL, NULL, "local port %d is not valid: expected 0 "
		    "(a free one) to 65535", o->local_port);
	if (strlen(addr) >= sizeof f->addr)
		return sbx_error(e, SBX_EINVAL, NULL, "--addr: '%s' is not an IP address", addr);
	if ((s = core_get(c, key, e)) == NULL)
		return -1;
	if (s->state != SBX_RUNNING && s->state != SBX_SUSPENDED) {
		sbx_error_reason(e, SBX_ESTATE, sbx_state_reason(s->state, SBX_R_NOT_RUNNING),
		    "`sbxtop status ID` says why", "sandbox %s is %s: "
		    "only a running or suspended sandbox can be forwarded to", s->id,
		    sbx_state_name(s->state));
		sandbox_free(s);
		return -1;
	}
	f = xcalloc(1, sizeof *f);
	f->lfd = -1;
	snprintf(f->id, sizeof f->id, "%s", s->id);
	snprintf(f->addr, sizeof f->addr, "%s", addr);
	f->remote = o->remote_port;
	f->http = o->http;
	f->state = s->state;
	f->since = wall_ms();
	if (core_refresh_endpoint(s, e) < 0 || agent_target(f, s, e) < 0 ||
	    (f->lfd = listen_on(addr, o->local_port, &f->local, e)) < 0)
		goto fail;
	if (fwd_store_add(f, e) < 0)
		goto fail;
	/* An HTTPS endpoint's token may have lapsed, and a direct forward's port
	 * must be in it: the backend renews it, with the record now naming the
	 * forward.  The request is built from the renewed record. */
	if (f->tls && s->state == SBX_RUNNING) {
		struct sandbox *s2;
		if (core_endpoint_renew(c, s->id, e) < 0 || (s2 = core_get(c, s->id, e)) == NULL) {
			fwd_store_forget(f);
			goto fail;
		}
		sandbox_free(s);
		s = s2;
	}
	if (fwd_build_req(f, s, e) < 0) {
		fwd_store_forget(f);
		goto fail;
	}
	f->next_renew = now_ms() + FWD_RENEW_MS;
	sandbox_free(s);
	s = NULL;

	if (out != NULL) {
		memset(out, 0, sizeof *out);
		snprintf(out->sandbox, sizeof out->sandbox, "%s", f->id);
		snprintf(out->bind, sizeof out->bind, "%s", f->addr);
		out->local_port = f->local;
		out->remote_port = f->remote;
		out->pid = getpid();
		out->live = 1;
		out->http = f->http;
		out->since_ms = f->since;
	}
	ev = cJSON_CreateObject();
	cJSON_AddStringToObject(ev, "bind", f->addr);
	cJSON_AddNumberToObject(ev, "local", f->local);
	cJSON_AddNumberToObject(ev, "remote", f->remote);
	snprintf(id, sizeof id, "%s", f->id);
	/* From here the loop owns f. */
	fwd_mgr_add(core_fwd_mgr(c, 1), f);
	core_events_emit(c, "forward.opened", id, ev);
	return 0;
fail:
	if (f->lfd >= 0)
		close(f->lfd);
	fwd_free(f);
	sandbox_free(s);
	return -1;
}

/* Whether something still accepts on addr:port. */
static int
port_open(const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	struct sbx_err e;
	_cleanup_close_ int fd = -1;

	if (strcmp(addr, "0.0.0.0") == 0)
		addr = "127.0.0.1";
	else if (strcmp(addr, "::") == 0)
		addr = "::1";
	if (parse_bind(addr, port, &ss, &len, &e) < 0 ||
	    (fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return 0;
	return connect(fd, (struct sockaddr *)&ss, len) == 0;
}

int
core_forward_stop(struct core *c, const char *key, int remote_port, int *stopped,
    struct sbx_err *e)
{
	cJSON *removed = cJSON_CreateArray();
	const char *id = NULL;
	struct sandbox *s = NULL;
	const cJSON *en;
	int n;

	if (stopped)
		*stopped = 0;
	if (key != NULL) {
		if ((s = core_get(c, key, e)) == NULL) {
			cJSON_Delete(removed);
			return -1;
		}
		id = s->id;
	}
	if (fwd_store_remove(id, remote_port, key == NULL, removed, e) < 0) {
		cJSON_Delete(removed);
		sandbox_free(s);
		return -1;
	}
	fwd_mgr_stop(core_fwd_mgr(c, 0), id, remote_port);
	n = cJSON_GetArraySize(removed);
	/* A forward another process runs: it sees its record gone on its next tick;
	 * wait for its port, so the caller may take the same port again at once. */
	cJSON_ArrayForEach(en, removed) {
		const char *b = cJSON_GetStringValue(cJSON_GetObjectItem(en, "bind"));
		int64_t until = now_ms() + FWD_RELEASE_MS;
		if (fwd_entry_is_own(en) || !fwd_entry_live(en) || b == NULL)
			continue;
		while (port_open(b, fwd_entry_int(en, "local")) && now_ms() < until)
			usleep(20 * 1000);
	}
	cJSON_ArrayForEach(en, removed) {
		cJSON *ev = cJSON_CreateObject();
		cJSON_AddNumberToObject(ev, "local", fwd_entry_int(en, "local"));
		cJSON_AddNumberToObject(ev, "remote", fwd_entry_int(en, "remote"));
		core_events_emit(c, "forward.closed",
		    cJSON_GetStringValue(cJSON_GetObjectItem(en, "sandbox")), ev);
	}
	cJSON_Delete(removed);
	if (n == 0 && key != NULL) {
		char hint[96];
		snprintf(hint, sizeof hint, "`sbxtop forward --list %s` shows them", s->id);
		if (remote_port > 0)
			sbx_error(e, SBX_ENOTFOUND, hint, "sandbox %s has no forward to port %d",
			    s->id, remote_port);
		else
			sbx_error(e, SBX_ENOTFOUND, hint, "sandbox %s has no forwards", s->id);
		sandbox_free(s);
		return -1;
	}
	sandbox_free(s);
	if (stopped)
		*stopped = n;
	return 0;
}

static void
entry_to_info(const cJSON *en, const char *id, struct core_forward *out)
{
	const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "bind"));
	const char *le = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "last_error"));

	memset(out, 0, sizeof *out);
	snprintf(out->sandbox, sizeof out->sandbox, "%s", id);
	snprintf(out->bind, sizeof out->bind, "%s", b ? b : "?");
	out->local_port = fwd_entry_int(en, "local");
	out->remote_port = fwd_entry_int(en, "remote");
	out->pid = fwd_entry_int(en, "pid");
	out->live = fwd_entry_live(en);
	out->since_ms = (int64_t)fwd_entry_u64(en, "since");
	out->conns_now = out->live ? fwd_entry_u64(en, "conns") : 0;
	out->conns_total = fwd_entry_u64(en, "conns_total");
	out->bytes_in = fwd_entry_u64(en, "bytes_in");
	out->bytes_out = fwd_entry_u64(en, "bytes_out");
	out->failures = fwd_entry_u64(en, "failures");
	out->http = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "mode")) != NULL &&
	    strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(en, "mode")), "http") == 0;
	snprintf(out->last_error, sizeof out->last_error, "%s", le ? le : "");
}

int
core_forward_list(struct core *c, const char *key, struct core_forward **out, size_t *n,
    struct sbx_err *e)
{
	struct registry *r;
	struct fwd_mgr *m = core_fwd_mgr(c, 0);
	const struct sandbox *only = NULL;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if ((r = registry_load(e)) == NULL)
		return -1;
	if (key != NULL && (only = registry_find(r, key, e)) != NULL && !core_sees(only)) {
		only = NULL;
		sbx_error_reason(e, SBX_ENOTFOUND, SBX_R_UNKNOWN_SANDBOX, "run `sbxtop ls`",
		    "unknown sandbox '%s'", key);
	}
	if (key != NULL && only == NULL) {
		registry_free(r);
		return -1;
	}
	if (m != NULL)
		pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < registry_count(r); i++) {
		const struct sandbox *s = registry_at(r, i);
		const cJSON *en;
		if (only != NULL && s != only)
			continue;
		cJSON_ArrayForEach(en, s->forwards) {
			struct core_forward *cf;
			if (*n == cap) {
				cap = cap ? 2 * cap : 8;
				*out = xrealloc(*out, cap * sizeof **out);
			}
			cf = &(*out)[(*n)++];
			entry_to_info(en, s->id, cf);
			/* Ours: the live counters rather than the last flushed copy. */
			for (struct fwd *f = m ? m->fwds : NULL; f != NULL; f = f->next) {
				uint64_t v[5];
				if (strcmp(f->id, s->id) != 0 || !fwd_entry_is(en, f))
					continue;
				fwd_counters(f, v);
				cf->conns_now = v[0], cf->conns_total = v[1];
				cf->bytes_in = v[2], cf->bytes_out = v[3], cf->failures = v[4];
				snprintf(cf->last_error, sizeof cf->last_error, "%s", f->last_error);
			}
		}
	}
	if (m != NULL)
		pthread_mutex_unlock(&m->mu);
	registry_free(r);
	return 0;
}

int
core_forward_restore(struct core *c, int warn, int *left, struct sbx_err *e)
{
	struct core_forward *v;
	size_t n;
	int restored = 0, skipped = 0;

	if (core_forward_list(c, NULL, &v, &n, e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct core_forward_opts o = { v[i].bind, v[i].remote_port, v[i].local_port,
		    v[i].http };
		struct sbx_err sub;
		int twin = 0, pid_was = v[i].pid;
		if (v[i].live) {
			skipped += v[i].pid != getpid();
			continue;
		}
		/* Its twin, restored by a core that died before it dropped this
		 * old record (or earlier in this pass), runs: only the record goes. */
		for (size_t k = 0; k < n && !twin; k++)
			twin = k != i && (v[k].live || v[k].pid == getpid()) &&
			    strcmp(v[k].sandbox, v[i].sandbox) == 0 && strcmp(v[k].bind, v[i].bind) == 0 &&
			    v[k].local_port == v[i].local_port;
		if (twin) {
			if (fwd_store_drop(v[i].sandbox, v[i].local_port, v[i].pid, v[i].bind, &sub) < 0)
				log_warnx("cannot drop the old record of %s:%d: %s", v[i].bind,
				    v[i].local_port, sub.msg);
			continue;
		}
		/* A record that cannot be restored now stays, for a later try (and for
		 * `forward --stop` to remove). */
		if (core_forward_start(c, v[i].sandbox, &o, NULL, &sub) < 0) {
			if (warn)
				log_warnx("cannot restore the forward %s:%d -> %s:%d: %s", v[i].bind,
				    v[i].local_port, v[i].sandbox, v[i].remote_port, sub.msg);
			skipped++;
			continue;
		}
		v[i].pid = getpid();	/* a twin of it later in the list is not restored again */
		if (fault_point("restore.started", &sub) < 0 ||
		    fwd_store_drop(v[i].sandbox, v[i].local_port, pid_was, v[i].bind, &sub) < 0)
			log_warnx("cannot drop the old record of %s:%d: %s", v[i].bind,
			    v[i].local_port, sub.msg);
		restored++;
	}
	free(v);
	if (left != NULL)
		*left = skipped;
	return restored;
}

size_t
core_forward_running(struct core *c)
{
	struct fwd_mgr *m = core_fwd_mgr(c, 0);
	size_t n = 0;

	if (m == NULL)
		return 0;
	pthread_mutex_lock(&m->mu);
	for (struct fwd *f = m->fwds; f != NULL; f = f->next)
		n += !f->stop;
	pthread_mutex_unlock(&m->mu);
	return n;
}
