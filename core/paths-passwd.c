/* The home directory from the password database, for a process without HOME.
 * Apart from paths.c because the thin sbxtop, linked statically, has no use
 * for glibc's NSS modules (which a static program would have to load from the
 * glibc it was linked with): without HOME it runs the full binary. */
#include <pwd.h>
#include <stddef.h>
#include <unistd.h>

#include "core/paths.h"

const char *
paths_passwd_home(void)
{
	struct passwd *pw = getpwuid(getuid());

	return pw != NULL && pw->pw_dir != NULL && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}
