/* The thin sbxtop: what a command needs to be a client of the core server
 * (cli/main.c, the commands, core/client/client.c, the configuration) and nothing of
 * the core, the backends, the console or MCP, so a command loads no libcurl,
 * libmicrohttpd, libarchive, libseccomp, ncurses, OpenSSL or PCRE2 (about
 * 15 ms of a process's start).  Everything else -- the console, --mcp,
 * --standalone, --help, doctor, gc, image, setup, serve, forward, help, and a
 * command the core server cannot serve (cli_remote) -- execs the full binary,
 * sbxtop-core, next to this one or in ../lib/sbxtop, with the same arguments.
 *
 * The core functions the commands name for their in-process paths are defined
 * here as stand-ins that are never reached: those paths go through run_here,
 * which execs the full binary first. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/core-watch.h"
#include "core/paths.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/mcp.h"
#include "tui/tui.h"

static char **saved_argv;

static void exec_full(void) __attribute__((noreturn));

/* Exec the full binary with our arguments (argv[0] kept, so ps and pgrep show
 * what the user typed); exits if it cannot. */
static void
exec_full(void)
{
	static const char *const where[] = { "/sbxtop-core", "/../lib/sbxtop/sbxtop-core" };
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	char *slash;

	if (n <= 0) {
		fprintf(stderr, "sbxtop: cannot find this program (/proc/self/exe): %s\n",
		    strerror(errno));
		exit(1);
	}
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) != NULL)
		*slash = '\0';
	fflush(NULL);
	for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
		snprintf(path, sizeof path, "%s%s", exe, where[i]);
		if (access(path, X_OK) == 0) {
			execv(path, saved_argv);
			break;
		}
	}
	fprintf(stderr, "sbxtop: cannot run sbxtop-core next to %s/sbxtop or in "
	    "%s/../lib/sbxtop: %s (reinstall sbxtop: the commands need it)\n", exe, exe,
	    strerror(errno));
	exit(1);
}

static void
run_here(struct cli *cli)
{
	exec_full();
}

static int
run_full(struct cli *cli, int argc, char **argv)
{
	exec_full();
	return 1;
}

/* What the thin binary runs itself: the commands that are clients of the core
 * server, and `sbxtop` alone without a terminal. */
static const char *const thin_commands[] = { "create", "ls", "exec", "shell", "cp", "logs",
	"status", "suspend", "resume", "destroy" };

static int
thin_can(int argc, char **argv)
{
	const char *sa = getenv("SBXTOP_STANDALONE");
	int i;

	if (sa != NULL && sa[0] != '\0' && strcmp(sa, "0") != 0)
		return 0;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		int kind = cli_global_option(a);
		/* One it does not know is the full binary's to explain, with the
		 * whole table of commands. */
		if (kind < 0 || strcmp(a, "--mcp") == 0 || strcmp(a, "--standalone") == 0 ||
		    strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0 ||
		    strcmp(a, "--readonly") == 0)
			return 0;
		if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0)
			return 1;
		if (kind == 1)
			i++;
	}
	if (i >= argc)
		return !(isatty(0) && isatty(1));
	for (size_t k = 0; k < sizeof thin_commands / sizeof thin_commands[0]; k++)
		if (strcmp(argv[i], thin_commands[k]) == 0)
			return 1;
	return 0;
}

/* Without HOME the home directory comes from the password database, whose
 * modules a static program should not load: main execs the full binary first,
 * which looks it up, so this stand-in is never reached. */
const char *
paths_passwd_home(void)
{
	exec_full();
}

int
main(int argc, char **argv)
{
	/* A copy: commands change their arguments in place (cp cuts ID:PATH at
	 * the colon) before they may find they must run here. */
	saved_argv = xcalloc((size_t)argc + 1, sizeof *saved_argv);
	for (int i = 0; i < argc; i++)
		saved_argv[i] = xstrdup(argv[i]);
	if (!thin_can(argc, argv) || paths_home_env() == NULL)
		exec_full();
	return cli_main(argc, argv, run_here);
}

/* The commands the full binary runs: cmd_table (cli/cmd.c) names them. */
#define FULL_ONLY(n) const struct cmd_entry cmd_##n##_entry = { .name = #n, .usage = "", \
	.summary = "", .run = run_full }
FULL_ONLY(forward);
FULL_ONLY(doctor);
FULL_ONLY(gc);
FULL_ONLY(help);
FULL_ONLY(image);
FULL_ONLY(setup);
FULL_ONLY(serve);
FULL_ONLY(snapshot);
FULL_ONLY(fork);
FULL_ONLY(host);
FULL_ONLY(net);
FULL_ONLY(secret);
FULL_ONLY(key);
FULL_ONLY(diff);
FULL_ONLY(completion);

/* --- never reached: run_here execs the full binary first ----------------- */

#define UNREACHED() do { \
	fatal("%s: the thin sbxtop cannot run the core", __func__); \
	return -1; \
} while (0)

/* The configuration stays the command's (cli->cfg) until the end, as the core
 * would keep it; the core itself is never made. */
static struct config *kept_cfg;

struct core *
core_new(struct config *cfg)
{
	kept_cfg = cfg;
	return (struct core *)&kept_cfg;	/* never dereferenced */
}

void
core_free(struct core *c)
{
	config_free(kept_cfg);
	kept_cfg = NULL;
}

void
core_list_free(struct sandbox **v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++)
		sandbox_free(v[i]);
	free(v);
}

int core_create(struct core *c, const struct core_create_opts *o, struct sandbox **out,
    struct sbx_err *e) { UNREACHED(); }
int core_list(struct core *c, struct sandbox ***out, size_t *n, struct sbx_err *e)
{ UNREACHED(); }
int core_orphans(struct core *c) { UNREACHED(); }
int core_status(struct core *c, const char *key, struct sandbox **out, cJSON **health,
    struct sbx_err *e) { UNREACHED(); }
int core_suspend(struct core *c, const char *key, struct sbx_err *e) { UNREACHED(); }
int core_resume(struct core *c, const char *key, struct sbx_err *e) { UNREACHED(); }
int core_destroy(struct core *c, const char *key, char id_out[32], struct sbx_err *e)
{ UNREACHED(); }
int core_exec(struct core *c, const char *key, const struct core_exec_opts *o,
    core_output_fn out, void *arg, struct core_exec_result *res, struct sbx_err *e)
{ UNREACHED(); }
int core_copy_in(struct core *c, const char *key, const char *local, const char *remote,
    struct sbx_err *e) { UNREACHED(); }
int core_copy_out(struct core *c, const char *key, const char *remote, const char *local,
    struct sbx_err *e) { UNREACHED(); }
int core_copy_out_tar(struct core *c, const char *key, const char *remote, int fd,
    struct sbx_err *e) { UNREACHED(); }
int core_copy_in_tar(struct core *c, const char *key, int fd, const char *remote,
    struct sbx_err *e) { UNREACHED(); }
int core_logs(struct core *c, const char *key, const char *which, int follow, int fd,
    volatile int *stop, struct sbx_err *e) { UNREACHED(); }
int core_pty_open(struct core *c, const char *key, int cols, int rows, const char *command,
    const char *origin, struct sbx_err *e) { UNREACHED(); }
int mcp_serve_stdio(struct core *c, int in_fd, int out_fd) { UNREACHED(); }
int mcp_bridge_stdio(int in_fd, int out_fd) { UNREACHED(); }
int tui_main(struct config *cfg, const struct tui_opts *o) { UNREACHED(); }
