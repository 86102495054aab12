/* Fuzz target: path_normalize on arbitrary bytes.  Whatever the input, the result
 * is a clean absolute path: starts with "/", no empty, "." or ".." component, no
 * trailing slash except for "/" itself, and normalizing it again changes nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/path.h"

static void
check_clean(const char *p)
{
	size_t n = strlen(p);

	if (p[0] != '/')
		abort();
	if (n > 1 && p[n - 1] == '/')
		abort();
	if (strstr(p, "//") != NULL)
		abort();
	for (const char *s = p + 1; *s != '\0';) {
		const char *e = strchrnul(s, '/');
		size_t len = (size_t)(e - s);
		if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
			abort();
		s = *e ? e + 1 : e;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const workspaces[] = { "/workspace", "/", "/a/./b/../c//" };
	char *in = malloc(size + 1);

	memcpy(in, data, size);
	in[size] = '\0';
	size_t len = strlen(in);		/* a NUL ends the path, as in C */
	for (size_t w = 0; w < sizeof workspaces / sizeof workspaces[0]; w++) {
		char *p = path_normalize(workspaces[w], in);
		if (len == 0 || len > PATH_MAX_LEN) {
			if (p != NULL)
				abort();
			continue;
		}
		if (p == NULL)
			abort();
		check_clean(p);
		if (strlen(p) > strlen(workspaces[w]) + 1 + len + 1)
			abort();
		char *again = path_normalize("/elsewhere", p);
		if (again == NULL || strcmp(again, p) != 0)
			abort();	/* a normalized path is a fixed point */
		free(again);
		free(p);
	}
	free(in);
	return 0;
}
