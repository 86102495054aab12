/* The full sbxtop: every front end and the core linked in (cli/main.c does
 * the work); the thin sbxtop (cli/thin.c) execs it for what it cannot do. */
#include <string.h>

#include "cli/cli.h"
#include "core/core.h"

int
main(int argc, char **argv)
{
	/* A diff's walk, started by the core (core_diff). */
	if (argc == 2 && strcmp(argv[1], CORE_DIFF_WALKER) == 0)
		return core_diff_walker_main();
	return cli_main(argc, argv, NULL);
}
