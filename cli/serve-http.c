/* sbxtop serve --listen (serve-http.h): the HTTP MCP listener in the foreground.
 * It lives in the core server (sbxtop/http_listen), so HTTP clients' sessions
 * are the console's to see, for as long as this process keeps its connection;
 * with --standalone or --conformance-fixtures, in this process on a core of its
 * own.  The token never appears in argv (ps shows argv to every user): it comes
 * from a file, or is made here and printed once on stderr. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "cli/serve-http.h"
#include "core/client/client.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/http.h"
#include "mcp/tool.h"

#define TOKEN_MIN	16
#define TOKEN_MAX	512

/* The first line of path, trimmed; NULL with e. */
static char *
token_read(const char *path, struct sbx_err *e)
{
	size_t len;
	struct stat st;
	char *t = read_file(path, TOKEN_MAX + 2, &len);

	if (t == NULL) {
		sbx_error_errno(e, SBX_EIO, "give a file holding the token on its first line",
		    "--token-file: cannot read '%s'", path);
		return NULL;
	}
	t[strcspn(t, "\r\n")] = '\0';
	len = strlen(t);
	while (len > 0 && (t[len - 1] == ' ' || t[len - 1] == '\t'))
		t[--len] = '\0';
	if (len < TOKEN_MIN || len > TOKEN_MAX || strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-._~+/=") != len) {
		free(t);
		sbx_error(e, SBX_EINVAL, "e.g. `head -c 32 /dev/urandom | base64 > FILE`",
		    "--token-file: the token must be %d to %d characters of A-Z a-z 0-9 "
		    "-._~+/=", TOKEN_MIN, TOKEN_MAX);
		return NULL;
	}
	if (stat(path, &st) == 0 && (st.st_mode & 077) != 0)
		log_warnx("--token-file: %s can be read by other users (chmod 600 it)", path);
	return t;
}

static char *
token_make(void)
{
	char *t = xmalloc(2 * 32 + 1);

	random_hex(t, 32);
	return t;
}

static volatile sig_atomic_t server_lost;

/* The core server went away, and the listener with it: end the wait. */
static void
on_lost(void *arg)
{
	server_lost = 1;
	kill(getpid(), SIGTERM);
}

static void
announce(const char *url, const char *token, const char *token_file)
{
	/* One write: whoever reads the URL line has the token line too. */
	if (token != NULL && token_file == NULL)
		fprintf(stderr, "sbxtop serve: MCP (Streamable HTTP) at %s\n"
		    "sbxtop serve: token: %s\n"
		    "sbxtop serve: clients send it as \"Authorization: Bearer TOKEN\" (or an "
		    "API key: sbxtop key add); it is shown only now (use --token-file to keep "
		    "one)\n", url, token);
	else
		fprintf(stderr, "sbxtop serve: MCP (Streamable HTTP) at %s\n", url);
	fflush(stderr);
}

/* The listener in the core server, until a signal or until the server stops. */
static int
serve_in_server(struct client *c, const char *listen, const char *token,
    const char *token_file, sigset_t *set)
{
	cJSON *p = cJSON_CreateObject(), *r = NULL;
	struct sbx_err e;
	int sig, rc;

	cJSON_AddStringToObject(p, "listen", listen);
	cJSON_AddStringToObject(p, "token", token);
	rc = cli_call(c, "sbxtop/http_listen", p, &r, &e);
	cJSON_Delete(p);
	if (rc < 0) {
		client_close(c);
		return cli_error(&e);
	}
	client_on_disconnect(c, on_lost, NULL);
	announce(cJSON_GetStringValue(cJSON_GetObjectItem(r, "url")) ?: "?", token,
	    token_file);
	cJSON_Delete(r);
	while (sigwait(set, &sig) != 0)
		;
	/* Closing the connection closes the listener and ends its sessions. */
	client_close(c);
	if (server_lost) {
		fprintf(stderr, "sbxtop serve: the core server stopped, and the listener "
		    "with it\n");
		return 1;
	}
	log_info("serve: signal %d: stopping", sig);
	return 0;
}

int
serve_http(struct cli *cli, const char *listen, const char *token_file, int fixtures)
{
	_cleanup_free_ char *token = NULL;
	struct mcp_http *h;
	struct client *c;
	struct sbx_err e;
	sigset_t set;
	int sig;

	if (fixtures) {
		if (token_file != NULL) {
			fprintf(stderr, "sbxtop serve: --conformance-fixtures serves without a "
			    "token; drop --token-file\n");
			return 2;
		}
		mcp_tools_fixtures(1);
		log_warnx("--conformance-fixtures: TEST ONLY: fixture tools registered and "
		    "no bearer token required");
	} else if (token_file != NULL) {
		if ((token = token_read(token_file, &e)) == NULL)
			return cli_error(&e);
	} else {
		token = token_make();
	}
	/* SIGINT and SIGTERM are waited for below: block them before the server's
	 * threads start, so those threads inherit the mask and never take them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	/* The fixtures would show in every session of the server: in-process. */
	if (!fixtures && cli_remote(cli, &c))
		return serve_in_server(c, listen, token, token_file, &set);
	if ((h = mcp_http_start(cli->core, listen, token, &e)) == NULL)
		return cli_error(&e);
	announce(mcp_http_url(h), token, token_file);
	while (sigwait(&set, &sig) != 0)
		;
	log_info("serve: signal %d: stopping", sig);
	mcp_http_stop(h);
	return 0;
}
