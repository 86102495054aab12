/* sbxtop serve --listen (serve-http.h): the HTTP MCP listener in the foreground.
 * The token never appears in argv (ps shows argv to every user): it comes from a
 * file, or is made here and printed once on stderr. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "cli/serve-http.h"
#include "core/log.h"
#include "core/util.h"
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
	unsigned char r[32];
	char *t = xmalloc(2 * sizeof r + 1);

	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
		fatal("getrandom: %s", strerror(errno));
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(t + 2 * i, 3, "%02x", r[i]);
	return t;
}

int
serve_http(struct cli *cli, const char *listen, const char *token_file, int fixtures)
{
	_cleanup_free_ char *token = NULL;
	struct mcp_http *h;
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
	if ((h = mcp_http_start(cli->core, listen, token, &e)) == NULL)
		return cli_error(&e);
	fprintf(stderr, "sbxtop serve: MCP (Streamable HTTP) at %s\n", mcp_http_url(h));
	if (token != NULL && token_file == NULL)
		fprintf(stderr, "sbxtop serve: token: %s\n"
		    "sbxtop serve: clients send it as \"Authorization: Bearer TOKEN\"; it is "
		    "shown only now (use --token-file to keep one)\n", token);
	fflush(stderr);
	while (sigwait(&set, &sig) != 0)
		;
	log_info("serve: signal %d: stopping", sig);
	mcp_http_stop(h);
	return 0;
}
