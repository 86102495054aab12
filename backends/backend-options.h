/* The options each backend adds to the master table (core/config.c): data only,
 * so that the thin sbxtop, which links no backend, knows every flag too.  A
 * backend with options lists its table in backends/backend-options.c. */
#ifndef SBX_BACKEND_OPTIONS_H
#define SBX_BACKEND_OPTIONS_H

#include "core/config.h"

/* Every backend's table (each ends with an option whose name is NULL), then
 * NULL. */
extern const struct config_option *const backend_options[];

extern const struct config_option lambda_options[];

#endif
