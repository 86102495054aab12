/* sbxtop: the admin commands, the MCP bridge (--mcp) and the operator console.
 * The admin commands ask the core server (server/, started on demand) to do
 * their work, as --mcp relays to it; with --standalone they run the core in
 * this process. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/client/client.h"
#include "lib/log.h"
#include "lib/util.h"
#include "mcp/mcp.h"
#include "tui/tui.h"

static int
wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return 1;
	return 0;
}

static void
apply_log_level(const struct config *cfg)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	const char *l = config_str(cfg, "log_level");

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strcmp(l, names[i]) == 0)
			log_set_level((enum log_level)i);
}

/* `sbxtop` alone without a terminal (a script, a pipe): say what there is. */
static int
short_status(struct cli *cli)
{
	struct sandbox **v;
	size_t n, running = 0;
	struct sbx_err e;

	if (cli_list(cli, &v, &n, NULL, &e) < 0)
		return cli_error(&e);
	for (size_t i = 0; i < n; i++)
		running += v[i]->state == SBX_RUNNING;
	cli_printf(stdout, "sbxtop %s: %zu sandbox%s, %zu running\n", SBX_VERSION, n, n == 1 ? "" : "es",
	    running);
	for (size_t i = 0; i < n; i++)
		cli_printf(stdout, "  %-12s %-16s %s\n", v[i]->id, v[i]->name ? v[i]->name : "-",
		    sbx_state_name(v[i]->state));
	if (n == 0)
		cli_printf(stdout, "Create one with `sbxtop create`.\n");
	cli_printf(stdout, "On a terminal, `sbxtop` opens the operator console; `sbxtop --help` lists "
	    "the commands.\n");
	core_list_free(v, n);
	return 0;
}

/* sbxtop --mcp: MCP on stdin and stdout.  stdout is the protocol, so the
 * protocol gets its own descriptor and fd 1 becomes stderr: nothing else in the
 * process (a stray printf, a child that inherits fd 1) can corrupt the stream.
 * Standalone, the session runs here; otherwise in the core server. */
static int
serve_mcp(struct cli *cli)
{
	int out = fcntl(1, F_DUPFD_CLOEXEC, 3);
	int rc;

	if (out < 0 || dup2(2, 1) < 0) {
		log_warn("--mcp: cannot set up standard output");
		return 1;
	}
	set_cloexec(0);
	if (cli->standalone)
		rc = mcp_serve_stdio(cli->core, 0, out);
	else
		rc = mcp_bridge_stdio(0, out);
	close(out);
	return rc;
}

/* The options that are not about one sandbox, given before the command:
 * --log-level L, --approve A (or --opt=value).  0 when argv[*i] was one. */
static const char *const global_opts[] = { "log_level", "approve", "approval_timeout",
	"approval_default", "serve_grace", "theme", "lambda_region",
	"lambda_endpoint_url", "lambda_image", "mcp_budget" };

/* The global options that are not configuration options. */
static const char *const global_flags[] = { "version", "help", "mcp", "standalone",
	"readonly" };

int
cli_global_option(const char *a)
{
	if (strcmp(a, "-h") == 0 || strcmp(a, "-V") == 0)
		return 0;
	if (strncmp(a, "--", 2) != 0)
		return -1;
	a += 2;
	for (size_t k = 0; k < ARRAY_SIZE(global_flags); k++)
		if (strcmp(a, global_flags[k]) == 0)
			return 0;
	for (size_t k = 0; k <= ARRAY_SIZE(global_opts); k++) {
		const char *f = k < ARRAY_SIZE(global_opts) ?
		    config_option_find(global_opts[k])->flag : "log";
		size_t fl = strlen(f);
		if (strncmp(a, f, fl) == 0 && (a[fl] == '\0' || a[fl] == '='))
			return a[fl] == '=' ? 2 : 1;
	}
	return -1;
}

size_t
cli_globals(const char **names, int *value, size_t max)
{
	size_t n = 0;

	for (size_t k = 0; k < ARRAY_SIZE(global_flags) && n < max; k++, n++) {
		names[n] = global_flags[k];
		value[n] = 0;
	}
	for (size_t k = 0; k <= ARRAY_SIZE(global_opts) && n < max; k++, n++) {
		names[n] = k < ARRAY_SIZE(global_opts) ? config_option_find(global_opts[k])->flag :
		    "log";
		value[n] = 1;
	}
	return n;
}

/* "sbxtop: unknown option '--bogus'" with the nearest global option. */
static void
unknown_global(const char *a)
{
	const char *cands[ARRAY_SIZE(global_flags) + ARRAY_SIZE(global_opts) + 1], *near;
	char name[64];
	size_t n = 0;

	for (size_t k = 0; k < ARRAY_SIZE(global_flags); k++)
		cands[n++] = global_flags[k];
	for (size_t k = 0; k < ARRAY_SIZE(global_opts); k++)
		cands[n++] = config_option_find(global_opts[k])->flag;
	cands[n++] = "log";
	snprintf(name, sizeof name, "%.*s", (int)strcspn(a, "="), a);
	near = strncmp(name, "--", 2) == 0 ? cli_nearest(name + 2, cands, n) : NULL;
	if (near != NULL)
		fprintf(stderr, "sbxtop: unknown option '%s' (did you mean '--%s'?)\n", name, near);
	else
		fprintf(stderr, "sbxtop: unknown option '%s'\n", name);
}

/* "sbxtop: unknown command 'exce'" with the nearest command. */
static void
unknown_command(const char *w)
{
	const char *cands[64], *near;
	size_t n = 0;

	for (size_t i = 0; cmd_table[i] != NULL && n < ARRAY_SIZE(cands); i++)
		cands[n++] = cmd_table[i]->name;
	near = cli_nearest(w, cands, n);
	if (near != NULL)
		fprintf(stderr, "sbxtop: unknown command '%s' (did you mean '%s'? `sbxtop --help` "
		    "lists them)\n", w, near);
	else
		fprintf(stderr, "sbxtop: unknown command '%s' (run `sbxtop --help`)\n", w);
}

struct global_set {
	const char	*name, *value;
};

static int
global_option(char **argv, int argc, int *i, size_t *nset,
    struct global_set *set)
{
	const char *a = argv[*i];

	if (strncmp(a, "--", 2) != 0 || *nset >= 8)
		return -1;
	for (size_t k = 0; k < ARRAY_SIZE(global_opts); k++) {
		const struct config_option *o = config_option_find(global_opts[k]);
		size_t fl = strlen(o->flag);
		if (strncmp(a + 2, o->flag, fl) != 0)
			continue;
		if (a[2 + fl] == '=') {
			set[*nset].value = a + 3 + fl;
		} else if (a[2 + fl] == '\0' && *i + 1 < argc) {
			set[*nset].value = argv[++*i];
		} else {
			continue;
		}
		set[(*nset)++].name = o->name;
		return 0;
	}
	return -1;
}

/* The global flags before the command. */
struct globals {
	struct global_set	 set[8];	/* the settings given as flags */
	size_t			 nset;
	const char		*log_path;
	struct tui_opts		 tui;
	int			 mcp, standalone;
};

/* Read the global flags from argv[1] on, *i left at the first word that is
 * none: -1 to go on, or the status to exit with (--version, --help, a flag
 * not known). */
static int
parse_globals(int argc, char **argv, int *i, struct globals *g)
{
	for (*i = 1; *i < argc && argv[*i][0] == '-'; (*i)++) {
		const char *a = argv[*i];
		if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
			printf("sbxtop %s\n", SBX_VERSION);
			return 0;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			cli_main_help(stdout);
			return 0;
		} else if (strcmp(a, "--mcp") == 0) {
			g->mcp = 1;
		} else if (strcmp(a, "--standalone") == 0) {
			g->standalone = 1;
		} else if (strcmp(a, "--readonly") == 0) {
			g->tui.readonly = 1;
		} else if (strcmp(a, "--log") == 0 && *i + 1 < argc) {
			g->log_path = argv[++(*i)];
		} else if (strncmp(a, "--log=", 6) == 0) {
			g->log_path = a + 6;
		} else if (global_option(argv, argc, i, &g->nset, g->set) == 0) {
			continue;
		} else {
			unknown_global(a);
			cli_main_help(stderr);
			return 2;
		}
	}
	return -1;
}

/* The configuration: files and environment, then the flags' settings.  A
 * broken file is an error, but for `doctor`, which reports it (cli->cfg_err)
 * and goes on with the environment's.  NULL with *rc when it cannot go on. */
static struct config *
load_config(const struct cmd_entry *cmd, struct cli *cli, const struct globals *g, int *rc)
{
	struct config *cfg = config_new();
	struct sbx_err e;

	cli->cfg_err = NULL;
	if (config_load(cfg, &e) < 0) {
		static struct sbx_err cfg_e;
		struct sbx_err sub;

		if (cmd == NULL || strcmp(cmd->name, "doctor") != 0) {
			config_free(cfg);
			*rc = cli_error(&e);
			return NULL;
		}
		cfg_e = e;
		cli->cfg_err = &cfg_e;
		(void)config_load_env(cfg, &sub);
	}
	for (size_t k = 0; k < g->nset; k++)
		if (config_set(cfg, g->set[k].name, g->set[k].value, CONFIG_FLAG, &e) < 0) {
			config_free(cfg);
			*rc = cli_error(&e);
			return NULL;
		}
	return cfg;
}

/* What a core server this process starts or uses is told: the global flags
 * again (srv_args, which the caller frees from [0] every second), the
 * environment's digest, an agent's own result budget. */
static void
tell_server(struct config *cfg, const struct globals *g, const char **srv_args)
{
	size_t nsrv = 0;

	for (size_t k = 0; k < g->nset; k++) {
		srv_args[nsrv++] = xasprintf("--%s", config_option_find(g->set[k].name)->flag);
		srv_args[nsrv++] = g->set[k].value;
	}
	srv_args[nsrv] = NULL;
	client_set_server_args(srv_args);
	/* A command runs in the core server only when that server sees what we
	 * see (cli_remote). */
	client_set_env_digest(config_env_digest(cfg));
	/* An agent's own setting for its results, told to the server it uses. */
	if (config_source_of(cfg, "mcp_budget") != CONFIG_DEFAULT)
		client_set_mcp_budget(config_int(cfg, "mcp_budget"));
}

int
cli_main(int argc, char **argv, void (*run_here)(struct cli *cli))
{
	const struct cmd_entry *cmd;
	struct config *cfg;
	struct cli cli;
	/* The global flags again, for a core server this process starts. */
	static const char *srv_args[2 * 8 + 2];
	const char *sa_env = getenv("SBXTOP_STANDALONE");
	struct globals g = { .standalone = sa_env != NULL && sa_env[0] != '\0' &&
	    strcmp(sa_env, "0") != 0 };
	int i, rc;

	/* Output to a closed pipe is an error to report, not a reason to die. */
	signal(SIGPIPE, SIG_IGN);
	log_open("sbxtop", NULL);

	if ((rc = parse_globals(argc, argv, &i, &g)) >= 0)
		return rc;
	if (g.log_path != NULL && log_open("sbxtop", g.log_path) < 0) {
		fprintf(stderr, "sbxtop: --log: cannot open '%s': %s\n", g.log_path,
		    strerror(errno));
		return 1;
	}
	if (g.mcp && i < argc) {
		fprintf(stderr, "sbxtop: --mcp takes no command (it serves MCP on standard "
		    "input and output)\n");
		return 2;
	}
	cmd = i < argc ? cmd_find(argv[i]) : NULL;
	if (i < argc && cmd == NULL) {
		unknown_command(argv[i]);
		return 2;
	}
	if (cmd != NULL && wants_help(argc - i, argv + i)) {
		cli_help(cmd, stdout);
		return 0;
	}
	if ((cfg = load_config(cmd, &cli, &g, &rc)) == NULL)
		return rc;
	apply_log_level(cfg);
	tell_server(cfg, &g, srv_args);
	/* The console, when there is a terminal to show it on. */
	if (!g.mcp && cmd == NULL && isatty(0) && isatty(1)) {
		g.tui.standalone = g.standalone;
		return tui_main(cfg, &g.tui);
	}
	cli.cfg = cfg;
	cli.standalone = g.standalone;
	cli.run_here = run_here;
	cli.core = core_new(cfg);
	if (g.mcp)
		rc = serve_mcp(&cli);
	else
		rc = cmd != NULL ? cmd->run(&cli, argc - i, argv + i) : short_status(&cli);
	core_free(cli.core);
	for (size_t k = 0; srv_args[k] != NULL; k += 2)
		free((char *)srv_args[k]);
	if (fflush(stdout) != 0 && rc == 0)
		rc = 1;
	return rc;
}
