/* The master option table and the code that fills it from defaults, the config
 * file, the environment and flags (see config.h). */
#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend-options.h"
#include "core/config.h"
#include "core/paths.h"
#include "lib/util.h"

static const char *const network_choices[] = { "none", "egress", "rules", NULL };
static const char *const yesno_choices[] = { "no", "yes", NULL };
static const char *const level_choices[] = { "error", "warn", "info", "debug", NULL };
static const char *const approve_choices[] = { "none", "destructive", "all", NULL };
static const char *const approval_default_choices[] = { "deny", "allow", NULL };

/* Adding an option: one line here (or in its backend's table, see
 * backends/backend-options.c), a paragraph in man/sbxtop.conf.5. */
static const struct config_option core_options[] = {
	{ "backend", CONFIG_STRING, "ns", 0, 0, NULL, "backend", "SBXTOP_BACKEND", NULL,
	  "backend of new sandboxes" },
	{ "image", CONFIG_STRING, "", 0, 0, NULL, "image", "SBXTOP_IMAGE", NULL,
	  "root filesystem of new sandboxes (empty: the backend's default)" },
	{ "images_allowed", CONFIG_STRING, "", 0, 0, NULL, "images-allowed",
	  "SBXTOP_IMAGES_ALLOWED", NULL, "OCI images agents may create sandboxes from and pull: "
	  "references, NAME:* (any tag), PREFIX/* or * (comma-separated; empty: none)" },
	{ "image_http", CONFIG_STRING, "", 0, 0, NULL, "image-http", "SBXTOP_IMAGE_HTTP", NULL,
	  "registries (HOST[:PORT], comma-separated) pulled from over plain HTTP when they "
	  "have no TLS; loopback ones always may" },
	{ "image_max_layer", CONFIG_INT, "16384", 1, 1048576, NULL, "image-max-layer",
	  "SBXTOP_IMAGE_MAX_LAYER", "MiB", "most an image layer may unpack to (a "
	  "decompression bomb stops there)" },
	{ "image_max_entries", CONFIG_INT, "1000000", 1, 100000000, NULL, "image-max-entries",
	  "SBXTOP_IMAGE_MAX_ENTRIES", "entries", "most files and directories in one image layer" },
	{ "max_duration", CONFIG_INT, "14400", 1, 86400, NULL, "max-duration",
	  "SBXTOP_MAX_DURATION", "seconds", "lifetime of a sandbox before it is stopped" },
	{ "idle", CONFIG_INT, "0", 0, 86400, NULL, "idle", "SBXTOP_IDLE", "seconds",
	  "stop a sandbox after this long without requests (0: never)" },
	{ "idle_suspend", CONFIG_INT, "0", 0, 86400, NULL, "idle-suspend",
	  "SBXTOP_IDLE_SUSPEND", "seconds", "suspend a sandbox after this long without calls, "
	  "execs or forwarded connections, resumed by the next (0: never)" },
	{ "memory", CONFIG_INT, "0", 0, 1048576, NULL, "memory", "SBXTOP_MEMORY", "MiB",
	  "memory limit of a sandbox (0: none)" },
	{ "cpus", CONFIG_NUMBER, "0", 0, 1024, NULL, "cpus", "SBXTOP_CPUS", "CPUs",
	  "CPU limit of a sandbox, may be fractional (0: none)" },
	{ "disk", CONFIG_INT, "4096", 0, 1048576, NULL, "disk", "SBXTOP_DISK", "MiB",
	  "disk limit of a sandbox's writable files (0: none)" },
	{ "pids", CONFIG_INT, "4096", 0, 4194304, NULL, "pids", "SBXTOP_PIDS", "processes",
	  "most processes and threads in a sandbox (0: none)" },
	{ "network", CONFIG_CHOICE, "none", 0, 0, network_choices, "network",
	  "SBXTOP_NETWORK", NULL,
	  "network of a sandbox: loopback only, egress, or rules (through the core's proxy)" },
	{ "net_allow", CONFIG_STRING, "", 0, 0, NULL, "net-allow", "SBXTOP_NET_ALLOW", NULL,
	  "allow entries every sandbox with network rules starts with (comma-separated)" },
	{ "net_deny", CONFIG_STRING, "", 0, 0, NULL, "net-deny", "SBXTOP_NET_DENY", NULL,
	  "deny entries every sandbox with network rules starts with (comma-separated)" },
	{ "net_ask", CONFIG_CHOICE, "no", 0, 0, yesno_choices, "net-ask", "SBXTOP_NET_ASK", NULL,
	  "hold a connection no entry covers for the operator (ask mode)" },
	{ "net_ask_timeout", CONFIG_INT, "60", 1, 86400, NULL, "net-ask-timeout",
	  "SBXTOP_NET_ASK_TIMEOUT", "seconds", "how long a held connection waits for an answer" },
	{ "net_limit", CONFIG_STRING, "", 0, 0, NULL, "net-limit", "SBXTOP_NET_LIMIT", NULL,
	  "entries an agent's allow entries must stay within (comma-separated; empty: no limit)" },
	{ "log_level", CONFIG_CHOICE, "warn", 0, 0, level_choices, "log-level",
	  "SBXTOP_LOG_LEVEL", NULL, "what sbxtop logs to stderr" },
	{ "approve", CONFIG_CHOICE, "none", 0, 0, approve_choices, "approve",
	  "SBXTOP_APPROVE", NULL, "agent calls held for an operator's approval" },
	{ "approval_timeout", CONFIG_INT, "60", 1, 86400, NULL, "approval-timeout",
	  "SBXTOP_APPROVAL_TIMEOUT", "seconds",
	  "how long a held call waits when no console is attached" },
	{ "approval_default", CONFIG_CHOICE, "deny", 0, 0, approval_default_choices,
	  "approval-default", "SBXTOP_APPROVAL_DEFAULT", NULL,
	  "what a held call gets when no operator answered in time" },
	{ "serve_grace", CONFIG_INT, "300", 0, 86400, NULL, "serve-grace", "SBXTOP_SERVE_GRACE",
	  "seconds", "the core server exits after this long with no clients and no forwards" },
	{ "pool", CONFIG_STRING, "", 0, 0, NULL, "pool", "SBXTOP_POOL", NULL,
	  "sandboxes the core server keeps ready: 'COUNT [backend=B image=I memory=M cpus=C "
	  "pids=P network=N name=X]', profiles separated by ';'" },
	{ "session_idle", CONFIG_INT, "1800", 0, 604800, NULL, "session-idle",
	  "SBXTOP_SESSION_IDLE", "seconds",
	  "a REST /exec/SESSION sandbox unused this long is destroyed (0: never)" },
	{ "templates", CONFIG_STRING, "", 0, 0, NULL, "templates", "SBXTOP_TEMPLATES", NULL,
	  "the REST /exec/SESSION routes' templates: 'NAME=IMAGE, ...' (base: the backend's "
	  "own root, unless named here)" },
	{ "http_header_timeout", CONFIG_INT, "5", 1, 300, NULL, "http-header-timeout",
	  "SBXTOP_HTTP_HEADER_TIMEOUT", "seconds",
	  "serve --listen: a connection must send a request's head within this" },
	{ "http_idle_timeout", CONFIG_INT, "120", 1, 86400, NULL, "http-idle-timeout",
	  "SBXTOP_HTTP_IDLE_TIMEOUT", "seconds",
	  "serve --listen: a client's connection with no request for this long is closed" },
	{ "key_rate_window", CONFIG_INT, "60", 1, 3600, NULL, "key-rate-window",
	  "SBXTOP_KEY_RATE_WINDOW", "seconds",
	  "serve --listen: an API key's rateLimit counts its requests in fixed windows this "
	  "long" },
	{ "theme", CONFIG_STRING, "default", 0, 0, NULL, "theme", "SBXTOP_THEME", NULL,
	  "colour theme of the console (a file NAME.theme in a themes directory)" },
	{ "mcp_budget", CONFIG_INT, "20000", 2000, 200000, NULL, "mcp-budget",
	  "SBXTOP_MCP_BUDGET", "bytes",
	  "the most text an MCP tool result gives a model; longer ones are shortened and page" },
};

/* The master table: the core's options, then each backend's, gathered once. */
static struct config_option *options;
static size_t NOPTS;
static pthread_once_t gathered = PTHREAD_ONCE_INIT;

static void
gather(void)
{
	size_t n = ARRAY_SIZE(core_options);

	for (size_t b = 0; backend_options[b] != NULL; b++)
		for (const struct config_option *o = backend_options[b]; o->name != NULL; o++)
			n++;
	options = xcalloc(n, sizeof *options);
	memcpy(options, core_options, sizeof core_options);
	NOPTS = ARRAY_SIZE(core_options);
	for (size_t b = 0; backend_options[b] != NULL; b++)
		for (const struct config_option *o = backend_options[b]; o->name != NULL; o++)
			options[NOPTS++] = *o;
}
#define TABLE() ((void)pthread_once(&gathered, gather))

struct config {
	char			**value;
	enum config_source	 *src;
};

const struct config_option *
config_options(size_t *n)
{
	TABLE();
	*n = NOPTS;
	return options;
}

static int
index_of(const char *name)
{
	TABLE();
	for (size_t i = 0; i < NOPTS; i++)
		if (strcmp(options[i].name, name) == 0)
			return (int)i;
	return -1;
}

const struct config_option *
config_option_find(const char *name)
{
	int i = index_of(name);
	return i < 0 ? NULL : &options[i];
}

const struct config_option *
config_option_by_flag(const char *flag)
{
	TABLE();
	for (size_t i = 0; i < NOPTS; i++)
		if (strcmp(options[i].flag, flag) == 0)
			return &options[i];
	return NULL;
}

struct config *
config_new(void)
{
	struct config *c = xcalloc(1, sizeof *c);

	TABLE();
	c->value = xcalloc(NOPTS, sizeof *c->value);
	c->src = xcalloc(NOPTS, sizeof *c->src);
	for (size_t i = 0; i < NOPTS; i++)
		c->value[i] = xstrdup(options[i].def);
	return c;
}

void
config_free(struct config *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < NOPTS; i++)
		free(c->value[i]);
	free(c->value);
	free(c->src);
	free(c);
}

void
config_describe_range(const struct config_option *o, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	switch (o->type) {
	case CONFIG_STRING:
		snprintf(buf, len, "a string");
		break;
	case CONFIG_INT:
		snprintf(buf, len, "a whole number from %.0f to %.0f%s%s", o->min, o->max,
		    o->unit ? " " : "", o->unit ? o->unit : "");
		break;
	case CONFIG_NUMBER:
		snprintf(buf, len, "a number from %g to %g%s%s", o->min, o->max,
		    o->unit ? " " : "", o->unit ? o->unit : "");
		break;
	case CONFIG_CHOICE:
		for (const char *const *ch = o->choices; *ch && n < len; ch++)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", ch == o->choices ? "" : "|",
			    *ch);
		break;
	}
}

int
config_check_num(const char *name, double v, struct sbx_err *e)
{
	const struct config_option *opt = config_option_find(name);
	char range[160];

	if (isfinite(v) && v >= opt->min && v <= opt->max &&
	    (opt->type != CONFIG_INT || v == floor(v)))
		return 0;
	config_describe_range(opt, range, sizeof range);
	return sbx_error(e, SBX_EINVAL, NULL, "%s: %g is not valid: expected %s", name, v,
	    range);
}

/* How the option is called where the value came from. */
static const char *
option_label(const struct config_option *o, enum config_source src, char *buf, size_t len)
{
	switch (src) {
	case CONFIG_FLAG:
		snprintf(buf, len, "--%s", o->flag);
		break;
	case CONFIG_ENV:
		snprintf(buf, len, "%s", o->env);
		break;
	default:
		snprintf(buf, len, "%s", o->name);
		break;
	}
	return buf;
}

static int
check_value(const struct config_option *o, const char *v, enum config_source src,
    struct sbx_err *e)
{
	char label[64], range[160], *end;
	double d;

	switch (o->type) {
	case CONFIG_STRING:
		return 0;
	case CONFIG_INT:
	case CONFIG_NUMBER:
		errno = 0;
		d = strtod(v, &end);
		if (v[0] == '\0' || *end != '\0' || errno != 0 || !isfinite(d) ||
		    (o->type == CONFIG_INT && d != floor(d)) || d < o->min || d > o->max ||
		    strspn(v, "0123456789.") != strlen(v))
			break;
		return 0;
	case CONFIG_CHOICE:
		for (const char *const *ch = o->choices; *ch; ch++)
			if (strcmp(*ch, v) == 0)
				return 0;
		break;
	}
	config_describe_range(o, range, sizeof range);
	option_label(o, src, label, sizeof label);
	return sbx_error(e, SBX_EINVAL, NULL, "%s: '%s' is not valid: expected %s", label, v,
	    range);
}

int
config_check(const char *name, const char *value, enum config_source src, struct sbx_err *e)
{
	const struct config_option *o = config_option_find(name);

	if (o == NULL)
		return sbx_error(e, SBX_EINVAL, "see sbxtop.conf(5) for the options",
		    "unknown option '%s'", name);
	return check_value(o, value, src, e);
}

int
config_set(struct config *c, const char *name, const char *value, enum config_source src,
    struct sbx_err *e)
{
	int i = index_of(name);

	if (config_check(name, value, src, e) < 0)
		return -1;
	if (src < c->src[i])
		return 0;
	free(c->value[i]);
	c->value[i] = xstrdup(value);
	c->src[i] = src;
	return 0;
}

static char *
trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' ||
	    end[-1] == '\n'))
		*--end = '\0';
	return s;
}

int
config_load_file(struct config *c, const char *path, struct sbx_err *e)
{
	_cleanup_free_ char *text = NULL;
	char *line, *next;
	size_t len;
	int lineno = 0;

	if ((text = read_file(path, 1 << 20, &len)) == NULL) {
		if (errno == ENOENT)
			return 0;
		return sbx_error_errno(e, SBX_EIO, NULL, "cannot read %s", path);
	}
	if (strlen(text) != len)
		return sbx_error(e, SBX_EINVAL, NULL, "%s: holds a NUL byte", path);
	for (line = text; line != NULL; line = next) {
		char *eq, *key, *val, *hash;
		struct sbx_err sub;

		lineno++;
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		/* A '#' starts a comment anywhere: no option value needs one. */
		if ((hash = strchr(line, '#')) != NULL)
			*hash = '\0';
		line = trim(line);
		if (*line == '\0')
			continue;
		if ((eq = strchr(line, '=')) == NULL)
			return sbx_error(e, SBX_EINVAL, "lines are 'key = value'; see sbxtop.conf(5)",
			    "%s:%d: expected 'key = value'", path, lineno);
		*eq = '\0';
		key = trim(line);
		val = trim(eq + 1);
		/* Quotes are allowed around a value, and mean nothing. */
		len = strlen(val);
		if (len >= 2 && val[0] == '"' && val[len - 1] == '"') {
			val[len - 1] = '\0';
			val++;
		}
		if (config_option_find(key) == NULL)
			return sbx_error(e, SBX_EINVAL, "see sbxtop.conf(5) for the options",
			    "%s:%d: unknown option '%s'", path, lineno, key);
		if (config_set(c, key, val, CONFIG_FILE, &sub) < 0)
			return sbx_error(e, SBX_EINVAL, NULL, "%s:%d: %s", path, lineno, sub.msg);
	}
	return 0;
}

int
config_load_env(struct config *c, struct sbx_err *e)
{
	for (size_t i = 0; i < NOPTS; i++) {
		const char *v = getenv(options[i].env);
		if (v != NULL && config_set(c, options[i].name, v, CONFIG_ENV, e) < 0)
			return -1;
	}
	return 0;
}

int
config_load(struct config *c, struct sbx_err *e)
{
	_cleanup_free_ char *path = paths_file(PATHS_CONFIG, "sbxtop.conf", 0, e);

	if (path == NULL || config_load_file(c, path, e) < 0)
		return -1;
	return config_load_env(c, e);
}

static int
must_index(const char *name, enum config_type t)
{
	int i = index_of(name);

	if (i < 0 || (options[i].type != t &&
	    !(t == CONFIG_STRING && options[i].type == CONFIG_CHOICE)))
		fatal("config: no option %s of that type", name);
	return i;
}

const char *
config_str(const struct config *c, const char *name)
{
	return c->value[must_index(name, CONFIG_STRING)];
}

int64_t
config_int(const struct config *c, const char *name)
{
	return strtoll(c->value[must_index(name, CONFIG_INT)], NULL, 10);
}

double
config_num(const struct config *c, const char *name)
{
	return strtod(c->value[must_index(name, CONFIG_NUMBER)], NULL);
}

enum config_source
config_source_of(const struct config *c, const char *name)
{
	int i = index_of(name);
	return i < 0 ? CONFIG_DEFAULT : c->src[i];
}

/* FNV-1a, 64 bits: the digest only tells equal from different. */
static uint64_t
fnv(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	h ^= 0xff;	/* a separator no string holds */
	return h * 0x100000001b3ULL;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

uint64_t
config_env_digest(const struct config *c)
{
	/* Resolved by the client (create sends them) or about the client and the
	 * server themselves, not about how a command runs. */
	static const char *const skip_opts[] = { "backend", "image", "max_duration", "idle",
		"idle_suspend", "memory", "disk", "cpus", "pids", "network", "log_level", "approve",
		"approval_timeout", "approval_default", "serve_grace", "pool", "theme",
		"mcp_budget" };
	static const char *const skip_env[] = { "SBXTOP_STANDALONE", "SBXTOP_TEST_FAKE_VERSION",
		"SBXTOP_TUI_STATS" };
	static const char *const plain_env[] = { "HOME", "XDG_STATE_HOME", "XDG_DATA_HOME",
		"XDG_CACHE_HOME", "XDG_RUNTIME_DIR" };
	extern char **environ;
	uint64_t h = 0xcbf29ce484222325ULL;
	const char **v;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < NOPTS; i++) {
		int skip = 0;
		for (size_t k = 0; k < ARRAY_SIZE(skip_opts); k++)
			skip |= strcmp(options[i].name, skip_opts[k]) == 0;
		if (!skip) {
			h = fnv(h, options[i].name);
			h = fnv(h, c->value[i]);
		}
	}
	for (char **ep = environ; *ep != NULL; ep++)
		cap++;
	v = xcalloc(cap + 1, sizeof *v);
	for (char **ep = environ; *ep != NULL; ep++) {
		const char *x = *ep, *eq = strchr(x, '=');
		size_t kl = eq ? (size_t)(eq - x) : strlen(x);
		int take = 0;

		if (strncmp(x, "AWS_", 4) == 0) {
			take = 1;
		} else if (strncmp(x, "SBXTOP_", 7) == 0) {
			take = 1;
			for (size_t k = 0; k < ARRAY_SIZE(skip_env); k++)
				if (strlen(skip_env[k]) == kl && strncmp(x, skip_env[k], kl) == 0)
					take = 0;
			/* Options are in the digest by their resolved values above. */
			for (size_t i = 0; i < NOPTS; i++)
				if (strlen(options[i].env) == kl && strncmp(x, options[i].env, kl) == 0)
					take = 0;
		} else {
			for (size_t k = 0; k < ARRAY_SIZE(plain_env); k++)
				if (strlen(plain_env[k]) == kl && strncmp(x, plain_env[k], kl) == 0)
					take = 1;
		}
		if (take)
			v[n++] = x;
	}
	qsort(v, n, sizeof *v, cmp_str);
	for (size_t i = 0; i < n; i++)
		h = fnv(h, v[i]);
	free(v);
	return h;
}
