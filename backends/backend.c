/* The table of compiled-in backends. */
#include <string.h>

#include "backends/backend.h"

const struct backend *const backends[] = {
	&backend_ns,
	&backend_qemu,
	&backend_lambda,
	&backend_ssh,
	NULL,
};

const struct backend *
backend_find(const char *name)
{
	for (size_t i = 0; name != NULL && backends[i] != NULL; i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}
