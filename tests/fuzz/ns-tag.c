/* Fuzz target: reading an agent's --tag back from its command line
 * (backends/ns/ns-tag.c), which a sandbox's root may rewrite.  The input is a
 * command line (NUL-separated arguments, not NUL-terminated).  A tag taken
 * names a valid sandbox id, and the input holds "--tag" then "ID@LABEL" as
 * two whole arguments. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ns/ns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char label[] = "0123456789abcdef";
	char id[32], want[64];
	size_t wl;
	int found = 0;

	if (!ns_tag_of((const char *)data, size, label, id, sizeof id))
		return 0;
	if (!sandbox_id_valid(id))
		abort();
	wl = (size_t)snprintf(want, sizeof want, "--tag%c%s@%s", 0, id, label);
	for (size_t i = 0; i + wl <= size && !found; i++)
		found = (i == 0 || data[i - 1] == '\0') && memcmp(data + i, want, wl) == 0 &&
		    (i + wl == size || data[i + wl] == '\0');
	if (!found)
		abort();
	return 0;
}
