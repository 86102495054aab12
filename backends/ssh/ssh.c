/* SSH with libssh2: one session per host for the whole process.
 *
 * A libssh2 session is not safe to use from two threads at once, and the core
 * uses it from many (commands from the backend, relays to the agents), so each
 * session has a mutex that every libssh2 call runs under.  The session is
 * non-blocking once it is up: an operation that would block waits on the socket
 * with the mutex held (operations are short: a launcher run, an SFTP copy, a
 * channel open), and the relay thread, which moves bytes between local unix
 * sockets and SSH channels, takes the mutex only for one non-blocking pass at a
 * time.  After an operation the relay thread is woken, since the operation may
 * have read channel data into libssh2's buffers that no poll would announce. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <libssh2_sftp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/log.h"
#include "core/paths.h"
#include "backends/ssh/ssh.h"
#include "lib/util.h"

#define CONNECT_TIMEOUT_MS	5000
#define HANDSHAKE_TIMEOUT_MS	10000
#define OP_TIMEOUT_MS		120000
#define OPEN_TIMEOUT_MS		10000
#define READ_TIMEOUT_MS		30000
#define KEEPALIVE_S		15
#define RUN_OUT_MAX		(4 << 20)
#define PAIR_BUF		32768

struct pair {
	int			 fd;
	LIBSSH2_CHANNEL		*ch;
	char			 up[PAIR_BUF];	/* local -> channel */
	size_t			 uplen, upoff;
	char			 down[PAIR_BUF];	/* channel -> local */
	size_t			 downlen, downoff;
	int			 local_eof, eof_sent, remote_eof;
	struct pair		*next;
};

struct relay {
	char			*key;
	char			*remote;
	char			*local;
	int			 lfd;
	struct relay		*next;
};

struct ssh_conn {
	char			*name;
	int			 sock;
	LIBSSH2_SESSION		*sess;
	pthread_mutex_t		 mu;
	pthread_t		 thr;
	int			 wake[2];
	int			 dead, stop;
	char			 why[256];	/* why it is dead */
	int64_t			 deadline;	/* of the operation running now */
	struct relay		*relays;
	struct pair		*pairs;
	struct ssh_conn		*next;
};

static pthread_mutex_t conns_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ssh_conn *conns;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static char *relay_dir;

/* At exit, stop the relay threads before the crypto library's own exit
 * handlers (registered earlier, so run later) free what they use, and take the
 * relay sockets away. */
static void
stop_all(void)
{
	pthread_mutex_lock(&conns_mu);
	for (struct ssh_conn *c = conns; c != NULL; c = c->next) {
		pthread_mutex_lock(&c->mu);
		c->stop = 1;
		pthread_mutex_unlock(&c->mu);
		(void)write(c->wake[1], "w", 1);
		pthread_join(c->thr, NULL);
		for (struct relay *r = c->relays; r != NULL; r = r->next)
			unlink(r->local);
	}
	if (relay_dir != NULL)
		rmdir(relay_dir);
	pthread_mutex_unlock(&conns_mu);
}

static void
lib_init(void)
{
	if (libssh2_init(0) != 0)
		fatal("libssh2_init failed");
	atexit(stop_all);
}

/* --- waiting on a non-blocking session ------------------------------------- */

static int
wait_io(struct ssh_conn *c)
{
	int dir = libssh2_session_block_directions(c->sess);
	struct pollfd p = { .fd = c->sock };

	if (dir & LIBSSH2_SESSION_BLOCK_INBOUND)
		p.events |= POLLIN;
	if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
		p.events |= POLLOUT;
	if (p.events == 0)
		p.events = POLLIN;
	if (now_ms() >= c->deadline)
		return -1;
	(void)poll(&p, 1, 100);
	return 0;
}

/* Repeat a libssh2 call while it says "would block" (and time is left). */
#define NB(c, call) ({ long _r; \
	do { _r = (long)(call); } while (_r == LIBSSH2_ERROR_EAGAIN && wait_io(c) == 0); _r; })
#define NBP(c, call) ({ void *_p; \
	do { _p = (void *)(call); } while (_p == NULL && \
	    libssh2_session_last_errno((c)->sess) == LIBSSH2_ERROR_EAGAIN && wait_io(c) == 0); _p; })

/* A call that would block on sending has left a packet half-written in the
 * session: libssh2 must be called again with the same arguments until it is out,
 * before any other call on the session (another call would finish that packet
 * and take it for its own).  Waiting for a peer's window (inbound) is safe to
 * leave for a later pass.  Gives up, killing the session, after SEND_STUCK_MS. */
#define SEND_STUCK_MS	10000
#define FINISH(c, call) ({ long _f; int64_t _end = now_ms() + SEND_STUCK_MS, \
	_saved = (c)->deadline; \
	do { _f = (long)(call); } while (_f == LIBSSH2_ERROR_EAGAIN && \
	    (libssh2_session_block_directions((c)->sess) & LIBSSH2_SESSION_BLOCK_OUTBOUND) && \
	    ((c)->deadline = _end, wait_io(c) == 0)); \
	if (_f == LIBSSH2_ERROR_EAGAIN && \
	    (libssh2_session_block_directions((c)->sess) & LIBSSH2_SESSION_BLOCK_OUTBOUND)) \
		mark_dead(c, "the connection stopped taking data"); \
	(c)->deadline = _saved; \
	_f; })

static int
socket_error(int rc)
{
	return rc == LIBSSH2_ERROR_SOCKET_SEND || rc == LIBSSH2_ERROR_SOCKET_RECV ||
	    rc == LIBSSH2_ERROR_SOCKET_DISCONNECT || rc == LIBSSH2_ERROR_SOCKET_TIMEOUT ||
	    rc == LIBSSH2_ERROR_TIMEOUT || rc == LIBSSH2_ERROR_EAGAIN;
}

static const char *
last_error(struct ssh_conn *c)
{
	char *msg = NULL;

	libssh2_session_last_error(c->sess, &msg, NULL, 0);
	return msg != NULL && *msg ? msg : "unknown error";
}

/* The session broke: say why once; every later call fails fast and ssh_get
 * makes a new one. */
static void
mark_dead(struct ssh_conn *c, const char *why)
{
	if (c->dead)
		return;
	c->dead = 1;
	snprintf(c->why, sizeof c->why, "%s", why);
	log_warnx("host %s: connection lost: %s", c->name, why);
}

static int
op_begin(struct ssh_conn *c, int timeout_ms, struct sbx_err *e)
{
	pthread_mutex_lock(&c->mu);
	if (c->dead) {
		pthread_mutex_unlock(&c->mu);
		return sbx_error(e, SBX_EBACKEND, "run `sbxtop host check NAME`",
		    "host %s is unreachable: %s", c->name, c->why);
	}
	c->deadline = now_ms() + timeout_ms;
	return 0;
}

static void
op_end(struct ssh_conn *c)
{
	pthread_mutex_unlock(&c->mu);
	(void)write(c->wake[1], "w", 1);
}

/* An operation failed with rc: a broken connection is marked so, and e says so. */
static int
op_fail(struct ssh_conn *c, long rc, const char *what, struct sbx_err *e)
{
	char why[200];

	if (rc == LIBSSH2_ERROR_EAGAIN)
		snprintf(why, sizeof why, "%s: timed out", what);
	else
		snprintf(why, sizeof why, "%s: %s", what, last_error(c));
	if (socket_error((int)rc))
		mark_dead(c, why);
	return sbx_error(e, SBX_EBACKEND, "run `sbxtop host check NAME`", "host %s: %s", c->name,
	    why);
}

/* --- connecting --------------------------------------------------------------- */

static int
tcp_connect(const struct ssh_target *t, struct sbx_err *e)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *p;
	char port[16];
	int fd = -1, rc, err = 0;

	snprintf(port, sizeof port, "%d", t->port);
	if ((rc = getaddrinfo(t->addr, port, &hints, &ai)) != 0)
		return sbx_error(e, SBX_EBACKEND, "check the address with `sbxtop host ls`",
		    "host %s: cannot resolve %s: %s", t->name, t->addr, gai_strerror(rc));
	for (p = ai; p != NULL; p = p->ai_next) {
		struct pollfd pf;
		socklen_t len = sizeof err;
		if ((fd = socket(p->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
			continue;
		if (connect(fd, p->ai_addr, p->ai_addrlen) < 0 && errno != EINPROGRESS) {
			err = errno;
		} else {
			pf.fd = fd;
			pf.events = POLLOUT;
			if (poll(&pf, 1, CONNECT_TIMEOUT_MS) == 1 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
				break;
			if (err == 0)
				err = ETIMEDOUT;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		char hint[200];
		snprintf(hint, sizeof hint, "check that sshd runs on %s port %d and that the "
		    "address in `sbxtop host ls` is right", t->addr, t->port);
		return sbx_error(e, SBX_EBACKEND, hint, "host %s: cannot connect to %s port %d: %s",
		    t->name, t->addr, t->port, strerror(err ? err : EHOSTUNREACH));
	}
	set_nonblock(fd, 0);
	{
		int one = 1;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	}
	return fd;
}

static int
knownhost_keybit(int type)
{
	switch (type) {
	case LIBSSH2_HOSTKEY_TYPE_RSA:		return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
	case LIBSSH2_HOSTKEY_TYPE_DSS:		return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:	return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:	return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
	case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:	return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
	case LIBSSH2_HOSTKEY_TYPE_ED25519:	return LIBSSH2_KNOWNHOST_KEY_ED25519;
	default:				return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
	}
}

/* The host key against ~/.ssh/known_hosts: strict, unless accept_new, which
 * records an unknown key (never replaces a changed one). */
static int
check_hostkey(LIBSSH2_SESSION *sess, const struct ssh_target *t, struct sbx_err *e)
{
	const char *home = getenv("HOME");
	_cleanup_free_ char *dir = NULL, *path = NULL;
	char hoststr[300], line[8192];
	size_t klen, outlen;
	int ktype, typemask, rc;
	const char *key = libssh2_session_hostkey(sess, &klen, &ktype);
	LIBSSH2_KNOWNHOSTS *kh;
	struct libssh2_knownhost *found = NULL, *added = NULL;

	if (home == NULL || home[0] != '/')
		return sbx_error(e, SBX_EBACKEND, "set HOME", "host %s: no home directory for "
		    "~/.ssh/known_hosts", t->name);
	if (key == NULL)
		return sbx_error(e, SBX_EBACKEND, NULL, "host %s sent no host key", t->name);
	dir = xasprintf("%s/.ssh", home);
	path = xasprintf("%s/known_hosts", dir);
	if (t->port == 22)
		snprintf(hoststr, sizeof hoststr, "%s", t->addr);
	else
		snprintf(hoststr, sizeof hoststr, "[%s]:%d", t->addr, t->port);
	if ((kh = libssh2_knownhost_init(sess)) == NULL)
		return sbx_error(e, SBX_EINTERNAL, NULL, "libssh2_knownhost_init failed");
	(void)libssh2_knownhost_readfile(kh, path, LIBSSH2_KNOWNHOST_FILE_OPENSSH);
	typemask = LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW |
	    knownhost_keybit(ktype);
	rc = libssh2_knownhost_checkp(kh, t->addr, t->port, key, klen, typemask, &found);
	if (rc == LIBSSH2_KNOWNHOST_CHECK_MATCH) {
		libssh2_knownhost_free(kh);
		return 0;
	}
	if (rc == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) {
		char hint[600];
		snprintf(hint, sizeof hint, "if the host was reinstalled or its key rotated on "
		    "purpose, remove the old key with `ssh-keygen -R '%s'` and add the host "
		    "again with --accept-new; otherwise do not connect", hoststr);
		libssh2_knownhost_free(kh);
		return sbx_error(e, SBX_EBACKEND, hint, "host %s: the host key of %s has CHANGED "
		    "since it was recorded in %s: refusing to connect (someone may be "
		    "intercepting the connection)", t->name, hoststr, path);
	}
	if (!t->accept_new) {
		char hint[600];
		snprintf(hint, sizeof hint, "verify the host's key and add it to %s (`ssh -p %d "
		    "%s@%s` once), or add the host with --accept-new to trust it on first use",
		    path, t->port, t->user, t->addr);
		libssh2_knownhost_free(kh);
		return sbx_error(e, SBX_EBACKEND, hint, "host %s: the host key of %s is not in %s",
		    t->name, hoststr, path);
	}
	/* Trust on first use: record the key as OpenSSH would. */
	if (libssh2_knownhost_addc(kh, hoststr, NULL, key, klen, NULL, 0, typemask, &added) != 0 ||
	    libssh2_knownhost_writeline(kh, added, line, sizeof line, &outlen,
	    LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0) {
		libssh2_knownhost_free(kh);
		return sbx_error(e, SBX_EINTERNAL, NULL, "host %s: cannot record its host key",
		    t->name);
	}
	libssh2_knownhost_free(kh);
	{
		_cleanup_close_ int fd = -1;
		if ((mkdir(dir, 0700) < 0 && errno != EEXIST) ||
		    (fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) < 0 ||
		    write_all(fd, line, outlen) < 0)
			return sbx_error_errno(e, SBX_EIO, NULL, "host %s: cannot write %s", t->name,
			    path);
	}
	log_info("host %s: recorded the host key of %s in %s", t->name, hoststr, path);
	return 0;
}

static int
authenticate(LIBSSH2_SESSION *sess, const struct ssh_target *t, struct sbx_err *e)
{
	const char *home = getenv("HOME");
	char tried[600] = "";
	size_t tn = 0;
	LIBSSH2_AGENT *agent;

	if (t->identity != NULL) {
		if (access(t->identity, R_OK) < 0)
			return sbx_error_errno(e, SBX_EINVAL, "give --identity a readable private key file",
			    "host %s: cannot read the identity %s", t->name, t->identity);
		if (libssh2_userauth_publickey_fromfile_ex(sess, t->user, (unsigned)strlen(t->user),
		    NULL, t->identity, NULL) == 0)
			return 0;
		char hint[700];
		snprintf(hint, sizeof hint, "add %s.pub to ~%s/.ssh/authorized_keys on %s, or give "
		    "another key with --identity", t->identity, t->user, t->addr);
		char *msg = NULL;
		libssh2_session_last_error(sess, &msg, NULL, 0);
		return sbx_error(e, SBX_EBACKEND, hint, "host %s: %s@%s refused the key %s (%s)",
		    t->name, t->user, t->addr, t->identity, msg ? msg : "");
	}
	/* ssh-agent first, as ssh does, then the usual key files. */
	if (getenv("SSH_AUTH_SOCK") != NULL && (agent = libssh2_agent_init(sess)) != NULL) {
		struct libssh2_agent_publickey *id = NULL, *prev = NULL;
		int ok = 0;
		if (libssh2_agent_connect(agent) == 0 && libssh2_agent_list_identities(agent) == 0) {
			while (!ok && libssh2_agent_get_identity(agent, &id, prev) == 0) {
				ok = libssh2_agent_userauth(agent, t->user, id) == 0;
				prev = id;
			}
			libssh2_agent_disconnect(agent);
		}
		libssh2_agent_free(agent);
		if (ok)
			return 0;
		tn += (size_t)snprintf(tried + tn, sizeof tried - tn, "ssh-agent");
	}
	if (home != NULL) {
		static const char *const names[] = { "id_ed25519", "id_ecdsa", "id_rsa" };
		for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
			_cleanup_free_ char *p = xasprintf("%s/.ssh/%s", home, names[i]);
			if (access(p, R_OK) < 0)
				continue;
			if (libssh2_userauth_publickey_fromfile_ex(sess, t->user,
			    (unsigned)strlen(t->user), NULL, p, NULL) == 0)
				return 0;
			if (tn < sizeof tried)
				tn += (size_t)snprintf(tried + tn, sizeof tried - tn, "%s%s",
				    tn ? ", " : "", p);
		}
	}
	return sbx_error(e, SBX_EBACKEND, "give the host a key it accepts: `sbxtop host add NAME "
	    "URL --identity KEY`, with KEY.pub in the user's ~/.ssh/authorized_keys there",
	    "host %s: %s@%s accepted none of our keys (tried: %s)", t->name, t->user, t->addr,
	    tn ? tried : "none found: no ssh-agent, no ~/.ssh/id_*");
}

static void *relay_main(void *arg);

static struct ssh_conn *
conn_new(const struct ssh_target *t, struct sbx_err *e)
{
	struct ssh_conn *c;
	LIBSSH2_SESSION *sess;
	int fd, rc;

	if ((fd = tcp_connect(t, e)) < 0)
		return NULL;
	if ((sess = libssh2_session_init()) == NULL) {
		close(fd);
		sbx_error(e, SBX_EINTERNAL, NULL, "libssh2_session_init failed");
		return NULL;
	}
	libssh2_session_set_blocking(sess, 1);
	libssh2_session_set_timeout(sess, HANDSHAKE_TIMEOUT_MS);
	if ((rc = libssh2_session_handshake(sess, fd)) != 0) {
		char *msg = NULL;
		libssh2_session_last_error(sess, &msg, NULL, 0);
		sbx_error(e, SBX_EBACKEND, "check that the port is an SSH server's",
		    "host %s: SSH handshake with %s port %d failed: %s", t->name, t->addr, t->port,
		    msg ? msg : "");
		goto fail;
	}
	if (check_hostkey(sess, t, e) < 0 || authenticate(sess, t, e) < 0)
		goto fail;
	libssh2_keepalive_config(sess, 1, KEEPALIVE_S);
	libssh2_session_set_timeout(sess, 0);
	libssh2_session_set_blocking(sess, 0);

	c = xcalloc(1, sizeof *c);
	c->name = xstrdup(t->name);
	c->sock = fd;
	c->sess = sess;
	pthread_mutex_init(&c->mu, NULL);
	if (pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) < 0)
		fatal("pipe2: %s", strerror(errno));
	if ((rc = pthread_create(&c->thr, NULL, relay_main, c)) != 0)
		fatal("pthread_create: %s", strerror(rc));
	return c;
fail:
	libssh2_session_free(sess);
	close(fd);
	return NULL;
}

static void
pair_close(struct ssh_conn *c, struct pair *p)
{
	int64_t saved = c->deadline;

	c->deadline = now_ms() + 1000;
	if (p->ch != NULL && !c->dead)
		(void)NB(c, libssh2_channel_free(p->ch));
	c->deadline = saved;
	close(p->fd);
	free(p);
}

/* Stop the relay thread and free everything (conns_mu held, c unlinked). */
static void
conn_free(struct ssh_conn *c)
{
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_mutex_unlock(&c->mu);
	(void)write(c->wake[1], "w", 1);
	pthread_join(c->thr, NULL);
	while (c->pairs != NULL) {
		struct pair *p = c->pairs;
		c->pairs = p->next;
		c->dead = 1;	/* no channel traffic now */
		pair_close(c, p);
	}
	while (c->relays != NULL) {
		struct relay *r = c->relays;
		c->relays = r->next;
		close(r->lfd);
		unlink(r->local);
		free(r->key);
		free(r->remote);
		free(r->local);
		free(r);
	}
	libssh2_session_disconnect(c->sess, "bye");
	libssh2_session_free(c->sess);
	close(c->sock);
	close(c->wake[0]);
	close(c->wake[1]);
	pthread_mutex_destroy(&c->mu);
	free(c->name);
	free(c);
}

struct ssh_conn *
ssh_get(const struct ssh_target *t, struct sbx_err *e)
{
	struct ssh_conn **pp, *c;

	pthread_once(&init_once, lib_init);
	pthread_mutex_lock(&conns_mu);
	for (pp = &conns; *pp != NULL; pp = &(*pp)->next) {
		if (strcmp((*pp)->name, t->name) != 0)
			continue;
		c = *pp;
		pthread_mutex_lock(&c->mu);
		int dead = c->dead;
		pthread_mutex_unlock(&c->mu);
		if (!dead) {
			pthread_mutex_unlock(&conns_mu);
			return c;
		}
		*pp = c->next;
		conn_free(c);
		break;
	}
	if ((c = conn_new(t, e)) != NULL) {
		c->next = conns;
		conns = c;
	}
	pthread_mutex_unlock(&conns_mu);
	return c;
}

void
ssh_drop(const char *name)
{
	struct ssh_conn **pp, *c;

	pthread_mutex_lock(&conns_mu);
	for (pp = &conns; *pp != NULL; pp = &(*pp)->next)
		if (strcmp((*pp)->name, name) == 0) {
			c = *pp;
			*pp = c->next;
			conn_free(c);
			break;
		}
	pthread_mutex_unlock(&conns_mu);
}

/* --- commands ------------------------------------------------------------------ */

int
ssh_run(struct ssh_conn *c, const char *cmd, const char *in, size_t inlen, char **out,
    int *status, char *errout, size_t errlen, struct sbx_err *e)
{
	LIBSSH2_CHANNEL *ch;
	struct buf ob, eb;
	char chunk[16384];
	long rc;
	int ret = -1;

	*out = NULL;
	*status = -1;
	if (errout && errlen)
		errout[0] = '\0';
	if (op_begin(c, OP_TIMEOUT_MS, e) < 0)
		return -1;
	buf_init(&ob, RUN_OUT_MAX);
	buf_init(&eb, 65536);
	if ((ch = NBP(c, libssh2_channel_open_session(c->sess))) == NULL) {
		op_fail(c, libssh2_session_last_errno(c->sess), "cannot open a session channel", e);
		goto out;
	}
	if ((rc = NB(c, libssh2_channel_exec(ch, cmd))) != 0) {
		op_fail(c, rc, "cannot run a command", e);
		goto close;
	}
	for (size_t off = 0; in != NULL && off < inlen;) {
		if ((rc = NB(c, libssh2_channel_write(ch, in + off, inlen - off))) < 0) {
			op_fail(c, rc, "cannot send the command's input", e);
			goto close;
		}
		off += (size_t)rc;
	}
	if ((rc = NB(c, libssh2_channel_send_eof(ch))) < 0) {
		op_fail(c, rc, "cannot send the command's input", e);
		goto close;
	}
	for (;;) {
		long r1 = FINISH(c, libssh2_channel_read(ch, chunk, sizeof chunk));
		if (r1 > 0 && buf_append(&ob, chunk, (size_t)r1) < 0) {
			sbx_error(e, SBX_EBACKEND, NULL, "host %s: a command wrote more than %d bytes",
			    c->name, RUN_OUT_MAX);
			goto close;
		}
		long r2 = FINISH(c, libssh2_channel_read_stderr(ch, chunk, sizeof chunk));
		if (r2 > 0)
			(void)buf_append(&eb, chunk, (size_t)r2);
		if (r1 > 0 || r2 > 0)
			continue;
		/* Reading stderr may have queued stdout's next packets (or its end):
		 * look again before waiting on a socket that has nothing more. */
		if (r1 == LIBSSH2_ERROR_EAGAIN &&
		    (r1 = FINISH(c, libssh2_channel_read(ch, chunk, sizeof chunk))) > 0) {
			if (buf_append(&ob, chunk, (size_t)r1) < 0) {
				sbx_error(e, SBX_EBACKEND, NULL, "host %s: a command wrote more than "
				    "%d bytes", c->name, RUN_OUT_MAX);
				goto close;
			}
			continue;
		}
		if ((r1 < 0 && r1 != LIBSSH2_ERROR_EAGAIN) || (r2 < 0 && r2 != LIBSSH2_ERROR_EAGAIN)) {
			op_fail(c, r1 < 0 && r1 != LIBSSH2_ERROR_EAGAIN ? r1 : r2,
			    "lost the command's output", e);
			goto close;
		}
		if (libssh2_channel_eof(ch))
			break;
		if (wait_io(c) < 0) {
			op_fail(c, LIBSSH2_ERROR_EAGAIN, "the command did not finish", e);
			goto close;
		}
	}
	(void)NB(c, libssh2_channel_close(ch));
	(void)NB(c, libssh2_channel_wait_closed(ch));
	{
		char *sig = NULL;
		libssh2_channel_get_exit_signal(ch, &sig, NULL, NULL, NULL, NULL, NULL);
		*status = sig != NULL ? -1 : libssh2_channel_get_exit_status(ch);
		libssh2_free(c->sess, sig);
	}
	if (errout && errlen && eb.len > 0) {
		/* The tail, on one line. */
		const char *p = eb.data + (eb.len > errlen - 1 ? eb.len - (errlen - 1) : 0);
		snprintf(errout, errlen, "%s", p);
		for (char *q = errout; *q; q++)
			if (*q == '\n' || (unsigned char)*q < 0x20)
				*q = ' ';
	}
	*out = ob.data ? ob.data : xstrdup("");
	ob.data = NULL;
	ret = 0;
close:
	(void)NB(c, libssh2_channel_free(ch));
out:
	buf_free(&ob);
	buf_free(&eb);
	op_end(c);
	return ret;
}

/* --- SFTP ---------------------------------------------------------------------- */

static int
sftp_fail(struct ssh_conn *c, LIBSSH2_SFTP *sftp, const char *what, const char *path,
    struct sbx_err *e)
{
	unsigned long st = libssh2_session_last_errno(c->sess) == LIBSSH2_ERROR_SFTP_PROTOCOL ?
	    libssh2_sftp_last_error(sftp) : 0;

	if (st == LIBSSH2_FX_NO_SPACE_ON_FILESYSTEM || st == LIBSSH2_FX_QUOTA_EXCEEDED)
		return sbx_error(e, SBX_EIO, "free space on the host, or point XDG_CACHE_HOME "
		    "there at a larger disk", "host %s: the disk is full: cannot %s %s", c->name,
		    what, path);
	if (st != 0)
		return sbx_error(e, SBX_EIO, NULL, "host %s: cannot %s %s (SFTP status %lu)",
		    c->name, what, path, st);
	return op_fail(c, libssh2_session_last_errno(c->sess), what, e);
}

static int
upload_tree(struct ssh_conn *c, LIBSSH2_SFTP *sftp, const char *local, const char *remote,
    int depth, struct sbx_err *e)
{
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (depth > 8)
		return sbx_error(e, SBX_EINVAL, NULL, "%s is nested too deep", local);
	if (NB(c, libssh2_sftp_mkdir(sftp, remote, 0755)) != 0)
		return sftp_fail(c, sftp, "create the directory", remote, e);
	if ((d = opendir(local)) == NULL)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", local);
	while (rc == 0 && (de = readdir(d)) != NULL) {
		_cleanup_free_ char *lp = NULL, *rp = NULL;
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		lp = xasprintf("%s/%s", local, de->d_name);
		rp = xasprintf("%s/%s", remote, de->d_name);
		if (stat(lp, &st) < 0) {
			rc = sbx_error_errno(e, SBX_EIO, NULL, "cannot stat %s", lp);
		} else if (S_ISDIR(st.st_mode)) {
			rc = upload_tree(c, sftp, lp, rp, depth + 1, e);
		} else if (S_ISREG(st.st_mode)) {
			_cleanup_close_ int fd = open(lp, O_RDONLY | O_CLOEXEC);
			LIBSSH2_SFTP_HANDLE *h;
			char chunk[32768];
			ssize_t n;
			if (fd < 0) {
				rc = sbx_error_errno(e, SBX_EIO, NULL, "cannot open %s", lp);
				break;
			}
			h = NBP(c, libssh2_sftp_open(sftp, rp, LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT |
			    LIBSSH2_FXF_TRUNC, (long)(st.st_mode & 0755)));
			if (h == NULL) {
				rc = sftp_fail(c, sftp, "create", rp, e);
				break;
			}
			while (rc == 0 && (n = read(fd, chunk, sizeof chunk)) > 0)
				for (ssize_t off = 0; off < n;) {
					long w = NB(c, libssh2_sftp_write(h, chunk + off, (size_t)(n - off)));
					if (w < 0) {
						rc = sftp_fail(c, sftp, "write", rp, e);
						break;
					}
					off += w;
				}
			if (NB(c, libssh2_sftp_close_handle(h)) != 0 && rc == 0)
				rc = sftp_fail(c, sftp, "write", rp, e);
		}
	}
	closedir(d);
	return rc;
}

/* Begin an operation (op_begin) with an SFTP session on it; NULL with e (the
 * operation ended) when the host does not serve SFTP. */
static LIBSSH2_SFTP *
sftp_begin(struct ssh_conn *c, int timeout_ms, struct sbx_err *e)
{
	LIBSSH2_SFTP *sftp;

	if (op_begin(c, timeout_ms, e) < 0)
		return NULL;
	if ((sftp = NBP(c, libssh2_sftp_init(c->sess))) == NULL) {
		op_fail(c, libssh2_session_last_errno(c->sess), "cannot start SFTP", e);
		snprintf(e->hint, sizeof e->hint, "enable SFTP on the host: `Subsystem sftp "
		    "internal-sftp` in its sshd_config");
		op_end(c);
	}
	return sftp;
}

int
ssh_upload_dir(struct ssh_conn *c, const char *local_dir, const char *remote_dir,
    struct sbx_err *e)
{
	LIBSSH2_SFTP *sftp;
	int rc;

	if ((sftp = sftp_begin(c, OP_TIMEOUT_MS, e)) == NULL)
		return -1;
	rc = upload_tree(c, sftp, local_dir, remote_dir, 0, e);
	(void)NB(c, libssh2_sftp_shutdown(sftp));
	op_end(c);
	return rc;
}

/* The attributes a file must keep between the lstat and the open: a sandbox that
 * swaps its log for a link in between gets the link's target refused unless it
 * has the log's own owner, group and mode. */
static int
same_file_attrs(const LIBSSH2_SFTP_ATTRIBUTES *a, const LIBSSH2_SFTP_ATTRIBUTES *b)
{
	if (!(a->flags & b->flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) ||
	    !(a->flags & b->flags & LIBSSH2_SFTP_ATTR_UIDGID))
		return 0;
	return LIBSSH2_SFTP_S_ISREG(b->permissions) && a->permissions == b->permissions &&
	    a->uid == b->uid && a->gid == b->gid;
}

int
ssh_read_file(struct ssh_conn *c, const char *path, uint64_t off, char *buf, size_t max,
    size_t *got, uint64_t *size, struct sbx_err *e)
{
	LIBSSH2_SFTP *sftp;
	LIBSSH2_SFTP_HANDLE *h = NULL;
	LIBSSH2_SFTP_ATTRIBUTES la, fa;
	long rc;
	int ret = -1;

	*got = 0;
	*size = 0;
	if ((sftp = sftp_begin(c, READ_TIMEOUT_MS, e)) == NULL)
		return -1;
	memset(&la, 0, sizeof la);
	if ((rc = NB(c, libssh2_sftp_stat_ex(sftp, path, (unsigned)strlen(path),
	    LIBSSH2_SFTP_LSTAT, &la))) != 0) {
		if (rc == LIBSSH2_ERROR_SFTP_PROTOCOL &&
		    libssh2_sftp_last_error(sftp) == LIBSSH2_FX_NO_SUCH_FILE)
			sbx_error(e, SBX_ENOTFOUND, NULL, "host %s: no %s", c->name, path);
		else
			sftp_fail(c, sftp, "stat", path, e);
		goto out;
	}
	if (!(la.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) || !LIBSSH2_SFTP_S_ISREG(la.permissions)) {
		sbx_error(e, SBX_EDENIED, NULL, "host %s: %s is not a regular file: not read",
		    c->name, path);
		goto out;
	}
	if ((h = NBP(c, libssh2_sftp_open_ex(sftp, path, (unsigned)strlen(path), LIBSSH2_FXF_READ,
	    0, LIBSSH2_SFTP_OPENFILE))) == NULL) {
		sftp_fail(c, sftp, "open", path, e);
		goto out;
	}
	memset(&fa, 0, sizeof fa);
	if ((rc = NB(c, libssh2_sftp_fstat_ex(h, &fa, 0))) != 0) {
		sftp_fail(c, sftp, "stat", path, e);
		goto out;
	}
	if (!same_file_attrs(&la, &fa) || !(fa.flags & LIBSSH2_SFTP_ATTR_SIZE)) {
		sbx_error(e, SBX_EDENIED, NULL, "host %s: %s changed while it was opened: not read",
		    c->name, path);
		goto out;
	}
	*size = fa.filesize;
	if (off < fa.filesize && max > 0) {
		size_t want = fa.filesize - off < max ? (size_t)(fa.filesize - off) : max;
		libssh2_sftp_seek64(h, off);
		while (*got < want) {
			rc = NB(c, libssh2_sftp_read(h, buf + *got, want - *got));
			if (rc < 0) {
				sftp_fail(c, sftp, "read", path, e);
				goto out;
			}
			if (rc == 0)
				break;		/* shorter than it said: take what there is */
			*got += (size_t)rc;
		}
	}
	ret = 0;
out:
	if (h != NULL)
		(void)NB(c, libssh2_sftp_close_handle(h));
	(void)NB(c, libssh2_sftp_shutdown(sftp));
	op_end(c);
	return ret;
}

/* --- relays --------------------------------------------------------------------- */

/* A direct-streamlocal@openssh.com channel to a unix socket on the host (the
 * OpenSSH extension `ssh -L port:/path` uses; libssh2 1.10 has no call for it,
 * but opens any channel type with its extra fields). */
static LIBSSH2_CHANNEL *
open_streamlocal(struct ssh_conn *c, const char *path)
{
	static const char type[] = "direct-streamlocal@openssh.com";
	unsigned char msg[4 + 108 + 4 + 4], *p = msg;
	size_t n = strlen(path);

	if (n > 107)
		return NULL;
	/* string socket path, string reserved, uint32 reserved */
	*p++ = (unsigned char)(n >> 24); *p++ = (unsigned char)(n >> 16);
	*p++ = (unsigned char)(n >> 8); *p++ = (unsigned char)n;
	memcpy(p, path, n);
	p += n;
	memset(p, 0, 8);
	p += 8;
	return NBP(c, libssh2_channel_open_ex(c->sess, type, sizeof type - 1,
	    LIBSSH2_CHANNEL_WINDOW_DEFAULT, LIBSSH2_CHANNEL_PACKET_DEFAULT, (const char *)msg,
	    (unsigned)(p - msg)));
}

int
ssh_relay(struct ssh_conn *c, const char *key, const char *remote_path, char **local,
    struct sbx_err *e)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct relay *r;
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;

	*local = NULL;
	pthread_mutex_lock(&conns_mu);
	if (relay_dir == NULL) {
		_cleanup_free_ char *rt = paths_ensure(PATHS_RUNTIME, e);
		if (rt == NULL) {
			pthread_mutex_unlock(&conns_mu);
			return -1;
		}
		relay_dir = xasprintf("%s/ssh-%d", rt, (int)getpid());
		if (mkdir(relay_dir, 0700) < 0 && errno != EEXIST) {
			sbx_error_errno(e, SBX_EIO, NULL, "cannot create %s", relay_dir);
			free(relay_dir);
			relay_dir = NULL;
			pthread_mutex_unlock(&conns_mu);
			return -1;
		}
	}
	path = xasprintf("%s/%s.sock", relay_dir, key);
	pthread_mutex_unlock(&conns_mu);

	pthread_mutex_lock(&c->mu);
	for (r = c->relays; r != NULL; r = r->next)
		if (strcmp(r->key, key) == 0 && strcmp(r->remote, remote_path) == 0) {
			*local = xstrdup(r->local);
			pthread_mutex_unlock(&c->mu);
			return 0;
		}
	pthread_mutex_unlock(&c->mu);

	if (strlen(path) >= sizeof un.sun_path)
		return sbx_error(e, SBX_EINVAL, "set XDG_RUNTIME_DIR to a shorter path",
		    "the relay socket %s would be too long", path);
	strcpy(un.sun_path, path);
	(void)unlink(path);	/* one left by an earlier process with our pid */
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0 ||
	    bind(fd, (struct sockaddr *)&un, sizeof un) < 0 || listen(fd, 64) < 0)
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot listen on %s", path);
	r = xcalloc(1, sizeof *r);
	r->key = xstrdup(key);
	r->remote = xstrdup(remote_path);
	r->local = xstrdup(path);
	r->lfd = steal_fd(&fd);
	pthread_mutex_lock(&c->mu);
	r->next = c->relays;
	c->relays = r;
	pthread_mutex_unlock(&c->mu);
	(void)write(c->wake[1], "w", 1);
	*local = xstrdup(path);
	return 0;
}

/* One non-blocking pass over a pair; 1 when bytes moved, 0 when not, -1 when the
 * pair is done. */
static int
pair_pump(struct ssh_conn *c, struct pair *p)
{
	int moved = 0;
	long r;

	if (p->uplen == 0 && !p->local_eof) {
		ssize_t n = read(p->fd, p->up, sizeof p->up);
		if (n > 0) {
			p->uplen = (size_t)n;
			p->upoff = 0;
			moved = 1;
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			p->local_eof = 1;
		}
	}
	while (p->upoff < p->uplen) {
		r = FINISH(c, libssh2_channel_write(p->ch, p->up + p->upoff, p->uplen - p->upoff));
		if (c->dead)
			return -1;
		if (r == LIBSSH2_ERROR_EAGAIN)
			break;
		if (r < 0) {
			if (socket_error((int)r))
				mark_dead(c, last_error(c));
			return -1;
		}
		p->upoff += (size_t)r;
		moved = 1;
	}
	if (p->upoff == p->uplen) {
		p->uplen = p->upoff = 0;
		if (p->local_eof && !p->eof_sent) {
			r = FINISH(c, libssh2_channel_send_eof(p->ch));
			if (c->dead)
				return -1;
			if (r == 0)
				p->eof_sent = 1;
			else if (r != LIBSSH2_ERROR_EAGAIN)
				return -1;
		}
	}
	if (p->downoff == p->downlen && !p->remote_eof) {
		p->downoff = p->downlen = 0;
		/* A read may send a window adjustment. */
		r = FINISH(c, libssh2_channel_read(p->ch, p->down, sizeof p->down));
		if (c->dead)
			return -1;
		if (r > 0) {
			p->downlen = (size_t)r;
			moved = 1;
		} else if (r < 0 && r != LIBSSH2_ERROR_EAGAIN) {
			if (socket_error((int)r))
				mark_dead(c, last_error(c));
			return -1;
		} else if (libssh2_channel_eof(p->ch)) {
			p->remote_eof = 1;
			(void)shutdown(p->fd, SHUT_WR);
		}
	}
	while (p->downoff < p->downlen) {
		ssize_t n = send(p->fd, p->down + p->downoff, p->downlen - p->downoff,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n < 0)
			return -1;
		p->downoff += (size_t)n;
		moved = 1;
	}
	if (p->remote_eof && p->local_eof && p->eof_sent)
		return -1;
	return moved;
}

static void
relay_pass(struct ssh_conn *c)
{
	/* New connections: each gets its own channel. */
	for (struct relay *r = c->relays; r != NULL; r = r->next) {
		int fd;
		while ((fd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
			struct pair *p;
			LIBSSH2_CHANNEL *ch;
			c->deadline = now_ms() + OPEN_TIMEOUT_MS;
			if (c->dead || (ch = open_streamlocal(c, r->remote)) == NULL) {
				if (!c->dead) {
					int rc = libssh2_session_last_errno(c->sess);
					log_warnx("host %s: cannot reach %s: %s", c->name, r->remote,
					    last_error(c));
					if (socket_error(rc))
						mark_dead(c, last_error(c));
				}
				close(fd);
				continue;
			}
			p = xcalloc(1, sizeof *p);
			p->fd = fd;
			p->ch = ch;
			p->next = c->pairs;
			c->pairs = p;
		}
	}
	/* Move bytes until nothing moves (libssh2 may hold data no poll shows). */
	/* A read on one channel drains the socket into libssh2's queues, data for
	 * the others included: a pass that moved nothing is followed by one more,
	 * since no poll will announce what is already queued. */
	for (int round = 0, moved = 1; (moved || round < 2) && round < 64 && !c->dead; round++) {
		moved = 0;
		for (struct pair **pp = &c->pairs; *pp != NULL;) {
			int rc = pair_pump(c, *pp);
			if (rc < 0) {
				struct pair *p = *pp;
				*pp = p->next;
				pair_close(c, p);
				continue;
			}
			moved |= rc;
			pp = &(*pp)->next;
		}
	}
	if (!c->dead) {
		int next = 0, rc = (int)FINISH(c, libssh2_keepalive_send(c->sess, &next));
		if (rc < 0 && rc != LIBSSH2_ERROR_EAGAIN)
			mark_dead(c, "keepalive failed");
	}
	if (c->dead) {
		/* The relayed connections break; their agents' clients see EOF. */
		while (c->pairs != NULL) {
			struct pair *p = c->pairs;
			c->pairs = p->next;
			pair_close(c, p);
		}
	}
}

static void *
relay_main(void *arg)
{
	struct ssh_conn *c = arg;
	struct pollfd *pf = NULL;
	size_t cap = 0;

	for (;;) {
		size_t n = 0, want;
		char drain[64];

		pthread_mutex_lock(&c->mu);
		if (c->stop) {
			pthread_mutex_unlock(&c->mu);
			break;
		}
		want = 2;
		for (struct relay *r = c->relays; r; r = r->next)
			want++;
		for (struct pair *p = c->pairs; p; p = p->next)
			want++;
		if (want > cap) {
			cap = want * 2;
			pf = xrealloc(pf, cap * sizeof *pf);
		}
		pf[n++] = (struct pollfd){ .fd = c->wake[0], .events = POLLIN };
		if (!c->dead) {
			int dir = libssh2_session_block_directions(c->sess);
			pf[n++] = (struct pollfd){ .fd = c->sock, .events = (short)(POLLIN |
			    ((dir & LIBSSH2_SESSION_BLOCK_OUTBOUND) ? POLLOUT : 0)) };
			for (struct relay *r = c->relays; r; r = r->next)
				pf[n++] = (struct pollfd){ .fd = r->lfd, .events = POLLIN };
		}
		for (struct pair *p = c->pairs; p; p = p->next)
			pf[n++] = (struct pollfd){ .fd = p->fd, .events = (short)(
			    (p->uplen == 0 && !p->local_eof ? POLLIN : 0) |
			    (p->downoff < p->downlen ? POLLOUT : 0)) };
		pthread_mutex_unlock(&c->mu);

		(void)poll(pf, (nfds_t)n, c->dead ? 1000 : 250);
		while (read(c->wake[0], drain, sizeof drain) > 0)
			;
		pthread_mutex_lock(&c->mu);
		if (!c->stop)
			relay_pass(c);
		pthread_mutex_unlock(&c->mu);
	}
	free(pf);
	return NULL;
}
