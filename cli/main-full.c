/* The full sbxtop: every front end and the core linked in (cli/main.c does
 * the work); the thin sbxtop (cli/thin.c) execs it for what it cannot do. */
#include "cli/cli.h"

int
main(int argc, char **argv)
{
	return cli_main(argc, argv, NULL);
}
