/* The network proxy of a sandbox under `--network rules`: a process of its own
 * on the host (outside every namespace of the sandbox), serving the listener
 * that ns_net_listen_in made on 127.0.0.1:3128 inside the sandbox, which has no
 * other way out.  It speaks HTTP CONNECT and plain HTTP proxy requests, decides
 * each connection by the policy file as it is at that moment (net/policy.h),
 * checks the TLS SNI of a CONNECT stream against the CONNECT host, resolves
 * names itself (the sandbox has no DNS server to ask), holds what no entry
 * covers in ask mode, and logs every connection (net/log.c).  One thread per
 * connection; it exits when the sandbox's init does.
 *
 * A qemu guest reaches it differently (backends/qemu): QEMU's user network
 * runs sbxtop-guestfwd (cli/guestfwd.c) for each connection to its proxy
 * address, with the connection on its standard input; that helper passes the
 * descriptor over the unix socket the proxy listens on and exits, so the proxy
 * serves the guest's connection itself, as it serves an ns sandbox's. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/net.h"
#include "core/net/hello.h"
#include "core/net/policy.h"
#include "lib/log.h"
#include "lib/util.h"

#define HEAD_MAX	(16 * 1024)
#define HEAD_WAIT_MS	30000
#define CONNECT_WAIT_MS	10000
#define CONNS_MAX	512
#define RELAY_BUF	(64 * 1024)
#define MAX_ADDRS	8
#define HANDOFF_WAIT_MS	5000

static const char *sbx_id;
static char *dir;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int nconns;
static struct {
	uint64_t allowed, denied, asked, up, down;
} counts;

/* --- the policy, read again when its file changed ------------------------ */

static struct {
	dev_t	 dev;
	ino_t	 ino;
	struct timespec mtime;
	off_t	 size;
	cJSON	*json;
} pol;

/* A copy of the current policy (caller clears it). */
static void
policy_now(struct net_policy *p)
{
	_cleanup_free_ char *path = xasprintf("%s/policy.json", dir);
	struct sbx_err e;
	struct stat st;

	pthread_mutex_lock(&mu);
	if (stat(path, &st) == 0 && (st.st_ino != pol.ino || st.st_dev != pol.dev ||
	    st.st_size != pol.size || st.st_mtim.tv_sec != pol.mtime.tv_sec ||
	    st.st_mtim.tv_nsec != pol.mtime.tv_nsec)) {
		char *text = read_file(path, 1 << 20, NULL);
		cJSON *j = text ? cJSON_Parse(text) : NULL;
		free(text);
		if (j != NULL) {
			cJSON_Delete(pol.json);
			pol.json = j;
			pol.dev = st.st_dev;
			pol.ino = st.st_ino;
			pol.size = st.st_size;
			pol.mtime = st.st_mtim;
		}
	}
	if (net_policy_from_json(pol.json, wall_ms(), p, &e) < 0) {
		log_warnx("%s: bad policy, denying everything: %s", sbx_id, e.msg);
		memset(p, 0, sizeof *p);
	}
	pthread_mutex_unlock(&mu);
}

/* The secrets bound to host, with their values from the store, or NULL. */
static cJSON *
secrets_for(const char *host)
{
	cJSON *out = NULL;
	const cJSON *it;

	pthread_mutex_lock(&mu);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(pol.json, "secrets")) {
		const char *h = cJSON_GetStringValue(cJSON_GetObjectItem(it, "host"));
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(it, "name"));
		const char *ph = cJSON_GetStringValue(cJSON_GetObjectItem(it, "placeholder"));
		struct sbx_err e;
		cJSON *full;
		if (h == NULL || name == NULL || ph == NULL || strcasecmp(h, host) != 0)
			continue;
		if ((full = net_secret_get(name, 1, &e)) == NULL) {
			log_warnx("%s: secret %s: %s", sbx_id, name, e.msg);
			continue;
		}
		cJSON_AddStringToObject(full, "placeholder", ph);
		if (out == NULL)
			out = cJSON_CreateArray();
		cJSON_AddItemToArray(out, full);
	}
	pthread_mutex_unlock(&mu);
	return out;
}

/* --- names --------------------------------------------------------------- */

struct addr {
	int		 family;
	uint8_t		 a[16];
};

/* SBXTOP_NET_RESOLVE=name:addr,name:[v6addr],...: test-only answers (as curl's
 * --resolve), looked at before the system's resolver. */
static int
resolve_override(const char *name, struct addr *out, int max)
{
	const char *env = getenv("SBXTOP_NET_RESOLVE");
	_cleanup_free_ char *copy = NULL;
	char *tok, *save = NULL;
	int n = 0;

	if (env == NULL || *env == '\0')
		return 0;
	copy = xstrdup(env);
	for (tok = strtok_r(copy, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':'), *a;
		if (colon == NULL)
			continue;
		*colon = '\0';
		if (strcasecmp(tok, name) != 0)
			continue;
		a = colon + 1;
		if (*a == '[') {
			a++;
			a[strcspn(a, "]")] = '\0';
		}
		if (net_parse_addr(a, &out[n].family, out[n].a) == 0)
			n++;
	}
	return n;
}

static int
resolve(const char *name, struct addr *out, int max, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
	int n = resolve_override(name, out, max), rc;

	if (n > 0)
		return n;
	if ((rc = getaddrinfo(name, NULL, &hints, &res)) != 0) {
		snprintf(err, errlen, "cannot resolve %s: %s", name, gai_strerror(rc));
		return 0;
	}
	for (ai = res; ai != NULL && n < max; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			out[n].family = 4;
			memcpy(out[n].a, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
		} else if (ai->ai_family == AF_INET6) {
			out[n].family = 6;
			memcpy(out[n].a, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		n++;
	}
	freeaddrinfo(res);
	if (n == 0)
		snprintf(err, errlen, "%s has no address", name);
	return n;
}

int
net_addr_own(int family, const uint8_t addr[16])
{
	struct ifaddrs *ifs, *i;
	uint8_t a[16];
	int own = 0;

	memcpy(a, addr, 16);
	net_addr_normalize(&family, a);
	if (net_addr_hostlocal(family, a))
		return 1;
	if (getifaddrs(&ifs) < 0)
		return 1;	/* cannot tell: as if it were */
	for (i = ifs; i != NULL && !own; i = i->ifa_next) {
		const struct sockaddr *sa = i->ifa_addr;
		if (sa == NULL)
			continue;
		if (sa->sa_family == AF_INET && family == 4)
			own = memcmp(&((const struct sockaddr_in *)sa)->sin_addr, a, 4) == 0;
		else if (sa->sa_family == AF_INET6 && family == 6)
			own = memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, a, 16) == 0;
	}
	freeifaddrs(ifs);
	return own;
}

static void
addr_text(const struct addr *a, char *buf, size_t len)
{
	inet_ntop(a->family == 4 ? AF_INET : AF_INET6, a->a, buf, (socklen_t)len);
}

static int
connect_to(const struct addr *a, int port, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	struct pollfd p;
	int fd, one = 1, soerr = 0, rc;
	socklen_t el = sizeof soerr;

	memset(&ss, 0, sizeof ss);
	if (a->family == 4) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		memcpy(&s4->sin_addr, a->a, 4);
		sl = sizeof *s4;
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		memcpy(&s6->sin6_addr, a->a, 16);
		sl = sizeof *s6;
	}
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
		snprintf(err, errlen, "connect: %s", strerror(errno));
		close(fd);
		return -1;
	}
	p = (struct pollfd){ fd, POLLOUT, 0 };
	do
		rc = poll(&p, 1, CONNECT_WAIT_MS);
	while (rc < 0 && errno == EINTR);
	if (rc == 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &el) < 0 || soerr != 0) {
		snprintf(err, errlen, "connect: %s", rc == 0 ? "timed out" : strerror(soerr));
		close(fd);
		return -1;
	}
	set_nonblock(fd, 0);
	return fd;
}

/* --- one connection ------------------------------------------------------- */

struct conn {
	int		 fd, up;
	int		 handed;		/* fd hands over the connection */
	int64_t		 start;
	char		 kind[8];		/* "connect" or "http" */
	char		 host[256];
	int		 port;
	char		 addr[INET6_ADDRSTRLEN];
	char		 verdict[8];
	char		 rule[320];
	char		 error[700];
	uint64_t	 nup, ndown;
	char		*head;			/* what was read of the request */
	size_t		 headlen, used;		/* bytes read; bytes of the head */
};

static void
conn_log(struct conn *c)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "type", "connection");
	cJSON_AddStringToObject(o, "kind", c->kind[0] ? c->kind : "-");
	cJSON_AddStringToObject(o, "host", c->host[0] ? c->host : "-");
	if (c->addr[0])
		cJSON_AddStringToObject(o, "addr", c->addr);
	cJSON_AddNumberToObject(o, "port", c->port);
	cJSON_AddStringToObject(o, "verdict", c->verdict[0] ? c->verdict : "deny");
	cJSON_AddStringToObject(o, "rule", c->rule[0] ? c->rule : "-");
	cJSON_AddNumberToObject(o, "up", (double)c->nup);
	cJSON_AddNumberToObject(o, "down", (double)c->ndown);
	cJSON_AddNumberToObject(o, "ms", (double)(now_ms() - c->start));
	if (c->error[0])
		cJSON_AddStringToObject(o, "error", c->error);
	net_log_append(sbx_id, o);

	pthread_mutex_lock(&mu);
	if (strcmp(c->verdict, "allow") == 0)
		counts.allowed++;
	else
		counts.denied++;
	counts.up += c->nup;
	counts.down += c->ndown;
	{
		cJSON *k = cJSON_CreateObject();
		_cleanup_free_ char *path = xasprintf("%s/counts.json", dir);
		_cleanup_free_ char *tmp = xasprintf("%s.tmp", path);
		char *text;
		int fd;
		cJSON_AddNumberToObject(k, "allowed", (double)counts.allowed);
		cJSON_AddNumberToObject(k, "denied", (double)counts.denied);
		cJSON_AddNumberToObject(k, "asked", (double)counts.asked);
		cJSON_AddNumberToObject(k, "bytes_up", (double)counts.up);
		cJSON_AddNumberToObject(k, "bytes_down", (double)counts.down);
		text = cJSON_PrintUnformatted(k);
		cJSON_Delete(k);
		if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) >= 0) {
			if (write_all(fd, text, strlen(text)) == 0 && close(fd) == 0)
				(void)rename(tmp, path);
			else
				close(fd);
		}
		free(text);
	}
	pthread_mutex_unlock(&mu);
}

/* An error answer; for a denial, a body that names the host and says why. */
static void
reply(struct conn *c, int code, const char *status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void
reply(struct conn *c, int code, const char *status, const char *fmt, ...)
{
	char body[1024], head[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(body, sizeof body - 1, fmt, ap);
	va_end(ap);
	strcat(body, "\n");
	n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\nX-Sbxtop-Sandbox: %s\r\n\r\n",
	    code, status, strlen(body), sbx_id);
	(void)write_all(c->fd, head, (size_t)n);
	(void)write_all(c->fd, body, strlen(body));
	if (!c->error[0])
		snprintf(c->error, sizeof c->error, "%d %s", code, status);
}

static int
read_head(struct conn *c)
{
	int64_t end = now_ms() + HEAD_WAIT_MS;

	c->head = xmalloc(HEAD_MAX + 1);
	c->headlen = 0;
	for (;;) {
		struct pollfd p = { c->fd, POLLIN, 0 };
		ssize_t n;
		char *eoh;
		int left = (int)(end - now_ms());

		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -1;
		n = read(c->fd, c->head + c->headlen, HEAD_MAX - c->headlen);
		if (n <= 0)
			return -1;
		c->headlen += (size_t)n;
		c->head[c->headlen] = '\0';
		if ((eoh = strstr(c->head, "\r\n\r\n")) != NULL) {
			c->used = (size_t)(eoh + 4 - c->head);
			return 0;
		}
		if (c->headlen >= HEAD_MAX)
			return -2;
	}
}

/* "host:port", "[v6]:port" or "host" (port def) into c->host, c->port. */
static int
split_hostport(struct conn *c, const char *s, size_t len, int def)
{
	char buf[300], *colon;

	if (len == 0 || len >= sizeof buf)
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (buf[0] == '[') {
		char *end = strchr(buf, ']');
		if (end == NULL)
			return -1;
		*end = '\0';
		colon = end[1] == ':' ? end + 1 : NULL;
		if ((end[1] != '\0' && colon == NULL) || strlen(buf + 1) >= sizeof c->host)
			return -1;
		memcpy(c->host, buf + 1, strlen(buf + 1) + 1);
	} else {
		colon = strrchr(buf, ':');
		if (colon != NULL)
			*colon = '\0';
		if (strlen(buf) >= sizeof c->host)
			return -1;
		memcpy(c->host, buf, strlen(buf) + 1);
	}
	c->port = def;
	if (colon != NULL) {
		char *end;
		long v = strtol(colon + 1, &end, 10);
		if (colon[1] == '\0' || *end != '\0' || v < 1 || v > 65535)
			return -1;
		c->port = (int)v;
	}
	for (char *p = c->host; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == '/' || *p == '@')
			return -1;
	return c->host[0] ? 0 : -1;
}

/* Relay until both sides are done; first (may be NULL) goes upstream first. */
static void
relay(struct conn *c, const char *first, size_t firstlen)
{
	char *buf = xmalloc(RELAY_BUF);
	int open_up = 1, open_down = 1;

	if (firstlen > 0) {
		if (write_all(c->up, first, firstlen) < 0)
			goto out;
		c->nup += firstlen;
	}
	while (open_up || open_down) {
		struct pollfd p[2] = { { open_up ? c->fd : -1, POLLIN, 0 },
			{ open_down ? c->up : -1, POLLIN, 0 } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			int from = i == 0 ? c->fd : c->up, to = i == 0 ? c->up : c->fd;
			ssize_t n;
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if ((n = read(from, buf, RELAY_BUF)) < 0)
				goto out;	/* a reset ends both ways */
			if (n == 0) {
				/* An end of one way: pass it on, keep the other. */
				shutdown(to, SHUT_WR);
				if (i == 0)
					open_up = 0;
				else
					open_down = 0;
				continue;
			}
			if (write_all(to, buf, (size_t)n) < 0)
				goto out;
			if (i == 0)
				c->nup += (uint64_t)n;
			else
				c->ndown += (uint64_t)n;
		}
	}
out:
	free(buf);
}

/* Hold c for the operator: ask/REQ.json, a line in the log (the console sees
 * it as net.ask), then wait for ask/REQ.answer or the timeout. */
static const char *
ask_operator(struct conn *c, int timeout_s)
{
	char req[17];
	_cleanup_free_ char *jpath = NULL, *apath = NULL, *text = NULL;
	int64_t now = wall_ms(), end = now_ms() + (int64_t)timeout_s * 1000;
	const char *answer = "timeout";
	cJSON *o = cJSON_CreateObject();
	int fd;

	random_hex(req, 8);
	jpath = xasprintf("%s/ask/%s.json", dir, req);
	apath = xasprintf("%s/ask/%s.answer", dir, req);
	cJSON_AddStringToObject(o, "req", req);
	cJSON_AddStringToObject(o, "kind", "connection");
	cJSON_AddStringToObject(o, "host", c->host);
	cJSON_AddNumberToObject(o, "port", c->port);
	cJSON_AddNumberToObject(o, "time_ms", (double)now);
	cJSON_AddNumberToObject(o, "expires_ms", (double)(now + (int64_t)timeout_s * 1000));
	text = cJSON_PrintUnformatted(o);
	if ((fd = open(jpath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0 ||
	    write_all(fd, text, strlen(text)) < 0) {
		if (fd >= 0)
			close(fd);
		cJSON_Delete(o);
		return "deny";
	}
	close(fd);
	cJSON_AddStringToObject(o, "type", "ask");
	net_log_append(sbx_id, o);
	pthread_mutex_lock(&mu);
	counts.asked++;
	pthread_mutex_unlock(&mu);
	while (now_ms() < end) {
		char *a = read_file(apath, 64, NULL);
		if (a != NULL) {
			a[strcspn(a, "\n")] = '\0';
			answer = strcmp(a, "once") == 0 ? "once" : strcmp(a, "always") == 0 ?
			    "always" : "deny";
			free(a);
			break;
		}
		/* The client gave up: nobody is left to let through. */
		{
			struct pollfd p = { c->fd, POLLIN | POLLRDHUP, 0 };
			if (poll(&p, 1, 50) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
				answer = "gone";
				break;
			}
		}
	}
	unlink(jpath);
	unlink(apath);
	return answer;
}

/* Connections held at once for the same destination share one question: the
 * operator answers each destination once, not once per connection a package
 * manager opens. */
struct held {
	char		 host[256];
	int		 port;
	const char	*answer;	/* NULL until answered */
	int		 refs;
	struct held	*next;
};
static struct held *helds;
static pthread_cond_t held_cv;
static pthread_once_t held_once = PTHREAD_ONCE_INIT;

static void
held_init(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&held_cv, &a);
	pthread_condattr_destroy(&a);
}

static void
held_drop(struct held *h)
{
	if (--h->refs > 0)
		return;
	for (struct held **pp = &helds; *pp != NULL; pp = &(*pp)->next)
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	free(h);
}

static const char *
ask_shared(struct conn *c, int timeout_s)
{
	struct held *h;
	const char *a;
	struct timespec end;

	pthread_once(&held_once, held_init);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_s;
	pthread_mutex_lock(&mu);
	for (h = helds; h != NULL; h = h->next)
		if (h->answer == NULL && h->port == c->port && strcasecmp(h->host, c->host) == 0)
			break;
	if (h != NULL) {
		/* Someone asked already: wait for that answer. */
		h->refs++;
		while (h->answer == NULL &&
		    pthread_cond_timedwait(&held_cv, &mu, &end) == 0)
			;
		a = h->answer ? h->answer : "timeout";
		held_drop(h);
		pthread_mutex_unlock(&mu);
		return a;
	}
	h = xcalloc(1, sizeof *h);
	memcpy(h->host, c->host, sizeof h->host);
	h->port = c->port;
	h->refs = 1;
	h->next = helds;
	helds = h;
	pthread_mutex_unlock(&mu);
	a = ask_operator(c, timeout_s);
	pthread_mutex_lock(&mu);
	/* A client that hung up answers nothing for the others. */
	h->answer = strcmp(a, "gone") == 0 ? "timeout" : a;
	pthread_cond_broadcast(&held_cv);
	held_drop(h);
	pthread_mutex_unlock(&mu);
	return a;
}

/* Whether d lies within the agent limit of p (none: yes). */
static int
within_limit(const struct net_policy *p, const char *name, const struct addr *addrs,
    int naddr, int port)
{
	for (size_t i = 0; i < p->nlimit; i++) {
		struct net_dest d = { .name = name, .port = port };
		if (name != NULL && net_rule_match(&p->limit[i], &d))
			return 1;
		for (int k = 0; k < naddr; k++) {
			struct net_dest ad = { .port = port, .family = addrs[k].family };
			memcpy(ad.addr, addrs[k].a, 16);
			if (net_rule_match(&p->limit[i], &ad))
				return 1;
		}
	}
	return p->nlimit == 0;
}

static void
serve_conn(struct conn *c)
{
	struct net_policy p;
	struct net_dest d = { 0 };
	struct addr addrs[MAX_ADDRS];
	int naddr = 0, ok[MAX_ADDRS] = { 0 }, own[MAX_ADDRS] = { 0 }, nok = 0, nnone = 0;
	int nown = 0, literal, rc;
	enum net_verdict v;
	char *sp1, *sp2, *lineend, rule[320] = "", err[640] = "";
	const char *method_end;

	memset(&p, 0, sizeof p);
	if ((rc = read_head(c)) < 0) {
		if (rc == -2)
			reply(c, 431, "Request Header Fields Too Large", "sbxtop: request head too large");
		snprintf(c->error, sizeof c->error, "%s", rc == -2 ? "head too large" :
		    "no request");
		goto log;
	}
	lineend = strstr(c->head, "\r\n");
	*lineend = '\0';
	sp1 = strchr(c->head, ' ');
	sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (sp1 == NULL || sp2 == NULL) {
		reply(c, 400, "Bad Request", "sbxtop: not an HTTP proxy request");
		goto log;
	}
	method_end = sp1;
	if ((size_t)(sp1 - c->head) == 7 && strncmp(c->head, "CONNECT", 7) == 0) {
		snprintf(c->kind, sizeof c->kind, "connect");
		if (split_hostport(c, sp1 + 1, (size_t)(sp2 - sp1 - 1), 0) < 0 || c->port == 0) {
			reply(c, 400, "Bad Request", "sbxtop: CONNECT needs host:port");
			goto log;
		}
	} else if (strncasecmp(sp1 + 1, "http://", 7) == 0) {
		const char *auth = sp1 + 8;
		size_t al = strcspn(auth, "/? ");
		snprintf(c->kind, sizeof c->kind, "http");
		if (split_hostport(c, auth, al, 80) < 0) {
			reply(c, 400, "Bad Request", "sbxtop: bad URL");
			goto log;
		}
	} else {
		reply(c, 400, "Bad Request", "sbxtop: this is the sandbox's HTTP proxy: send "
		    "absolute http:// URLs or CONNECT host:port (HTTP_PROXY and HTTPS_PROXY say so)");
		goto log;
	}
	(void)method_end;

	/* The decision: by name first, then by each address it resolves to. */
	policy_now(&p);
	literal = net_parse_addr(c->host, &d.family, d.addr) == 0;
	d.name = literal ? NULL : c->host;
	d.port = c->port;
	if (!literal && (v = net_policy_decide(&p, &d, rule, sizeof rule)) == NET_DENY) {
		snprintf(c->rule, sizeof c->rule, "%s", rule);
		reply(c, 403, "Forbidden", "sbxtop: %s:%d is denied by the network policy of "
		    "sandbox %s (%s)", c->host, c->port, sbx_id, rule);
		goto log;
	}
	if (literal) {
		addrs[0].family = d.family;
		memcpy(addrs[0].a, d.addr, 16);
		naddr = 1;
	} else if ((naddr = resolve(c->host, addrs, MAX_ADDRS, err, sizeof err)) == 0) {
		/* Not said before the policy allowed the name: a denied name's
		 * existence is none of the sandbox's business. */
		struct net_dest nd = d;
		if (net_policy_decide(&p, &nd, rule, sizeof rule) != NET_ALLOW) {
			snprintf(c->rule, sizeof c->rule, "%s", rule);
			reply(c, 403, "Forbidden", "sbxtop: %s:%d is not allowed by the network "
			    "policy of sandbox %s (%s); the operator can allow it with `sbxtop net "
			    "%s allow %s:%d`", c->host, c->port, sbx_id, rule, sbx_id, c->host,
			    c->port);
		} else {
			snprintf(c->verdict, sizeof c->verdict, "allow");
			snprintf(c->rule, sizeof c->rule, "%s", rule);
			reply(c, 502, "Bad Gateway", "sbxtop: %s", err);
		}
		goto log;
	}
	/* Each address the name resolves to, in its IPv4 form where it has one:
	 * the host's own (loopback, link-local, its interfaces') only through an
	 * address entry, and never through an answer of the operator's, who was
	 * asked about a name. */
	for (int i = 0; i < naddr; i++) {
		d.family = addrs[i].family;
		memcpy(d.addr, addrs[i].a, 16);
		d.own = own[i] = net_addr_own(d.family, d.addr);
		v = net_policy_decide(&p, &d, rule, sizeof rule);
		if (v == NET_ALLOW) {
			ok[i] = 1;
			nok++;
			snprintf(c->rule, sizeof c->rule, "%s", rule);
		} else if (v == NET_NONE && d.own) {
			nown++;
		} else if (v == NET_NONE) {
			ok[i] = 2;
			nnone++;
		} else if (c->rule[0] == '\0' || nok == 0) {
			snprintf(c->rule, sizeof c->rule, "%s", rule);
		}
	}
	if (nok == 0 && nnone > 0 && p.ask &&
	    !within_limit(&p, literal ? NULL : c->host, addrs, naddr, c->port)) {
		/* An agent's sandbox: beyond the operator's bound, not even asked. */
		snprintf(c->rule, sizeof c->rule, "limit");
	} else if (nok == 0 && nnone > 0 && p.ask) {
		const char *a = ask_shared(c, p.ask_timeout_s);
		if (strcmp(a, "once") == 0 || strcmp(a, "always") == 0) {
			for (int i = 0; i < naddr; i++)
				if (ok[i] == 2)
					ok[i] = 1;
			nok = nnone;
			snprintf(c->rule, sizeof c->rule, "operator %s", a);
		} else {
			snprintf(c->rule, sizeof c->rule, "operator %s", a);
			reply(c, 403, "Forbidden", "sbxtop: %s:%d is not allowed by the network policy "
			    "of sandbox %s, and the operator %s", c->host, c->port, sbx_id,
			    strcmp(a, "deny") == 0 ? "denied it" : strcmp(a, "gone") == 0 ?
			    "was asked" : "did not answer in time");
			goto log;
		}
	}
	if (nok == 0) {
		char a[INET6_ADDRSTRLEN] = "";
		for (int i = 0; i < naddr && nown > 0 && nnone == 0 && !a[0]; i++)
			if (ok[i] == 0 && own[i])
				addr_text(&addrs[i], a, sizeof a);
		if (c->rule[0] == '\0' && a[0])
			snprintf(c->rule, sizeof c->rule, "host-local");
		else if (c->rule[0] == '\0')
			snprintf(c->rule, sizeof c->rule, "default");
		if (a[0])
			reply(c, 403, "Forbidden", "sbxtop: %s:%d is not allowed by the network "
			    "policy of sandbox %s: %s%s%s a host-local address, which only an "
			    "entry naming it lets through (`sbxtop net %s allow %s%s%s:%d`)",
			    c->host, c->port, sbx_id, literal ? "" : "it resolves to ", a,
			    literal ? " is" : ",", sbx_id, strchr(a, ':') ? "[" : "", a,
			    strchr(a, ':') ? "]" : "", c->port);
		else
			reply(c, 403, "Forbidden", "sbxtop: %s:%d is not allowed by the network "
			    "policy of sandbox %s (%s); the operator can allow it with `sbxtop net "
			    "%s allow %s:%d`", c->host, c->port, sbx_id, c->rule, sbx_id, c->host,
			    c->port);
		goto log;
	}

	snprintf(c->verdict, sizeof c->verdict, "allow");
	for (int i = 0; i < naddr && c->up < 0; i++) {
		if (ok[i] != 1)
			continue;
		addr_text(&addrs[i], c->addr, sizeof c->addr);
		c->up = connect_to(&addrs[i], c->port, err, sizeof err);
	}
	if (c->up < 0) {
		reply(c, 502, "Bad Gateway", "sbxtop: cannot reach %s:%d: %s", c->host, c->port, err);
		goto log;
	}

	if (strcmp(c->kind, "connect") == 0) {
		static const char ok200[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		uint8_t *hello = NULL;
		size_t hl = c->headlen - c->used;
		enum net_hello hr = NET_HELLO_MORE;
		const char *why = "no ClientHello";
		char sni[256] = "";

		cJSON *sec = literal ? NULL : secrets_for(c->host);

		if (write_all(c->fd, ok200, sizeof ok200 - 1) < 0) {
			cJSON_Delete(sec);
			goto log;
		}
		if (sec != NULL) {
			/* A host secrets are bound to: TLS ends here, the value goes in. */
			snprintf(c->kind, sizeof c->kind, "secret");
			if (net_tls_intercept(c->fd, c->up, c->host, dir, sec, &c->nup, &c->ndown,
			    err, sizeof err) < 0)
				snprintf(c->error, sizeof c->error, "%s", err);
			cJSON_Delete(sec);
			goto log;
		}
		/* A TLS stream's ClientHello names its server (SNI): it must be the
		 * host the CONNECT asked for, or a shared front could route it to
		 * any other.  It is read whole, across as many records and reads as
		 * it takes (up to NET_HELLO_BUF_MAX); what cannot be read is
		 * refused. */
		hello = xmalloc(NET_HELLO_BUF_MAX);
		if (hl > NET_HELLO_BUF_MAX)
			hl = NET_HELLO_BUF_MAX;	/* HEAD_MAX is smaller: never */
		memcpy(hello, c->head + c->used, hl);
		for (;;) {
			struct pollfd pf[2] = { { c->fd, POLLIN, 0 }, { c->up, POLLIN, 0 } };
			ssize_t n;
			if (hl > 0 && (hello[0] != 0x16 || literal ||
			    (hr = net_hello_name(hello, hl, sni, sizeof sni, &why)) != NET_HELLO_MORE))
				break;
			if (poll(pf, 2, HEAD_WAIT_MS) <= 0 || (pf[1].revents && hl == 0))
				break;	/* the server speaks first: not TLS from this side */
			if (!(pf[0].revents & POLLIN) ||
			    (n = read(c->fd, hello + hl, NET_HELLO_BUF_MAX - hl)) <= 0) {
				why = "the client stopped in the middle of its ClientHello";
				hr = hl > 0 && hello[0] == 0x16 ? NET_HELLO_BAD : NET_HELLO_NAME;
				break;
			}
			hl += (size_t)n;
		}
		if (hl > 0 && hello[0] == 0x16 && !literal &&
		    (hr != NET_HELLO_NAME || (sni[0] && strcasecmp(sni, c->host) != 0))) {
			snprintf(c->verdict, sizeof c->verdict, "deny");
			if (hr != NET_HELLO_NAME)
				snprintf(c->rule, sizeof c->rule, "sni unreadable");
			else
				snprintf(c->rule, sizeof c->rule, "sni %s is not %s", sni, c->host);
			snprintf(c->error, sizeof c->error, "%s", hr != NET_HELLO_NAME ? why :
			    "TLS server name does not match");
			free(hello);
			goto log;
		}
		relay(c, (const char *)hello, hl);
		free(hello);
	} else {
		/* Rewrite the head: origin-form target, no proxy headers, and one
		 * request per connection (a reused connection could name another
		 * host). */
		const char *path = sp1 + 8 + strcspn(sp1 + 8, "/? ");
		size_t pl = (size_t)(sp2 - path);
		char *h = lineend + 2, *out = xmalloc(c->used + 64);
		size_t o = 0;

		o += (size_t)snprintf(out, c->used + 64, "%.*s %s%.*s%s\r\n", (int)(sp1 - c->head),
		    c->head, pl == 0 || *path != '/' ? "/" : "", (int)pl, path, sp2);
		while (h < c->head + c->used - 2) {
			char *e = strstr(h, "\r\n");
			size_t ll = (size_t)(e - h);
			if (strncasecmp(h, "proxy-", 6) != 0 && strncasecmp(h, "connection:", 11) != 0 &&
			    strncasecmp(h, "keep-alive:", 11) != 0) {
				if (strncasecmp(h, "host:", 5) == 0) {
					struct conn hc;
					const char *hv = h + 5;
					while (*hv == ' ' || *hv == '\t')
						hv++;
					memset(&hc, 0, sizeof hc);
					if (split_hostport(&hc, hv, (size_t)(e - hv), 80) < 0 ||
					    strcasecmp(hc.host, c->host) != 0 || hc.port != c->port) {
						free(out);
						snprintf(c->verdict, sizeof c->verdict, "deny");
						snprintf(c->rule, sizeof c->rule, "host header");
						reply(c, 400, "Bad Request", "sbxtop: the Host header does "
						    "not match the URL's host");
						goto log;
					}
				}
				memcpy(out + o, h, ll + 2);
				o += ll + 2;
			}
			h = e + 2;
		}
		memcpy(out + o, "Connection: close\r\n\r\n", 21);
		o += 21;
		if (write_all(c->up, out, o) < 0) {
			free(out);
			goto log;
		}
		c->nup += o;
		free(out);
		relay(c, c->head + c->used, c->headlen - c->used);
	}
log:
	net_policy_clear(&p);
	conn_log(c);
}

/* The guest connection a guestfwd helper hands over fd (a unix connection to
 * the proxy's listener), or -1.  Only a process of our own user may hand one. */
static int
take_handed(int fd)
{
	struct ucred cr;
	socklen_t cl = sizeof cr;
	char b;
	struct iovec iov = { &b, 1 };
	union {
		struct cmsghdr	h;
		char		buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
	    .msg_controllen = sizeof u.buf };
	struct pollfd p = { fd, POLLIN, 0 };
	struct cmsghdr *h;
	struct stat st;
	int got;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != geteuid())
		return -1;
	if (poll(&p, 1, HANDOFF_WAIT_MS) <= 0 || recvmsg(fd, &m, MSG_CMSG_CLOEXEC) != 1 ||
	    (h = CMSG_FIRSTHDR(&m)) == NULL || h->cmsg_level != SOL_SOCKET ||
	    h->cmsg_type != SCM_RIGHTS || h->cmsg_len < CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&got, CMSG_DATA(h), sizeof got);
	/* One socket, whole: anything else is closed, not served. */
	if ((m.msg_flags & MSG_CTRUNC) || h->cmsg_len != CMSG_LEN(sizeof(int)) ||
	    fstat(got, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		close(got);
		return -1;
	}
	return got;
}

static void *
conn_thread(void *arg)
{
	struct conn *c = arg;

	if (c->handed) {
		int g = take_handed(c->fd);
		close(c->fd);
		c->fd = g;
	}
	if (c->fd >= 0) {
		serve_conn(c);
		close(c->fd);
	}
	if (c->up >= 0)
		close(c->up);
	free(c->head);
	free(c);
	pthread_mutex_lock(&mu);
	nconns--;
	pthread_mutex_unlock(&mu);
	return NULL;
}

void
netproxy_main(const char *id, pid_t init, int lfd)
{
	struct sbx_err e;
	int pidfd = (int)syscall(SYS_pidfd_open, init, 0);
	pthread_attr_t at;
	struct sockaddr_storage la;
	socklen_t ll = sizeof la;
	int handed;

	sbx_id = id;
	/* A unix listener is a qemu guest's: connections come as descriptors. */
	handed = getsockname(lfd, (struct sockaddr *)&la, &ll) == 0 && la.ss_family == AF_UNIX;
	if ((dir = net_dir(id, 1, &e)) == NULL || pidfd < 0) {
		log_warnx("network proxy of %s: %s", id, dir ? "the sandbox is gone" : e.msg);
		_exit(1);
	}
	signal(SIGPIPE, SIG_IGN);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	for (;;) {
		struct pollfd p[2] = { { lfd, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
		struct conn *c;
		pthread_t t;
		int fd;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;	/* the sandbox ended */
		if (!(p[0].revents & POLLIN))
			continue;
		if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
			continue;
		pthread_mutex_lock(&mu);
		if (nconns >= CONNS_MAX) {
			pthread_mutex_unlock(&mu);
			close(fd);
			continue;
		}
		nconns++;
		pthread_mutex_unlock(&mu);
		c = xcalloc(1, sizeof *c);
		c->fd = fd;
		c->up = -1;
		c->handed = handed;
		c->start = now_ms();
		if (pthread_create(&t, &at, conn_thread, c) != 0) {
			close(fd);
			free(c);
			pthread_mutex_lock(&mu);
			nconns--;
			pthread_mutex_unlock(&mu);
		}
	}
	_exit(0);
}

int
netproxy_spawn(const char *id, pid_t init, int lfd, pid_t *pid, struct sbx_err *e)
{
	char exe[4096], initarg[24];
	_cleanup_free_ char *d = net_dir(id, 1, e), *logp = NULL, *pidp = NULL;
	char *argv[7];
	int report[2], st;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	pid_t mid, got = -1;

	*pid = -1;
	if (d == NULL) {
		close(lfd);
		return -1;
	}
	if (n <= 0) {
		close(lfd);
		return sbx_error_errno(e, SBX_EINTERNAL, NULL, "cannot find this program");
	}
	exe[n] = '\0';
	snprintf(initarg, sizeof initarg, "%d", (int)init);
	argv[0] = exe;
	argv[1] = (char *)"net";
	argv[2] = (char *)"--proxy-daemon";
	argv[3] = (char *)id;
	argv[4] = initarg;
	argv[5] = NULL;
	logp = xasprintf("%s/proxy.log", d);
	pidp = xasprintf("%s/proxy.pid", d);
	if (pipe2(report, O_CLOEXEC) < 0) {
		close(lfd);
		return sbx_error_errno(e, SBX_EIO, NULL, "pipe");
	}
	/* Twice, as the egress helper: a process of its own session that outlives
	 * the one that made the sandbox and never becomes its zombie. */
	if ((mid = fork()) < 0) {
		close(lfd);
		close(report[0]);
		close(report[1]);
		return sbx_error_errno(e, SBX_EIO, NULL, "fork");
	}
	if (mid == 0) {
		pid_t h;
		setsid();
		if ((h = fork()) == 0) {
			int null = open("/dev/null", O_RDWR | O_CLOEXEC);
			int lg = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
			if (null < 0 || lg < 0 || dup2(null, 0) < 0 || dup2(lg, 1) < 0 ||
			    dup2(lg, 2) < 0 || dup2(lfd, 3) < 0)
				_exit(127);
			if (lfd == 3)
				fcntl(3, F_SETFD, 0);
			signal(SIGPIPE, SIG_DFL);
			syscall(SYS_close_range, 4, ~0U, 0);
			execv(exe, argv);
			_exit(127);
		}
		(void)write_all(report[1], &h, sizeof h);
		_exit(h < 0);
	}
	close(report[1]);
	close(lfd);
	if (read(report[0], &got, sizeof got) != (ssize_t)sizeof got)
		got = -1;
	close(report[0]);
	while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
		;
	if (got <= 0)
		return sbx_error(e, SBX_EINTERNAL, NULL, "cannot start the network proxy");
	{
		char buf[24];
		int fd = open(pidp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		snprintf(buf, sizeof buf, "%d\n", (int)got);
		if (fd >= 0) {
			(void)write_all(fd, buf, strlen(buf));
			close(fd);
		}
	}
	*pid = got;
	return 0;
}

