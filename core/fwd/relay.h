/* The forward manager: the port forwards one core runs, on one relay thread of
 * its own (an epoll loop).  The core owns it (core.c creates it on the first
 * forward); the exported core_forward_* functions in core.h are its front door,
 * and these few calls are what the rest of the core needs.  The relay knows no
 * struct core: what it asks of the core goes through the hooks. */
#ifndef SBX_FWD_RELAY_H
#define SBX_FWD_RELAY_H

#include "lib/err.h"

struct fwd_mgr;

/* What the relay thread asks of its owner, with arg. */
struct fwd_hooks {
	void	*arg;
	/* Resume the suspended sandbox id for a connection. */
	int	(*resume)(void *arg, const char *id, struct sbx_err *e);
	/* Make the agent endpoint of sandbox id usable now (a token re-minted
	 * when it lapses, is refused, or lacks a port) and store the record. */
	int	(*renew)(void *arg, const char *id, struct sbx_err *e);
};

/* A manager with hooks h (copied), its relay thread started (it never takes
 * signals). */
struct fwd_mgr *fwd_mgr_new(const struct fwd_hooks *h);
/* Close every forward and connection, join the thread, free m (NULL: nothing).
 * The registry keeps the records, so a core started later can restore them. */
void fwd_mgr_free(struct fwd_mgr *m);
/* Close the forwards of sandbox id and their connections now, leaving the
 * records to whoever drops the sandbox's record (destroy).  m may be NULL. */
void fwd_mgr_drop_sandbox(struct fwd_mgr *m, const char *id);

#endif
