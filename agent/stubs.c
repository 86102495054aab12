/* Route tables of areas not built yet. */
#include "agent/http.h"

#define EMPTY { NULL, NULL, 0, NULL, NULL, 0 }
const struct route files_routes[] = { EMPTY };
const struct route archive_routes[] = { EMPTY };
