/* Fuzz target: the checks on what an archive from a sandbox names and links
 * (core/copy/guard.c).  The input is an entry name, a NUL, a link target.  A
 * name that is taken is relative with no empty, "." or ".." part; a link that
 * is taken as inside the tree, resolved by hand from the entry's directory with
 * its ".."s, never climbs above the tree's top. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/copy/guard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[1024], name[1024], why[128];
	const char *target;
	size_t nl;

	if (size >= sizeof buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	nl = strlen(buf);
	target = nl < size ? buf + nl + 1 : "";
	if (copy_guard_name(buf, name, sizeof name, why, sizeof why) < 0)
		return 0;
	if (name[0] == '/' || name[0] == '\0')
		abort();
	for (const char *p = name; *p;) {
		const char *sl = strchrnul(p, '/');
		size_t k = (size_t)(sl - p);
		if (k == 0 || (k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
			abort();
		p = *sl ? sl + 1 : sl;
	}
	if (!copy_guard_link_inside(name, target))
		return 0;
	if (target[0] == '/')
		abort();
	int depth = 0;
	for (const char *p = name; (p = strchr(p, '/')) != NULL; p++)
		depth++;
	for (const char *p = target; *p;) {
		const char *sl = strchrnul(p, '/');
		size_t k = (size_t)(sl - p);
		if (k == 2 && p[0] == '.' && p[1] == '.' && --depth < 0)
			abort();	/* above the top, yet called inside */
		else if (k > 0 && !(k == 1 && p[0] == '.') && !(k == 2 && p[0] == '.' && p[1] == '.'))
			depth++;
		p = *sl ? sl + 1 : sl;
	}
	return 0;
}
