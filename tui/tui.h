/* The operator console: `sbxtop` with no command. */
#ifndef SBX_TUI_H
#define SBX_TUI_H

#include "core/config.h"

struct tui_opts {
	int		 standalone;	/* the core in this process, not the core server */
	int		 readonly;	/* hide every action that changes something */
	const char	*theme;		/* NULL: the config's "theme" */
};

/* Run the console on the terminal until the operator quits (cfg taken).
 * Returns the exit status. */
int tui_main(struct config *cfg, const struct tui_opts *o);

#endif
