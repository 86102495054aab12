/* The command table and what the commands share: errors, usage and help. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lib/b64.h"
#include "lib/buf.h"
#include "core/client/client.h"
#include "lib/log.h"
#include "lib/utf8.h"
#include "lib/util.h"

extern const struct cmd_entry cmd_create_entry, cmd_ls_entry, cmd_exec_entry,
    cmd_cp_entry, cmd_logs_entry, cmd_forward_entry, cmd_status_entry, cmd_suspend_entry,
    cmd_resume_entry, cmd_destroy_entry, cmd_doctor_entry, cmd_gc_entry,
    cmd_help_entry, cmd_image_entry, cmd_setup_entry, cmd_serve_entry,
    cmd_snapshot_entry, cmd_host_entry, cmd_net_entry, cmd_secret_entry,
    cmd_diff_entry, cmd_fork_entry, cmd_shell_entry, cmd_completion_entry,
    cmd_key_entry;

/* Adding a command: one file and one line here. */
const struct cmd_entry *const cmd_table[] = {
	&cmd_create_entry,
	&cmd_ls_entry,
	&cmd_exec_entry,
	&cmd_shell_entry,
	&cmd_cp_entry,
	&cmd_logs_entry,
	&cmd_forward_entry,
	&cmd_status_entry,
	&cmd_diff_entry,
	&cmd_suspend_entry,
	&cmd_resume_entry,
	&cmd_destroy_entry,
	&cmd_doctor_entry,
	&cmd_gc_entry,
	&cmd_image_entry,
	&cmd_snapshot_entry,
	&cmd_fork_entry,
	&cmd_host_entry,
	&cmd_net_entry,
	&cmd_secret_entry,
	&cmd_key_entry,
	&cmd_setup_entry,
	&cmd_serve_entry,
	&cmd_completion_entry,
	&cmd_help_entry,
	NULL,
};

const struct cmd_entry *
cmd_find(const char *name)
{
	for (size_t i = 0; cmd_table[i] != NULL; i++)
		if (strcmp(cmd_table[i]->name, name) == 0)
			return cmd_table[i];
	return NULL;
}

const struct option *
cmd_options(const struct cmd_entry *cmd)
{
	static const struct option none[] = { { NULL, 0, NULL, 0 } };

	if (cmd->options_fn != NULL)
		return cmd->options_fn();
	return cmd->options != NULL ? cmd->options : none;
}

/* The edit distance of a and b, transpositions counting one (what a typing
 * slip costs), capped at 9. */
static int
distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int d[24][24];

	if (la > 22 || lb > 22)
		return 9;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb] > 9 ? 9 : d[la][lb];
}

const char *
cli_nearest(const char *word, const char *const *cands, size_t n)
{
	const char *best = NULL, *pre = NULL;
	int bd = 9, npre = 0, tie = 0;
	size_t wl = strlen(word);

	for (size_t i = 0; i < n; i++) {
		int d = distance(word, cands[i]);
		if (wl > 0 && strncmp(cands[i], word, wl) == 0) {
			pre = cands[i];
			npre++;
		}
		if (d < bd) {
			bd = d;
			best = cands[i];
			tie = 0;
		} else if (d == bd) {
			tie = 1;
		}
	}
	/* A slip of a letter or two in a word long enough to tell; else the one
	 * word it begins. */
	if (best != NULL && !tie && bd <= (wl < 4 ? 1 : wl < 8 ? 2 : 3))
		return best;
	return npre == 1 ? pre : NULL;
}

const char *
cli_safe(const char *s, char *buf, size_t len)
{
	if (s == NULL)
		return NULL;
	utf8_escape_controls(s, strlen(s), buf, len, 0);
	return buf;
}

/* One conversion of a printf format (spec, ending in its conversion
 * character) with its arguments from ap, appended to out; %s and %c through
 * cli_safe.  The format is the caller's (checked by the compiler at the
 * call), so it may be given to snprintf. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void
one_conversion(struct buf *out, const char *spec, va_list *ap)
{
	char len[3] = "", conv = spec[strlen(spec) - 1], tmp[512];
	const char *p = spec + 1 + strspn(spec + 1, "-+ #0'");
	int stars[2], ns = 0, n = 0;
	_cleanup_free_ char *esc = NULL, *big = NULL;

	if (*p == '*')
		stars[ns++] = va_arg(*ap, int), p++;
	p += strspn(p, "0123456789");
	if (*p == '.' && p[1] == '*')
		stars[ns++] = va_arg(*ap, int), p += 2;
	else if (*p == '.')
		p += 1 + strspn(p + 1, "0123456789");
	memcpy(len, p, strspn(p, "hljztL") < 3 ? strspn(p, "hljztL") : 2);
#define ONE(v) (ns == 2 ? snprintf(tmp, sizeof tmp, spec, stars[0], stars[1], v) : \
	    ns == 1 ? snprintf(tmp, sizeof tmp, spec, stars[0], v) : snprintf(tmp, sizeof tmp, spec, v))
	switch (conv) {
	case 's':
	case 'c': {
		char c[2] = { 0, 0 };
		const char *s = conv == 'c' ? (c[0] = (char)va_arg(*ap, int), c) :
		    va_arg(*ap, const char *);
		size_t sl = s ? strlen(s) : 6;
		esc = xmalloc(sl * 6 + 1);
		cli_safe(s ? s : "(null)", esc, sl * 6 + 1);
		/* The spec again with the escaped text as a string. */
		big = xstrdup(spec);
		big[strlen(big) - 1] = 's';
		n = ns == 2 ? snprintf(NULL, 0, big, stars[0], stars[1], esc) :
		    ns == 1 ? snprintf(NULL, 0, big, stars[0], esc) : snprintf(NULL, 0, big, esc);
		{
			char *t = xmalloc((size_t)n + 1);
			if (ns == 2)
				snprintf(t, (size_t)n + 1, big, stars[0], stars[1], esc);
			else if (ns == 1)
				snprintf(t, (size_t)n + 1, big, stars[0], esc);
			else
				snprintf(t, (size_t)n + 1, big, esc);
			buf_append(out, t, (size_t)n);
			free(t);
		}
		return;
	}
	case 'd':
	case 'i':
		if (strcmp(len, "ll") == 0)
			n = ONE(va_arg(*ap, long long));
		else if (strcmp(len, "l") == 0)
			n = ONE(va_arg(*ap, long));
		else if (strcmp(len, "z") == 0)
			n = ONE(va_arg(*ap, ssize_t));
		else if (strcmp(len, "j") == 0)
			n = ONE(va_arg(*ap, intmax_t));
		else
			n = ONE(va_arg(*ap, int));
		break;
	case 'u':
	case 'x':
	case 'X':
	case 'o':
		if (strcmp(len, "ll") == 0)
			n = ONE(va_arg(*ap, unsigned long long));
		else if (strcmp(len, "l") == 0)
			n = ONE(va_arg(*ap, unsigned long));
		else if (strcmp(len, "z") == 0)
			n = ONE(va_arg(*ap, size_t));
		else if (strcmp(len, "j") == 0)
			n = ONE(va_arg(*ap, uintmax_t));
		else
			n = ONE(va_arg(*ap, unsigned));
		break;
	case 'f':
	case 'F':
	case 'g':
	case 'G':
	case 'e':
	case 'E':
		n = ONE(va_arg(*ap, double));
		break;
	case 'p':
		n = ONE(va_arg(*ap, void *));
		break;
	default:
		fatal("cli_printf: conversion %%%c is not supported", conv);
	}
#undef ONE
	buf_append(out, tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}
#pragma GCC diagnostic pop

void
cli_vprintf(FILE *f, const char *fmt, va_list ap)
{
	struct buf out;
	va_list aq;

	buf_init(&out, SIZE_MAX / 2);
	va_copy(aq, ap);
	for (const char *p = fmt; *p != '\0';) {
		size_t run = strcspn(p, "%"), sl;
		char spec[32];
		buf_append(&out, p, run);
		if (p[run] == '\0')
			break;
		p += run;
		if (p[1] == '%') {
			buf_append(&out, "%", 1);
			p += 2;
			continue;
		}
		sl = 1 + strspn(p + 1, "-+ #0'*.0123456789hljztL") + 1;
		if (sl >= sizeof spec || p[sl - 1] == '\0')
			fatal("cli_printf: a conversion of '%s' is not supported", fmt);
		memcpy(spec, p, sl);
		spec[sl] = '\0';
		one_conversion(&out, spec, &aq);
		p += sl;
	}
	va_end(aq);
	if (out.len > 0)
		fwrite(out.data, 1, out.len, f);
	buf_free(&out);
}

void
cli_printf(FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vprintf(f, fmt, ap);
	va_end(ap);
}

void
cli_print_json(FILE *f, const cJSON *o, int pretty)
{
	_cleanup_free_ char *t = pretty ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
	const unsigned char *s = (const unsigned char *)t;
	size_t n = t ? strlen(t) : 0, i = 0;

	/* cJSON escapes C0 controls but passes DEL, C1 controls (U+0080 to
	 * U+009F) and bytes that are not UTF-8 through: all of them are in
	 * strings, where \uXXXX says the same to a JSON reader and nothing to a
	 * terminal. */
	while (i < n) {
		size_t l = 1;
		if (s[i] >= 0x80)
			for (l = 2; l <= 4 && (i + l > n || !utf8_valid(t + i, l)); l++)
				;
		if (s[i] == 0x7f) {
			fputs("\\u007f", f);
		} else if (s[i] == 0xc2 && l == 2 && s[i + 1] < 0xa0) {
			fprintf(f, "\\u%04x", s[i + 1]);
		} else if (l > 4) {
			fputs("\\ufffd", f);	/* not UTF-8 */
			l = 1;
		} else {
			fwrite(t + i, 1, l, f);
		}
		i += l;
	}
	fputc('\n', f);
}

int
cli_error(const struct sbx_err *e)
{
	/* An error may quote an agent or a sandbox: nothing in it reaches the
	 * terminal as a control. */
	char msg[4 * sizeof e->msg], hint[4 * sizeof e->hint];

	cli_safe(e->msg, msg, sizeof msg);
	cli_safe(e->hint, hint, sizeof hint);
	if (hint[0] != '\0')
		fprintf(stderr, "sbxtop: %s (%s)\n", msg, hint);
	else
		fprintf(stderr, "sbxtop: %s\n", msg);
	return sbx_err_exit_status(e);
}

int
cli_usage(const struct cmd_entry *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sbxtop %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: sbxtop %s %s\n(`sbxtop help %s` for more)\n", cmd->name,
	    cmd->usage, cmd->name);
	return 2;
}

int
cli_bad_option(const struct cmd_entry *cmd, int c, char **argv)
{
	const struct option *o = cmd_options(cmd);
	const char *arg = argv[optind - 1], *near = NULL, *cands[64];
	char name[64], flag[64];
	size_t n = 0;

	/* A short option is named by its letter: in a bundle (-it) optind may
	 * not have moved past the word yet.  getopt_long sets optopt to it, and
	 * to 0 (or a long option's value) for a long one. */
	if (strncmp(arg, "--", 2) == 0 || optopt <= 0 || optopt > 127)
		snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
	else
		snprintf(name, sizeof name, "-%c", optopt);
	if (c == ':')
		return cli_usage(cmd, "option '%s' needs a value", name);
	if (c != '?')
		return cli_usage(cmd, "option '%s' does not go with these arguments", name);
	if (strncmp(name, "--", 2) == 0) {
		for (; o->name != NULL && n < ARRAY_SIZE(cands); o++)
			cands[n++] = o->name;
		near = cli_nearest(name + 2, cands, n);
	}
	if (near == NULL)
		return cli_usage(cmd, "unknown option '%s'", name);
	snprintf(flag, sizeof flag, "--%s", near);
	return cli_usage(cmd, "unknown option '%s' (did you mean '%s'?)", name, flag);
}

void
cli_json_print(const cJSON *o)
{
	cli_print_json(stdout, o, isatty(1));
}

int
cli_error_exec(const struct sbx_err *e)
{
	cli_error(e);
	return e->reason == SBX_R_EXEC_FAILED ? CLI_EXIT_CANNOT_RUN : CLI_EXIT_TOOL;
}

void
cli_help(const struct cmd_entry *cmd, FILE *f)
{
	fprintf(f, "usage: sbxtop %s %s\n\n%s\n", cmd->name, cmd->usage, cmd->summary);
	if (cmd->help != NULL || cmd->help_fn != NULL)
		fprintf(f, "\n%s", cmd->help != NULL ? cmd->help : cmd->help_fn());
}

void
cli_main_help(FILE *f)
{
	fprintf(f, "usage: sbxtop [--standalone] [--log-level LEVEL] [--approve MODE] COMMAND "
	    "[ARGS...]\n"
	    "       sbxtop [--standalone] [--log FILE] [--mcp-budget BYTES] --mcp\n"
	    "       sbxtop --help | --version\n\n"
	    "Disposable Linux sandboxes for AI coding agents.\n\ncommands:\n");
	for (size_t i = 0; cmd_table[i] != NULL; i++)
		fprintf(f, "  %-11s %s\n", cmd_table[i]->name, cmd_table[i]->summary);
	fprintf(f, "\n--mcp serves the Model Context Protocol on standard input and output\n"
	    "(for an agent's MCP configuration) through the core server, which starts\n"
	    "on demand (`sbxtop serve`); --standalone runs the core in this process\n"
	    "instead; --log FILE sends logs to FILE instead of standard error;\n"
	    "--mcp-budget BYTES is the most text a tool result gives the agent\n"
	    "(default 20000; longer ones are shortened and say how to page).\n");
	fprintf(f, "\n`sbxtop help COMMAND` or `sbxtop COMMAND --help` tells more; see also "
	    "sbxtop(1), sbxtop-mcp(7) and sbxtop.conf(5).\n");
}

int
cli_env_add(cJSON **env, const char *kv, struct sbx_err *e)
{
	const char *eq = strchr(kv, '=');
	_cleanup_free_ char *k = NULL;

	if (eq == NULL || eq == kv)
		return sbx_error(e, SBX_EINVAL, NULL, "--env: '%s' is not valid: expected NAME=VALUE",
		    kv);
	k = xstrndup(kv, (size_t)(eq - kv));
	if (*env == NULL)
		*env = cJSON_CreateObject();
	cJSON_DeleteItemFromObjectCaseSensitive(*env, k);
	cJSON_AddStringToObject(*env, k, eq + 1);
	return 0;
}

/* What the server sends during a call: exec output (sbxtop/output) to our
 * standard output or error, log lines (sbxtop/log_line) to our log. */
static void
on_notify(const char *method, const cJSON *params, void *arg)
{
	if (strcmp(method, "sbxtop/output") == 0) {
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params,
		    "data"));
		const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params,
		    "b64"));
		int fd = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(params,
		    "stream")) == 2 ? 2 : 1;
		if (t != NULL) {
			(void)write_all(fd, t, strlen(t));
		} else if (b != NULL) {
			size_t n;
			unsigned char *raw = b64_decode(b, strlen(b), &n);
			if (raw != NULL)
				(void)write_all(fd, raw, n);
			free(raw);
		}
	} else if (strcmp(method, "sbxtop/log_line") == 0) {
		static const char *const names[] = { "error", "warn", "info", "debug" };
		const char *l = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params,
		    "level"));
		const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params,
		    "message"));
		for (size_t i = 0; l != NULL && m != NULL && i < ARRAY_SIZE(names); i++)
			if (strcmp(l, names[i]) == 0)
				log_msg((enum log_level)i, 0, "%s", m);
	}
}

int
cli_remote(struct cli *cli, struct client **out)
{
	struct sbx_err e;
	struct client *c;

	*out = NULL;
	if (cli->standalone)
		goto here;
	if ((c = client_connect("cli", 1, &e)) == NULL) {
		log_info("no core server (%s): running the core in this process", e.msg);
		goto here;
	}
	/* A server started from another shell may see other AWS credentials,
	 * another state directory or other options: the command would not run
	 * there as the user expects, so it runs here. */
	if (!client_env_matches(c)) {
		log_info("the core server runs with another configuration or environment: "
		    "running the core in this process");
		client_close(c);
		goto here;
	}
	client_on_notify(c, on_notify, NULL);
	*out = c;
	return 1;
here:
	if (cli->run_here != NULL)
		cli->run_here(cli);
	return 0;
}

int
cli_call(struct client *c, const char *method, cJSON *params, cJSON **result,
    struct sbx_err *e)
{
	cJSON *p = params ? params : cJSON_CreateObject();
	int rc;

	cJSON_DeleteItemFromObjectCaseSensitive(p, "log_level");
	cJSON_AddNumberToObject(p, "log_level", log_get_level());
	rc = client_call(c, method, p, result, e);
	if (params == NULL)
		cJSON_Delete(p);
	return rc;
}

int
cli_list(struct cli *cli, struct sandbox ***out, size_t *n, int *orphans, struct sbx_err *e)
{
	struct client *c;
	cJSON *r = NULL;
	const cJSON *a, *x;
	size_t k = 0;

	if (orphans != NULL)
		*orphans = 0;
	if (!cli_remote(cli, &c)) {
		if (core_list(cli->core, out, n, e) < 0)
			return -1;
		if (orphans != NULL)
			*orphans = core_orphans(cli->core);
		return 0;
	}
	if (cli_call(c, "sbxtop/list", NULL, &r, e) < 0) {
		client_close(c);
		return -1;
	}
	client_close(c);
	a = cJSON_GetObjectItemCaseSensitive(r, "sandboxes");
	*out = xcalloc((size_t)cJSON_GetArraySize(a) + 1, sizeof **out);
	cJSON_ArrayForEach(x, a) {
		struct sandbox *s = sandbox_from_json(x, e);
		if (s == NULL) {
			core_list_free(*out, k);
			cJSON_Delete(r);
			return -1;
		}
		(*out)[k++] = s;
	}
	*n = k;
	x = cJSON_GetObjectItemCaseSensitive(r, "orphans");
	if (orphans != NULL && cJSON_IsNumber(x))	/* a server before orphans: none said */
		*orphans = x->valueint;
	cJSON_Delete(r);
	return 0;
}

int
cli_each_sandbox(const struct cmd_entry *cmd, struct cli *cli, int argc, char **argv,
    cli_sandbox_fn fn, const char *method)
{
	static const struct option lo[] = { { NULL, 0, NULL, 0 } };
	_cleanup_free_ char *m = xasprintf("sbxtop/%s", method);
	struct client *cl = NULL;
	struct sbx_err e;
	int c, rc = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lo, NULL)) != -1)
		return cli_bad_option(cmd, c, argv);
	if (optind >= argc)
		return cli_usage(cmd, "expected at least one sandbox");
	cli_remote(cli, &cl);
	for (int i = optind; i < argc; i++) {
		int r;
		if (cl != NULL) {
			cJSON *p = cJSON_CreateObject();
			cJSON_AddStringToObject(p, "sandbox", argv[i]);
			r = cli_call(cl, m, p, NULL, &e);
			cJSON_Delete(p);
		} else {
			r = fn(cli->core, argv[i], &e);
		}
		if (r < 0 && (r = cli_error(&e)) > rc)
			rc = r;
	}
	client_close(cl);
	return rc;
}
