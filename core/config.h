/* Configuration: one master table of options (config.c, in the spirit of tmux's
 * options-table.c), each with a type, default, range, command-line flag,
 * environment variable and help line.  A value's precedence is
 *   flag > SBXTOP_* environment > $XDG_CONFIG_HOME/sbxtop/sbxtop.conf > default,
 * whatever order the sources are read in. */
#ifndef SBX_CONFIG_H
#define SBX_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

enum config_type { CONFIG_STRING, CONFIG_INT, CONFIG_NUMBER, CONFIG_CHOICE };
enum config_source { CONFIG_DEFAULT, CONFIG_FILE, CONFIG_ENV, CONFIG_FLAG };

struct config_option {
	const char		*name;		/* "max_duration" (the file's key) */
	enum config_type	 type;
	const char		*def;		/* default, as text */
	double			 min, max;	/* CONFIG_INT and CONFIG_NUMBER */
	const char *const	*choices;	/* CONFIG_CHOICE, NULL-terminated */
	const char		*flag;		/* "max-duration" (the --flag) */
	const char		*env;		/* "SBXTOP_MAX_DURATION" */
	const char		*unit;		/* "seconds", "MiB", or NULL */
	const char		*help;
};

struct config;

/* The option table, and how many options it holds. */
const struct config_option *config_options(size_t *n);
/* The option with the given key, or NULL. */
const struct config_option *config_option_find(const char *name);
/* The option whose --flag is flag (without the dashes), or NULL. */
const struct config_option *config_option_by_flag(const char *flag);

/* Every option at its default. */
struct config *config_new(void);
void config_free(struct config *c);
/* Set option name from text coming from src; kept only when src ranks at least as
 * high as where the current value came from.  -1 with SBX_EINVAL naming the
 * option (as its flag, variable or key, by src) and the allowed values. */
int config_set(struct config *c, const char *name, const char *value,
    enum config_source src, struct sbx_err *e);
/* Check value for option name without setting it (same messages as config_set). */
int config_check(const char *name, const char *value, enum config_source src,
    struct sbx_err *e);
/* Read a config file of "key = value" lines ('#' starts a comment).  A missing
 * file is not an error; an unknown key or a bad value is, naming file:line. */
int config_load_file(struct config *c, const char *path, struct sbx_err *e);
/* Read every SBXTOP_* variable of the table from the environment. */
int config_load_env(struct config *c, struct sbx_err *e);
/* The usual sources: the default config file, then the environment. */
int config_load(struct config *c, struct sbx_err *e);

/* Current values (the option must exist and have that type; a broken invariant
 * otherwise). */
const char *config_str(const struct config *c, const char *name);
int64_t config_int(const struct config *c, const char *name);
double config_num(const struct config *c, const char *name);
enum config_source config_source_of(const struct config *c, const char *name);
/* A digest of what a core reads from its configuration and environment beyond
 * what a client resolves and sends itself: every option but the create defaults
 * and the client-side ones (log level, approvals, grace, theme), each AWS_* and
 * other SBXTOP_* variable, HOME and the XDG base directories.  Two processes
 * with the same digest would run a command the same way (core/client/client.c, the
 * admin commands' check before they use the core server). */
uint64_t config_env_digest(const struct config *c);
/* "the allowed values" of an option as text: "1 to 86400 seconds", "none|egress". */
void config_describe_range(const struct config_option *o, char *buf, size_t len);
/* 0 when v is in option name's range (a number given directly, not a flag's
 * text), else -1 with the range in e's message. */
int config_check_num(const char *name, double v, struct sbx_err *e);

#endif
