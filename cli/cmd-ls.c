/* sbxtop ls: every known sandbox, as a table, JSON, ids alone, or in a format
 * of the user's (docker ps's --format: a template of {{.Field}}, or a list of
 * fields). */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli/cli.h"
#include "lib/buf.h"
#include "lib/util.h"

static int cmd_ls(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "format", required_argument, NULL, 'f' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_ls_entry = {
	"ls", "[--json | -q | --format FORMAT]", "list sandboxes",
	"  --json          a JSON array of records (id, name, backend, state, state_reason,\n"
	"                  created_at, expires_at in ms since the epoch, limits, forwards,\n"
	"                  ...): indented on a terminal, one line for a pipe\n"
	"  -q, --quiet     the ids alone, one a line\n"
	"  --format F      each sandbox as F says: a template ('{{.ID}}\\t{{.Name}}', \\t and\n"
	"                  \\n as in C; 'table ' first adds the headings), a list of\n"
	"                  fields (id,name,ports: a table of them), or json (one line\n"
	"                  each).  Fields: ID Name Backend Host State Reason Age Left CPU\n"
	"                  Mem Limits Ports Image Network Owner Created Expires\n"
	"  PORTS are the forwards, 127.0.0.1:8080->80 (`sbxtop forward --list` for more);\n"
	"  CPU% is of one core since the previous listing, MEM what is charged to the\n"
	"  sandbox's cgroup (\"usage\" in --json; - where not known)\n",
	cmd_ls,
	.options = options,
	.shortopts = "q",
	.words = "",
};

/* "mem=512M cpus=1 pids=4096 disk=4096M", and a mark when some were asked for but are not
 * enforced (limits_note says why; `sbxtop status` shows it). */
static void
limits_text(const struct sandbox *s, int64_t now, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	if (s->limits.memory_mib > 0)
		n += (size_t)snprintf(buf + n, len - n, "mem=%lldM ",
		    (long long)s->limits.memory_mib);
	if (s->limits.cpus > 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, "cpus=%g ", s->limits.cpus);
	if (s->limits.pids > 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, "pids=%lld ", (long long)s->limits.pids);
	if (s->limits.disk_mib > 0 && n < len)
		n += (size_t)snprintf(buf + n, len - n, "disk=%lldM ", (long long)s->limits.disk_mib);
	if (s->limits_note != NULL && n < len)
		n += (size_t)snprintf(buf + n, len - n, "(not all enforced) ");
	if (n == 0)
		snprintf(buf, len, "-");
	else if (n < len)
		buf[n - 1] = '\0';
}

static int
live(const struct sandbox *s)
{
	return s->state == SBX_RUNNING || s->state == SBX_SUSPENDED || s->state == SBX_CREATING;
}

static void f_id(const struct sandbox *s, int64_t now, char *b, size_t l) { snprintf(b, l, "%s", s->id); }
static void f_name(const struct sandbox *s, int64_t now, char *b, size_t l) { snprintf(b, l, "%s", s->name ? s->name : ""); }
static void f_host(const struct sandbox *s, int64_t now, char *b, size_t l) { snprintf(b, l, "%s", s->host ? s->host : ""); }
static void f_state(const struct sandbox *s, int64_t now, char *b, size_t l) { snprintf(b, l, "%s", sbx_state_name(s->state)); }
static void f_reason(const struct sandbox *s, int64_t now, char *b, size_t l) { snprintf(b, l, "%s", s->state_reason ? s->state_reason : ""); }
static void f_image(const struct sandbox *s, int64_t now, char *b, size_t l) { snprintf(b, l, "%s", s->image ? s->image : ""); }
static void f_network(const struct sandbox *s, int64_t now, char *b, size_t l) { snprintf(b, l, "%s", s->network ? s->network : ""); }
static void f_owner(const struct sandbox *s, int64_t now, char *b, size_t l) { snprintf(b, l, "%s", s->owner ? s->owner : ""); }
static void f_age(const struct sandbox *s, int64_t now, char *b, size_t l) { sandbox_span((now - s->created_at) / 1000, b, l); }

/* A remote sandbox shows its host: "ssh:big". */
static void
f_backend(const struct sandbox *s, int64_t now, char *b, size_t l)
{
	snprintf(b, l, "%s%s%s", s->backend ? s->backend : "-", s->host ? ":" : "",
	    s->host ? s->host : "");
}

static void
f_left(const struct sandbox *s, int64_t now, char *b, size_t l)
{
	sandbox_span(live(s) && s->expires_at ? (s->expires_at - now) / 1000 : -1, b, l);
}

/* A figure of the live use ("usage" in the record), or "-". */
static void
usage_text(const struct sandbox *s, const char *key, double scale, const char *unit,
    char *b, size_t l)
{
	const cJSON *v = cJSON_GetObjectItem(s->usage, key);

	if (cJSON_IsNumber(v))
		snprintf(b, l, "%.1f%s", v->valuedouble / scale, unit);
	else
		snprintf(b, l, "-");
}

static void f_cpu(const struct sandbox *s, int64_t now, char *b, size_t l) { usage_text(s, "cpu_pct", 1, "", b, l); }
static void f_mem(const struct sandbox *s, int64_t now, char *b, size_t l) { usage_text(s, "mem_bytes", 1048576, "M", b, l); }

/* The forwards as docker ps shows ports: "127.0.0.1:8080->80, ...". */
static void
f_ports(const struct sandbox *s, int64_t now, char *b, size_t l)
{
	const cJSON *f;
	size_t n = 0;

	b[0] = '\0';
	cJSON_ArrayForEach(f, s->forwards) {
		const char *bind = cJSON_GetStringValue(cJSON_GetObjectItem(f, "bind"));
		if (n < l)
			n += (size_t)snprintf(b + n, l - n, "%s%s:%d->%d", n ? ", " : "",
			    bind ? bind : "127.0.0.1",
			    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(f, "local")),
			    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(f, "remote")));
	}
	if (n == 0)
		snprintf(b, l, "-");
}

static void
f_when(int64_t ms, char *b, size_t l)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0) {
		snprintf(b, l, "-");
		return;
	}
	gmtime_r(&t, &tm);
	strftime(b, l, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void f_created(const struct sandbox *s, int64_t now, char *b, size_t l) { f_when(s->created_at, b, l); }
static void f_expires(const struct sandbox *s, int64_t now, char *b, size_t l) { f_when(s->expires_at, b, l); }

/* The fields, in the default table's order first; width 0: not in it. */
static const struct field {
	const char	*name;
	const char	*head;
	int		 width;
	void		(*text)(const struct sandbox *s, int64_t now, char *buf, size_t len);
} fields[] = {
	{ "ID", "ID", 12, f_id },
	{ "Name", "NAME", 16, f_name },
	{ "Backend", "BACKEND", 8, f_backend },
	{ "State", "STATE", 10, f_state },
	{ "Age", "AGE", 7, f_age },
	{ "Left", "LEFT", 7, f_left },
	{ "CPU", "CPU%", -5, f_cpu },
	{ "Mem", "MEM", -7, f_mem },
	{ "Limits", "LIMITS", 28, limits_text },
	{ "Ports", "PORTS", 1, f_ports },
	{ "Host", "HOST", 0, f_host },
	{ "Reason", "REASON", 0, f_reason },
	{ "Image", "IMAGE", 0, f_image },
	{ "Network", "NETWORK", 0, f_network },
	{ "Owner", "OWNER", 0, f_owner },
	{ "Created", "CREATED", 0, f_created },
	{ "Expires", "EXPIRES", 0, f_expires },
};

static const struct field *
field_find(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		if (strlen(fields[i].name) == len && strncasecmp(fields[i].name, name, len) == 0)
			return &fields[i];
	return NULL;
}

/* A field named wrongly: what there is, and the nearest. */
static int
field_unknown(const char *name, size_t len)
{
	const char *cands[ARRAY_SIZE(fields)], *near;
	char want[64];

	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		cands[i] = fields[i].name;
	snprintf(want, sizeof want, "%.*s", (int)len, name);
	near = cli_nearest(want, cands, ARRAY_SIZE(fields));
	return cli_usage(&cmd_ls_entry, "--format: no field '%s'%s%s%s (fields: ID Name Backend "
	    "Host State Reason Age Left CPU Mem Limits Ports Image Network Owner Created "
	    "Expires)", want, near ? " (did you mean '" : "", near ? near : "",
	    near ? "'?)" : "");
}

/* One part of a format: literal text, or a field. */
struct part {
	const struct field *f;
	char		   *text;
};

/* A template ("{{.ID}}\t{{.Name}}", "table " first for headings) or a field
 * list ("id,name"): the parts of a line, *heads set when the headings go
 * first, *table when the columns are padded.  2 with the usage said. */
static int
format_parse(const char *fmt, struct part **out, size_t *n, int *heads, int *table)
{
	struct part *v = xcalloc(strlen(fmt) + 2, sizeof *v);
	size_t k = 0;
	struct buf lit;

	*heads = *table = 0;
	buf_init(&lit, 1 << 16);
	if (strstr(fmt, "{{") == NULL) {
		/* A field list: a table of those columns. */
		for (const char *p = fmt; *p;) {
			size_t len = strcspn(p, ", ");
			if (len > 0 && (v[k].f = field_find(p, len)) == NULL) {
				free(v);
				buf_free(&lit);
				return field_unknown(p, len);
			}
			if (len > 0)
				k++;
			p += len;
			p += strspn(p, ", ");
		}
		*heads = *table = 1;
		goto done;
	}
	if (strncmp(fmt, "table ", 6) == 0) {
		*heads = 1;
		fmt += 6;
	}
	for (const char *p = fmt; *p;) {
		if (strncmp(p, "{{", 2) == 0) {
			const char *end = strstr(p, "}}"), *name = p + 2;
			size_t len;
			if (end == NULL) {
				free(v);
				buf_free(&lit);
				return cli_usage(&cmd_ls_entry, "--format: a '{{' without its '}}'");
			}
			while (isspace((unsigned char)*name))
				name++;
			if (*name == '.')
				name++;
			len = (size_t)(end - name);
			while (len > 0 && isspace((unsigned char)name[len - 1]))
				len--;
			if (lit.len > 0) {
				v[k++].text = xstrndup(lit.data, lit.len);
				buf_reset(&lit);
			}
			if ((v[k].f = field_find(name, len)) == NULL) {
				for (size_t i = 0; i < k; i++)
					free(v[i].text);
				free(v);
				buf_free(&lit);
				return field_unknown(name, len);
			}
			k++;
			p = end + 2;
		} else if (p[0] == '\\' && (p[1] == 't' || p[1] == 'n' || p[1] == '\\')) {
			buf_append(&lit, p[1] == 't' ? "\t" : p[1] == 'n' ? "\n" : "\\", 1);
			p += 2;
		} else {
			buf_append(&lit, p, 1);
			p++;
		}
	}
	if (lit.len > 0)
		v[k++].text = xstrndup(lit.data, lit.len);
done:
	buf_free(&lit);
	*out = v;
	*n = k;
	return 0;
}

/* A row: each field's text (control characters escaped: a record's strings
 * may come from a sandbox), padded to its column when width is set. */
static void
print_row(const struct sandbox *s, const struct part *v, size_t n, const int *width,
    int64_t now)
{
	char text[4096], safe[4 * sizeof text];

	for (size_t i = 0; i < n; i++) {
		if (v[i].f == NULL) {
			fputs(v[i].text, stdout);
			continue;
		}
		if (s != NULL)
			v[i].f->text(s, now, text, sizeof text);
		else
			snprintf(text, sizeof text, "%s", v[i].f->head);
		cli_safe(text, safe, sizeof safe);
		if (width != NULL && i + 1 < n)
			cli_printf(stdout, "%-*s ", width[i], safe);
		else if (width != NULL)
			cli_printf(stdout, "%s\n", safe);
		else
			fputs(safe, stdout);
	}
	if (width == NULL)
		putchar('\n');
}

static int
print_format(struct sandbox **v, size_t nv, const char *fmt, int64_t now)
{
	struct part *parts = NULL;
	size_t n = 0;
	int heads, table, *width = NULL;
	char text[4096];

	if (strcmp(fmt, "json") == 0) {
		for (size_t i = 0; i < nv; i++) {
			cJSON *o = sandbox_to_json(v[i], 0);
			cli_print_json(stdout, o, 0);
			cJSON_Delete(o);
		}
		return 0;
	}
	if (format_parse(fmt, &parts, &n, &heads, &table) != 0)
		return 2;
	if (table) {
		/* Each column as wide as its widest cell. */
		width = xcalloc(n ? n : 1, sizeof *width);
		for (size_t i = 0; i < n; i++) {
			width[i] = (int)strlen(parts[i].f->head);
			for (size_t j = 0; j < nv; j++) {
				parts[i].f->text(v[j], now, text, sizeof text);
				if ((int)strlen(text) > width[i])
					width[i] = (int)strlen(text);
			}
		}
	}
	if (heads)
		print_row(NULL, parts, n, width, now);
	for (size_t j = 0; j < nv; j++)
		print_row(v[j], parts, n, width, now);
	for (size_t i = 0; i < n; i++)
		free(parts[i].text);
	free(parts);
	free(width);
	return 0;
}

/* The default table: the fields with a width, in order. */
static void
print_table(struct sandbox **v, size_t nv, int64_t now)
{
	char text[4096], safe[4 * sizeof text];

	for (int row = -1; row < (int)nv; row++) {
		for (size_t i = 0; i < ARRAY_SIZE(fields) && fields[i].width != 0; i++) {
			const struct field *f = &fields[i];
			int last = i + 1 == ARRAY_SIZE(fields) || fields[i + 1].width == 0;
			if (row < 0)
				snprintf(text, sizeof text, "%s", f->head);
			else
				f->text(v[row], now, text, sizeof text);
			cli_safe(text[0] ? text : "-", safe, sizeof safe);
			if (last)
				cli_printf(stdout, "%s\n", safe);
			else if (f->width < 0)
				cli_printf(stdout, "%*s ", -f->width, safe);
			else
				cli_printf(stdout, "%-*s ", f->width, safe);
		}
	}
}

static int
cmd_ls(struct cli *cli, int argc, char **argv)
{
	struct sandbox **v;
	size_t n;
	struct sbx_err e;
	char safe[4096];
	const char *fmt = NULL;
	int json = 0, quiet = 0, c, rc = 0, orphans;
	int64_t now = wall_ms();

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":q", options, NULL)) != -1) {
		if (c == 'j')
			json = 1;
		else if (c == 'q')
			quiet = 1;
		else if (c == 'f')
			fmt = optarg;
		else
			return cli_bad_option(&cmd_ls_entry, c, argv);
	}
	if (optind < argc)
		return cli_usage(&cmd_ls_entry, "unexpected argument '%s'", argv[optind]);
	if (json + quiet + (fmt != NULL) > 1)
		return cli_usage(&cmd_ls_entry, "--json, -q and --format each choose the output: "
		    "give one");
	if (cli_list(cli, &v, &n, &orphans, &e) < 0)
		return cli_error(&e);
	if (json) {
		cJSON *a = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(a, sandbox_to_json(v[i], 0));
		cli_json_print(a);
		cJSON_Delete(a);
	} else if (quiet) {
		for (size_t i = 0; i < n; i++)
			cli_printf(stdout, "%s\n", v[i]->id);
	} else if (fmt != NULL) {
		rc = print_format(v, n, fmt, now);
	} else {
		print_table(v, n, now);
	}
	/* Why a host's sandboxes are out of reach (they come back when it does),
	 * and which were suspended for idleness: for a person, not a script. */
	for (size_t i = 0; !json && !quiet && fmt == NULL && i < n; i++)
		if (v[i]->state == SBX_SUSPENDED && v[i]->state_reason != NULL &&
		    strcmp(v[i]->state_reason, "idle") == 0)
			cli_printf(stderr, "sbxtop: %s: suspended: idle (the next call resumes it)\n",
			    v[i]->id);
		else if (v[i]->state == SBX_UNREACHABLE)
			cli_printf(stderr, "sbxtop: %s: %s\n", v[i]->id, v[i]->state_reason ?
			    cli_safe(v[i]->state_reason, safe, sizeof safe) : "its host is unreachable");
	/* Sandboxes no record names (a create whose core was killed): the
	 * next core server removes them, gc does at once. */
	if (orphans > 0)
		fprintf(stderr, "sbxtop: %d orphan%s: sandbox%s that no record names hold "
		    "processes or files on this host (`sbxtop gc --dry-run` lists them, "
		    "`sbxtop gc` removes them)\n", orphans, orphans == 1 ? "" : "s",
		    orphans == 1 ? "" : "es");
	core_list_free(v, n);
	return rc;
}
