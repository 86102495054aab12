/* sbxtop key: the HTTP listener's API keys (core/keys/keys.h), as Agent
 * Sandbox's /admin/keys routes manage them: kept as their SHA-256 only in
 * $XDG_STATE_HOME/sbxtop/keys.json, each key shown once, when it is made. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/keys/keys.h"
#include "lib/jspec.h"
#include "lib/util.h"

static int cmd_key(struct cli *cli, int argc, char **argv);

static const struct option options[] = {
	{ "scope", required_argument, NULL, 's' },
	{ "rate-limit", required_argument, NULL, 'r' },
	{ "expires", required_argument, NULL, 'x' },
	{ "json", no_argument, NULL, 'j' },
	{ "quiet", no_argument, NULL, 'q' },
	{ NULL, 0, NULL, 0 },
};

const struct cmd_entry cmd_key_entry = {
	"key",
	"add NAME [--scope SCOPES] [--rate-limit N] [--expires WHEN] [--json]\n"
	"       | ls [--json | -q] | revoke KEY | rotate KEY [--json] | rm KEY",
	"API keys for the HTTP listener (serve --listen), with scopes and rate limits",
	"  add NAME             make a key; it is printed once, on standard output, and\n"
	"                       kept only as its SHA-256 in $XDG_STATE_HOME/sbxtop/keys.json\n"
	"  --scope SCOPES       what it reaches, comma-separated (default exec):\n"
	"                         exec     the sandbox tools: MCP, /v1/, /exec/SESSION;\n"
	"                                  the sandboxes it makes, and only those\n"
	"                         admin    /admin/keys, and every key's sandboxes\n"
	"                         metrics  /metrics\n"
	"  --rate-limit N       requests per window (key_rate_window, 60 s; default 100)\n"
	"  --expires WHEN       an ISO 8601 time (2030-01-31, 2030-01-31T12:00:00Z) or a\n"
	"                       span from now: 90m, 12h, 30d (default: never)\n"
	"  ls                   every key: id, name, scopes, limit, expiry, status\n"
	"  -q, --quiet          ls: the ids alone, one a line\n"
	"  revoke KEY           refuse the key from now on (KEY: its id or its name)\n"
	"  rotate KEY           a new secret for the key; the old one stops working\n"
	"  rm KEY               forget the key\n"
	"  --json               add and rotate: {key, record}; ls: the records\n"
	"\n"
	"The listener takes a key as \"Authorization: Bearer KEY\", \"X-API-Key: KEY\" or\n"
	"?api_key=KEY; its own token (serve's) is the operator's key, with every scope.\n",
	cmd_key,
	.options = options,
	.shortopts = "q",
	.words = "add|ls|revoke|rotate|rm key",
};

/* WHEN as an expiry: an ISO 8601 time, or a span ("30d") from now. */
static int
expiry(const char *when, int64_t *ms, struct sbx_err *e)
{
	char *end;
	long long n = strtoll(when, &end, 10);
	int64_t unit = 0;

	if (end != when && n > 0 && end[0] != '\0' && end[1] == '\0') {
		switch (end[0]) {
		case 's': unit = 1000; break;
		case 'm': unit = 60 * 1000; break;
		case 'h': unit = 3600 * 1000; break;
		case 'd': unit = 86400 * 1000; break;
		}
		if (unit != 0 && n <= 100LL * 365 * 86400) {
			*ms = wall_ms() + (int64_t)n * unit;
			return 0;
		}
	}
	if (key_time_parse(when, ms) < 0)
		return sbx_error(e, SBX_EINVAL, "give an ISO 8601 time (2030-01-31T12:00:00Z) or "
		    "a span: 90m, 12h, 30d", "--expires: '%.60s' is not a time", when);
	if (*ms <= wall_ms())
		return sbx_error(e, SBX_EINVAL, "give a time to come", "--expires: %.60s is in "
		    "the past", when);
	return 0;
}

/* The scopes of record r as "exec,metrics". */
static void
scopes_text(const cJSON *r, char *buf, size_t len)
{
	const cJSON *x;
	size_t n = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(r, "scopes"))
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "",
			    cJSON_GetStringValue(x) ?: "?");
}

/* A new secret: on stdout alone (what a script captures), the rest on
 * stderr; with json, {key, record}. */
static int
print_new(const char *verb, char *key, cJSON *record, int json)
{
	char sc[64], nm[KEY_NAME_MAX * 4 + 1];

	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "key", key);
		cJSON_AddItemToObject(o, "record", record);
		cli_json_print(o);
		cJSON_Delete(o);
	} else {
		scopes_text(record, sc, sizeof sc);
		printf("%s\n", key);
		fflush(stdout);
		fprintf(stderr, "sbxtop: %s %s '%s' (%s, %g requests a window%s%s): the key is "
		    "shown only now\n", verb, jstr(record, "id", ""),
		    cli_safe(jstr(record, "name", ""), nm, sizeof nm), sc,
		    cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(record, "rateLimit")),
		    *jstr(record, "expiresAt", "") ? ", expires " : "",
		    jstr(record, "expiresAt", ""));
		cJSON_Delete(record);
	}
	explicit_bzero(key, strlen(key));
	free(key);
	return 0;
}

static int
list(int json, int quiet)
{
	struct sbx_err e;
	cJSON *a, *r;
	char sc[64], nm[KEY_NAME_MAX * 4 + 1];

	if (keys_list(&a, &e) < 0)
		return cli_error(&e);
	if (json) {
		cli_json_print(a);
	} else if (quiet) {
		cJSON_ArrayForEach(r, a)
			printf("%s\n", jstr(r, "id", ""));
	} else {
		printf("%-12s %-20s %-20s %8s %-24s %s\n", "ID", "NAME", "SCOPES", "RATE",
		    "EXPIRES", "STATUS");
		cJSON_ArrayForEach(r, a) {
			scopes_text(r, sc, sizeof sc);
			printf("%-12s %-20s %-20s %8g %-24s %s\n", jstr(r, "id", ""),
			    cli_safe(jstr(r, "name", ""), nm, sizeof nm), sc,
			    cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "rateLimit")),
			    *jstr(r, "expiresAt", "") ? jstr(r, "expiresAt", "") : "never",
			    jstr(r, "status", ""));
		}
	}
	cJSON_Delete(a);
	return 0;
}

static int
cmd_key(struct cli *cli, int argc, char **argv)
{
	const char *scope = NULL, *rate = NULL, *expires = NULL;
	struct key_spec s = { .scopes = KEY_EXEC, .rate_limit = KEY_RATE_DEFAULT };
	struct sbx_err e;
	cJSON *record = NULL;
	char *key = NULL, nm[KEY_NAME_MAX * 4 + 1];
	static const char *const verbs[] = { "add", "ls", "revoke", "rotate", "rm" };
	int json = 0, quiet = 0, c;
	size_t v;

	(void)cli;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":q", options, NULL)) != -1) {
		if (c == 's')
			scope = optarg;
		else if (c == 'r')
			rate = optarg;
		else if (c == 'x')
			expires = optarg;
		else if (c == 'j')
			json = 1;
		else if (c == 'q')
			quiet = 1;
		else
			return cli_bad_option(&cmd_key_entry, c, argv);
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		return cli_usage(&cmd_key_entry, "missing add, ls, revoke, rotate or rm");
	for (v = 0; v < ARRAY_SIZE(verbs) && strcmp(verbs[v], argv[0]) != 0; v++)
		;
	if (v == ARRAY_SIZE(verbs)) {
		const char *near = cli_nearest(argv[0], verbs, ARRAY_SIZE(verbs));
		return cli_usage(&cmd_key_entry, "unknown subcommand '%s'%s%s%s",
		    cli_safe(argv[0], nm, sizeof nm), near ? " (did you mean " : "",
		    near ? near : "", near ? "?)" : "");
	}
	if ((scope || rate || expires) && strcmp(argv[0], "add") != 0)
		return cli_usage(&cmd_key_entry, "--scope, --rate-limit and --expires are add's");
	if (strcmp(argv[0], "ls") == 0) {
		if (argc != 1)
			return cli_usage(&cmd_key_entry, "ls takes no argument");
		return list(json, quiet);
	}
	if (argc != 2)
		return cli_usage(&cmd_key_entry, "%s takes one %s", argv[0],
		    strcmp(argv[0], "add") == 0 ? "NAME" : "KEY (its id or its name)");
	if (strcmp(argv[0], "add") == 0) {
		char *end;
		if (!key_name_ok(argv[1]))
			return cli_usage(&cmd_key_entry, "a key's name is 1 to %d characters, no "
			    "control characters", KEY_NAME_MAX);
		snprintf(s.name, sizeof s.name, "%s", argv[1]);
		if (scope != NULL && key_scopes_parse(scope, &s.scopes, &e) < 0)
			return cli_error(&e);
		if (rate != NULL) {
			long long n = strtoll(rate, &end, 10);
			if (end == rate || *end != '\0' || n < 1 || n > KEY_RATE_MAX)
				return cli_usage(&cmd_key_entry, "--rate-limit takes 1 to %d requests "
				    "a window", KEY_RATE_MAX);
			s.rate_limit = n;
		}
		if (expires != NULL && expiry(expires, &s.expires_ms, &e) < 0)
			return cli_error(&e);
		if (keys_add(&s, &key, &record, &e) < 0)
			return cli_error(&e);
		return print_new("key", key, record, json);
	}
	if (strcmp(argv[0], "rotate") == 0) {
		if (keys_rotate(argv[1], 1, &key, &record, &e) < 0)
			return cli_error(&e);
		return print_new("rotated", key, record, json);
	}
	if (strcmp(argv[0], "revoke") == 0) {
		if (keys_revoke(argv[1], 1, &record, &e) < 0)
			return cli_error(&e);
		fprintf(stderr, "sbxtop: %s '%s' is revoked\n", jstr(record, "id", ""),
		    cli_safe(jstr(record, "name", ""), nm, sizeof nm));
		cJSON_Delete(record);
		return 0;
	}
	return keys_rm(argv[1], 1, &e) < 0 ? cli_error(&e) : 0;
}
