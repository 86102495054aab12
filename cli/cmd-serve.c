/* sbxtop serve: the core server (server/server.h).  Clients start it on demand,
 * so this command is for systemd, tests and people who want to see it: run it
 * in the foreground, start it in the background, or stop it. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/client/client.h"
#include "core/paths.h"
#include "lib/util.h"
#include "mcp/mcp.h"
#include "cli/serve-http.h"
#include "server/server.h"

#define STOP_WAIT_MS 15000

static int cmd_serve(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "foreground", no_argument, NULL, 'f' },
	{ "stop", no_argument, NULL, 's' },
	{ "listen", required_argument, NULL, 'l' },
	{ "token-file", required_argument, NULL, 't' },
	{ "conformance-fixtures", no_argument, NULL, 'C' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_serve_entry = {
	"serve", "[--foreground | --stop | --listen HOST:PORT [--token-file FILE]]",
	"run the core server that every client shares (started on demand)",
	"  (no option)     start the core server in the background unless one runs,\n"
	"                  and print its pid and socket\n"
	"  --foreground    run it in this process (for systemd and tests) until\n"
	"                  SIGTERM, `sbxtop serve --stop`, or the serve_grace period\n"
	"                  with no clients and no forwards\n"
	"  --stop          ask the running server to stop, and wait until it has;\n"
	"                  sandboxes keep running, forwards come back with the next\n"
	"                  server\n"
	"  --listen HOST:PORT\n"
	"                  serve MCP over Streamable HTTP and HTTP+SSE at\n"
	"                  http://HOST:PORT/mcp (and /health, /metrics, the REST API:\n"
	"                  /v1/..., described by /v1/openapi.json, /exec/SESSION/...\n"
	"                  and /admin/keys) until SIGINT or SIGTERM, from the core\n"
	"                  server, so the console sees the sessions (with\n"
	"                  --standalone: MCP only, on this process's own core); 127.0.0.1\n"
	"                  unless you mean otherwise, port 0 picks a free one\n"
	"  --token-file FILE\n"
	"                  the token HTTP clients must send (Authorization: Bearer,\n"
	"                  X-API-Key or ?api_key), the operator's key with every\n"
	"                  scope; without it one is made up and printed once on\n"
	"                  standard error.  API keys of `sbxtop key` work in its place,\n"
	"                  within their scopes\n"
	"  --conformance-fixtures\n"
	"                  TEST ONLY: the MCP conformance suite's fixture tools, and\n"
	"                  no token\n",
	cmd_serve,
	.options = options,
	.words = "",
};

/* The pid in server.lock, or 0. */
static int
server_pid(void)
{
	_cleanup_free_ char *p = paths_file(PATHS_RUNTIME, "server.lock", 0, NULL), *t = NULL;
	size_t n;

	if (p == NULL || (t = read_file(p, 64, &n)) == NULL)
		return 0;
	return atoi(t);
}

/* 1 while a server holds server.lock. */
static int
server_alive(void)
{
	_cleanup_free_ char *p = paths_file(PATHS_RUNTIME, "server.lock", 0, NULL);
	_cleanup_close_ int fd = p ? open(p, O_RDWR | O_CLOEXEC) : -1;

	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK;
	flock(fd, LOCK_UN);
	return 0;
}

static int
do_stop(void)
{
	static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sbxtop/shutdown\"}\n";
	struct sbx_err e;
	char buf[256];
	int pid = server_pid(), fd = client_connect_fd(NULL, 0, &e);

	if (fd < 0) {
		if (!server_alive()) {
			cli_printf(stderr, "sbxtop: no core server is running\n");
			return 0;
		}
	} else {
		/* No hello: a server of another version must be stoppable too. */
		if (write_all(fd, req, sizeof req - 1) < 0) {
			close(fd);
			cli_printf(stderr, "sbxtop: the core server closed the connection\n");
			return 1;
		}
		/* It closes every connection, ours included, once it stops. */
		while (read(fd, buf, sizeof buf) > 0)
			;
		close(fd);
	}
	for (int64_t end = now_ms() + STOP_WAIT_MS; server_alive(); poll(NULL, 0, 20))
		if (now_ms() >= end) {
			cli_printf(stderr, "sbxtop: the core server (pid %d) did not stop within %d s\n",
			    pid, STOP_WAIT_MS / 1000);
			return 1;
		}
	cli_printf(stderr, "sbxtop: the core server (pid %d) stopped\n", pid);
	return 0;
}

static int
cmd_serve(struct cli *cli, int argc, char **argv)
{
	const struct cmd_entry *me = &cmd_serve_entry;
	const char *listen = NULL, *token_file = NULL;
	int fg = 0, stop = 0, fixtures = 0, c, fd;
	struct sbx_err e;
	_cleanup_free_ char *path = NULL;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
		switch (c) {
		case 'f': fg = 1; break;
		case 's': stop = 1; break;
		case 'l': listen = optarg; break;
		case 't': token_file = optarg; break;
		case 'C': fixtures = 1; break;
		default: return cli_bad_option(me, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage(me, "unexpected argument '%s'", argv[optind]);
	if (fg && stop)
		return cli_usage(me, "--foreground and --stop go alone");
	if (stop)
		return do_stop();
	if (listen != NULL) {
		int rc = serve_http(cli, listen, token_file, fixtures);
		mcp_tasks_shutdown();	/* before the core they run on goes */
		return rc;
	}
	if (token_file != NULL || fixtures)
		return cli_usage(me, "--token-file and --conformance-fixtures go with --listen");
	if (fg) {
		int rc;
		/* The console's RUN column: what runs in each sandbox, whoever
		 * started it, and after a restart of this server too. */
		core_runs_track(cli->core, 1);
		rc = server_run(cli->core, &e);
		mcp_tasks_shutdown();	/* before the core they run on goes */
		return rc < 0 ? cli_error(&e) : 0;
	}
	if ((fd = client_connect_fd("cli", 1, &e)) < 0)
		return cli_error(&e);
	close(fd);
	if ((path = client_socket_path(&e)) == NULL)
		return cli_error(&e);
	cli_printf(stdout, "sbxtop: core server pid %d on %s\n", server_pid(), path);
	return 0;
}
