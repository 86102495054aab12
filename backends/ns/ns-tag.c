/* The --tag an ns sandbox's agent carries in its command line (ID@LABEL),
 * read back by gc (ns-sweep.c).  The command line is the sandbox's to
 * rewrite (its root may ptrace its agent), so this reads it as any input:
 * bounded, NUL-separated, the id checked. */
#include <string.h>

#include "backends/ns/ns.h"

int
ns_tag_of(const char *cl, size_t n, const char *label, char *id, size_t len)
{
	for (size_t i = 0; i < n;) {
		const char *arg = cl + i, *at;
		size_t alen = strnlen(arg, n - i);

		i += alen + 1;
		if (alen != 5 || memcmp(arg, "--tag", 5) != 0 || i >= n)
			continue;
		arg = cl + i;
		alen = strnlen(arg, n - i);
		if ((at = memchr(arg, '@', alen)) == NULL || (size_t)(at - arg) >= len ||
		    alen - (size_t)(at - arg) - 1 != strlen(label) ||
		    memcmp(at + 1, label, strlen(label)) != 0)
			return 0;
		memcpy(id, arg, (size_t)(at - arg));
		id[at - arg] = '\0';
		return sandbox_id_valid(id);
	}
	return 0;
}
