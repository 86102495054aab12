/* A create's options as data: one table (create-opts.c) gives each its name in
 * a request (sbxtop/create, sandbox_create, POST /v1/sandboxes), its --flag,
 * its type, the configuration option whose range and default it takes, what it
 * sets in struct core_create_opts and its help.  The admin method, the MCP tool
 * (and REST through it) build the options with core_create_opts_from_json; the
 * CLI maps its flags onto the same rows and builds the same request.  libc and
 * cJSON only: the thin sbxtop has it. */
#ifndef SBX_CREATE_OPTS_H
#define SBX_CREATE_OPTS_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "core/config.h"
#include "core/core.h"
#include "lib/err.h"

enum create_kind {
	CREATE_STRING,		/* const char *; a CONFIG_CHOICE option's choices */
	CREATE_INT,		/* int64_t, a whole number in its option's range */
	CREATE_NUMBER,		/* double, in its option's range */
	CREATE_ENV,		/* const cJSON *, an object of strings */
	CREATE_NET_LIST,	/* an array of strings: that entry of net */
	CREATE_NET_BOOL,	/* true or false: that entry of net */
};

struct create_option {
	const char		*key;		/* "memory_mib": its name in a request */
	const char		*config;	/* "memory": the configuration option it
						 * overrides (its range, default and
						 * --flag), or NULL: none */
	const char		*flag;		/* with config NULL: the --flag */
	enum create_kind	 kind;
	size_t			 off;		/* where it goes in struct core_create_opts
						 * (not the net kinds') */
	const char		*arg;		/* what the flag takes, as help says ("MiB");
						 * NULL: nothing */
	const char		*help;		/* one paragraph: %r is the range ("0 to
						 * 1048576"), %d the default */
};

/* The table, in the order help lists it. */
const struct create_option *create_options(size_t *n);
/* The row whose --flag (without dashes) is flag, or NULL. */
const struct create_option *create_option_by_flag(const char *flag);
/* Its --flag, without dashes (the configuration option's when it has one). */
const char *create_option_flag(const struct create_option *r);

/* The ranges of the table's numbers into schema, an object schema naming them
 * (minimum and maximum of each property): for a schema written without them. */
void create_options_ranges(cJSON *schema);

/* o from a request's object args: core_create_opts_init, then each key of the
 * table that args has (null: absent), type and range checked; keys it does not
 * have are left to the caller (the admin method's log_level).  What o points to
 * lives in args, but net, which *net gets (caller frees; NULL when args names
 * no network entry).  -1 with SBX_EINVAL naming the key and what it takes. */
int core_create_opts_from_json(struct core_create_opts *o, const cJSON *args, cJSON **net,
    struct sbx_err *e);

#endif
