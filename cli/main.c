/* sbxtop: the operator console, the MCP server and the admin commands. */
#include <stdio.h>
#include <string.h>

#include "core/util.h"

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		printf("sbxtop %s\n", SBX_VERSION);
		return 0;
	}
	fprintf(stderr, "usage: sbxtop --version\n");
	return 2;
}
