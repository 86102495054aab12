/* Unit tests for core/paths.c's install-layout rules: the AppArmor fix doctor
 * prints for an installed sbxtop-core and for one in a build tree, and a missing
 * agent bundle being a runtime error (exit status 1), not bad usage (2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "core/paths.h"
#include "lib/err.h"
#include "lib/util.h"

static void
test_apparmor_fix(void)
{
	char tmpl[] = "/tmp/sbxtest-paths.XXXXXX";
	char *d = mkdtemp(tmpl), *f, *exe, *fix;

	if (!check(d != NULL, "a scratch directory"))
		return;
	f = xasprintf("%s/src/scripts/apparmor", d);
	check(mkdir_p(f, 0700) == 0, "a source tree with scripts/apparmor");
	free(f);
	f = xasprintf("%s/src/scripts/apparmor/sbxtop", d);
	{
		FILE *fp = fopen(f, "w");
		check(fp != NULL && fclose(fp) == 0, "... and the profile in it");
	}
	free(f);

	exe = xasprintf("%s/src/build/sbxtop-core", d);
	fix = paths_apparmor_fix(exe);
	f = xasprintf("cd %s/src && sudo make apparmor; ", d);
	check(strncmp(fix, f, strlen(f)) == 0, "build/sbxtop-core: `cd SRC && sudo make apparmor` "
	    "(%s)", fix);
	check(strstr(fix, "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0") != NULL,
	    "... with the host-wide alternative");
	free(f), free(fix), free(exe);

	exe = xasprintf("%s/src/build/clang/sbxtop-core", d);
	fix = paths_apparmor_fix(exe);
	f = xasprintf("cd %s/src && sudo make apparmor BUILD=build/clang; ", d);
	check(strncmp(fix, f, strlen(f)) == 0, "build/clang/sbxtop-core: BUILD=build/clang (%s)",
	    fix);
	free(f), free(fix), free(exe);

	fix = paths_apparmor_fix("/usr/local/lib/sbxtop/sbxtop-core");
	if (access("/etc/apparmor.d/sbxtop", F_OK) == 0)
		check(strncmp(fix, "sudo apparmor_parser -r /etc/apparmor.d/sbxtop;", 48) == 0,
		    "installed, profile present: load it (%s)", fix);
	else
		check(strstr(fix, "sudo make install") != NULL &&
		    strstr(fix, "/etc/apparmor.d/sbxtop for /usr/local/lib/sbxtop/sbxtop-core"),
		    "installed, no profile: reinstall, naming the binary (%s)", fix);
	free(fix);

	fix = paths_apparmor_fix("/opt/elsewhere/sbxtop-core");
	check(strstr(fix, "make install") != NULL, "neither: install sbxtop (%s)", fix);
	free(fix);

	f = xasprintf("rm -rf '%s'", d);
	if (system(f) != 0)
		diag("could not remove %s", d);
	free(f);
}

static void
test_agent_bundle(void)
{
	struct sbx_err e;
	char *b;

	/* This test binary lives in BUILD/tests: no agent-bundle next to it. */
	unsetenv("SBXTOP_AGENT_BUNDLE");
	b = paths_agent_bundle(&e);
	check(b == NULL, "no agent bundle next to the executable: an error");
	if (b == NULL) {
		check(sbx_err_exit_status(&e) == 1, "... with exit status 1 (runtime), not 2 "
		    "(usage): %s", e.msg);
		check(strstr(e.hint, "make") != NULL, "... and a hint to build it: %s", e.hint);
	}
	free(b);
	setenv("SBXTOP_AGENT_BUNDLE", "relative/dir", 1);
	b = paths_agent_bundle(&e);
	check(b == NULL && sbx_err_exit_status(&e) == 2,
	    "a relative SBXTOP_AGENT_BUNDLE is a bad value: exit status 2");
	free(b);
	unsetenv("SBXTOP_AGENT_BUNDLE");
}

int
main(void)
{
	test_apparmor_fix();
	test_agent_bundle();
	return tap_end();
}
