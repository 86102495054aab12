/* The MCP bridge (`sbxtop --mcp`): stdio relayed to the core server, so the
 * session lives in the core and every console sees it.  Lines go through
 * unchanged, whole: a message is written only once all of it has arrived, so a
 * core that dies leaves no half message on either side.
 *
 * The bridge reads just enough of each line to keep two things: the ids of the
 * requests in flight (answered with an error when the core dies) and the
 * client's initialize request (sent again to the next core, whose session is
 * new, before anything else).  At the end of standard input it waits for the
 * answers to what is in flight before it lets the core close the session:
 * `printf '...' | sbxtop --mcp` gets every answer, as a client that stays
 * does. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/client/client.h"
#include "core/paths.h"
#include "lib/line-reader.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"

#define CORE_LINE_MAX	(64u << 20)	/* largest line taken whole from the core */
#define REPLAY_ID	"sbxtop-bridge-initialize"

struct bridge {
	int		 in_fd, out_fd;
	pthread_mutex_t	 out_mu;	/* whole lines to out_fd */
	pthread_mutex_t	 mu;		/* everything below */
	pthread_cond_t	 answered;	/* pending shrank, or the core went */
	int		 sock;		/* -1: no core */
	int		 reader_live;
	pthread_t	 reader;
	cJSON		*pending;	/* array of request ids in flight */
	char		*init_line;	/* the client's initialize, for a new core */
	int		 stdin_done;
};

static void
out_line(struct bridge *br, const char *msg, size_t len)
{
	pthread_mutex_lock(&br->out_mu);
	(void)write_line(br->out_fd, msg, len);	/* the client is gone; stdin will tell */
	pthread_mutex_unlock(&br->out_mu);
}

static void
out_text(struct bridge *br, char *text)
{
	out_line(br, text, strlen(text));
	free(text);
}

/* With br->mu held. */
static void
pending_remove(struct bridge *br, const cJSON *id)
{
	int i = 0;
	const cJSON *x;

	cJSON_ArrayForEach(x, br->pending) {
		if (jsonrpc_id_equal(x, id)) {
			cJSON_DeleteItemFromArray(br->pending, i);
			return;
		}
		i++;
	}
}

/* The core's lines: note the answers, and pass each line on whole. */
static void
core_line(void *arg, const char *p, size_t n)
{
	struct bridge *br = arg;
	cJSON *m = cJSON_ParseWithLength(p, n);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");

	if (m != NULL && id != NULL && cJSON_GetObjectItemCaseSensitive(m, "method") == NULL) {
		/* The answer to our own initialize for a new core is ours. */
		if (cJSON_IsString(id) && strcmp(id->valuestring, REPLAY_ID) == 0) {
			cJSON_Delete(m);
			return;
		}
		pthread_mutex_lock(&br->mu);
		pending_remove(br, id);
		pthread_cond_broadcast(&br->answered);
		pthread_mutex_unlock(&br->mu);
	}
	cJSON_Delete(m);
	out_line(br, p, n);
}

/* A line of the core's too long to hold goes through as it comes. */
static void
core_over(void *arg, const char *p, size_t n, int first, int end)
{
	struct bridge *br = arg;

	pthread_mutex_lock(&br->out_mu);
	(void)!write_all(br->out_fd, p, n);
	if (end)
		(void)!write_all(br->out_fd, "\n", 1);
	pthread_mutex_unlock(&br->out_mu);
}

static void *
reader_main(void *arg)
{
	struct bridge *br = arg;
	struct line_reader in;
	int fd, clean;
	cJSON *lost;

	pthread_mutex_lock(&br->mu);
	fd = br->sock;
	pthread_mutex_unlock(&br->mu);
	/* A last line without its newline is half a message: dropped. */
	line_reader_init(&in, CORE_LINE_MAX, core_line, core_over, br);
	(void)line_reader_read_fd(&in, fd);
	line_reader_free(&in);

	pthread_mutex_lock(&br->mu);
	clean = br->stdin_done;
	lost = br->pending;
	br->pending = cJSON_CreateArray();
	close(br->sock);
	br->sock = -1;
	pthread_cond_broadcast(&br->answered);
	pthread_mutex_unlock(&br->mu);
	if (!clean) {
		const cJSON *id;
		log_warnx("mcp: the core server went away; the next message starts a new one");
		cJSON_ArrayForEach(id, lost)
			out_text(br, jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "Internal error: the "
			    "sbxtop core server stopped while this request ran (a command it ran "
			    "was stopped with it); the sandboxes are kept: retry", NULL));
	}
	cJSON_Delete(lost);
	return NULL;
}

/* Write a whole line to the core; -1 when the core is gone. */
static int
core_write(int sock, const char *p, size_t n, int newline)
{
	if (write_all(sock, p, n) < 0 || (newline && write_all(sock, "\n", 1) < 0))
		return -1;
	return 0;
}

/* With br->mu held: a core to talk to (a new one after a crash). */
static int
ensure_core(struct bridge *br, int first)
{
	struct sbx_err e;
	int fd;

	if (br->sock >= 0)
		return 0;
	if (br->reader_live) {
		pthread_mutex_unlock(&br->mu);
		pthread_join(br->reader, NULL);
		pthread_mutex_lock(&br->mu);
		br->reader_live = 0;
	}
	if ((fd = client_connect_fd("mcp", 1, &e)) < 0) {
		log_errx("mcp: %s%s%s%s", e.msg, e.hint[0] ? " (" : "", e.hint,
		    e.hint[0] ? ")" : "");
		return -1;
	}
	br->sock = fd;
	/* A new core has a new session: initialize it as the client did. */
	if (!first && br->init_line != NULL) {
		cJSON *m = cJSON_Parse(br->init_line);
		char *t, *note;
		cJSON_ReplaceItemInObjectCaseSensitive(m, "id", cJSON_CreateString(REPLAY_ID));
		t = cJSON_PrintUnformatted(m);
		cJSON_Delete(m);
		note = jsonrpc_notification("notifications/initialized", NULL);
		if (t == NULL || core_write(fd, t, strlen(t), 1) < 0 ||
		    core_write(fd, note, strlen(note), 1) < 0)
			log_warnx("mcp: cannot initialize the new core's session");
		free(t);
		free(note);
	}
	if (pthread_create(&br->reader, NULL, reader_main, br) != 0) {
		close(fd);
		br->sock = -1;
		log_errx("mcp: cannot start a thread");
		return -1;
	}
	br->reader_live = 1;
	if (!first) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "level", "warning");
		cJSON_AddStringToObject(p, "logger", "sbxtop");
		cJSON_AddStringToObject(p, "data", "the sbxtop core server restarted: this is a "
		    "new session (requests that were running got errors; sandboxes, files and "
		    "forwards are kept)");
		out_text(br, jsonrpc_notification("notifications/message", p));
	}
	return 0;
}

static cJSON *
fallback_note(void)
{
	cJSON *p = cJSON_CreateObject();
	char *t = xasprintf("XDG_RUNTIME_DIR is unset and there is no private /run/user/%u: "
	    "this session's core server runs in %s, which a console started from a login "
	    "shell does not see (its approvals do not apply here). Pass XDG_RUNTIME_DIR in "
	    "the MCP server's environment (\"env\" in the client's configuration).",
	    (unsigned)getuid(), paths_runtime_fallback());

	cJSON_AddStringToObject(p, "level", "warning");
	cJSON_AddStringToObject(p, "logger", "sbxtop");
	cJSON_AddStringToObject(p, "data", t);
	free(t);
	return p;
}

/* One whole line from the client: note what matters, send it on. */
static void
client_line(void *arg, const char *p, size_t n)
{
	struct bridge *br = arg;
	cJSON *m;
	const char *method;
	const cJSON *id;
	int sock, rc = 0;

	if (n == 0)
		return;
	m = cJSON_ParseWithLength(p, n);
	method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "method"));
	id = cJSON_GetObjectItemCaseSensitive(m, "id");
	pthread_mutex_lock(&br->mu);
	if (ensure_core(br, 0) < 0) {
		pthread_mutex_unlock(&br->mu);
		if (method != NULL && id != NULL)
			out_text(br, jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "Internal error: no "
			    "sbxtop core server could be reached or started (see its log)", NULL));
		cJSON_Delete(m);
		return;
	}
	if (method != NULL && id != NULL) {
		cJSON_AddItemToArray(br->pending, cJSON_Duplicate(id, 1));
		if (strcmp(method, "initialize") == 0) {
			free(br->init_line);
			br->init_line = xstrndup(p, n);
		}
	}
	sock = br->sock;
	pthread_mutex_unlock(&br->mu);
	if (core_write(sock, p, n, 1) < 0) {
		/* The reader sees the end too and answers what is pending. */
		shutdown(sock, SHUT_RDWR);
		rc = -1;
	}
	/* The session is up: an agent whose client stripped XDG_RUNTIME_DIR learns
	 * that the console it is watched from cannot see it. */
	if (rc == 0 && method != NULL && id == NULL &&
	    strcmp(method, "notifications/initialized") == 0 && paths_runtime_fallback() != NULL)
		out_text(br, jsonrpc_notification("notifications/message", fallback_note()));
	cJSON_Delete(m);
}

/* A client line over the limit: the core answers it with an error; it goes
 * through as it comes rather than held 16 MiB here. */
static void
client_over(void *arg, const char *p, size_t n, int first, int end)
{
	struct bridge *br = arg;
	int s;

	pthread_mutex_lock(&br->mu);
	s = !first || ensure_core(br, 0) == 0 ? br->sock : -1;
	pthread_mutex_unlock(&br->mu);
	if (s >= 0)
		(void)core_write(s, p, n, end);
}

/* Whether nobody reads fd any more (a pipe whose reader closed it). */
static int
reader_gone(int fd)
{
	struct pollfd p = { fd, 0, 0 };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL));
}

int
mcp_bridge_stdio(int in_fd, int out_fd)
{
	struct bridge br = {
		.in_fd = in_fd, .out_fd = out_fd, .sock = -1,
		.out_mu = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER,
		.answered = PTHREAD_COND_INITIALIZER,
	};
	struct line_reader in;
	int rc = 0;

	br.pending = cJSON_CreateArray();
	pthread_mutex_lock(&br.mu);
	if (ensure_core(&br, 1) < 0) {
		pthread_mutex_unlock(&br.mu);
		cJSON_Delete(br.pending);
		return 1;
	}
	pthread_mutex_unlock(&br.mu);

	line_reader_init(&in, MCP_LINE_MAX, client_line, client_over, &br);
	if (line_reader_read_fd(&in, in_fd) < 0) {
		log_warn("mcp: cannot read from the client");
		rc = 1;
	}
	line_reader_finish(&in);
	line_reader_free(&in);

	/* The client has said all it will: what it asked is answered first (a
	 * held call too, however long its operator takes), then the core ends
	 * the session and closes.  A client that is gone (nobody reads our
	 * output) waits for nothing; one that stops us (SIGTERM, as MCP's
	 * shutdown goes on) ends the session with us. */
	pthread_mutex_lock(&br.mu);
	while (br.sock >= 0 && cJSON_GetArraySize(br.pending) > 0 && !reader_gone(out_fd)) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 250 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&br.answered, &br.mu, &until);
	}
	br.stdin_done = 1;
	if (br.sock >= 0)
		shutdown(br.sock, SHUT_WR);
	pthread_mutex_unlock(&br.mu);
	if (br.reader_live)
		pthread_join(br.reader, NULL);
	cJSON_Delete(br.pending);
	free(br.init_line);
	return rc;
}
