/* The backends' option tables (backend-options.h), one line per backend. */
#include <stddef.h>

#include "backends/backend-options.h"

const struct config_option *const backend_options[] = {
	lambda_options,
	NULL,
};
