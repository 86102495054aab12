/* The forward manager: the port forwards one core runs, on one relay thread of
 * its own (an epoll loop).  The core owns it (core.c creates it on the first
 * forward); the exported core_forward_* functions in core.h are its front door,
 * and these few calls are what the rest of the core needs. */
#ifndef SBX_FORWARD_H
#define SBX_FORWARD_H

struct core;
struct fwd_mgr;

/* A manager for core c, its relay thread started (it never takes signals). */
struct fwd_mgr *fwd_mgr_new(struct core *c);
/* Close every forward and connection, join the thread, free m (NULL: nothing).
 * The registry keeps the records, so a core started later can restore them. */
void fwd_mgr_free(struct fwd_mgr *m);
/* Close the forwards of sandbox id and their connections now, leaving the
 * records to whoever drops the sandbox's record (destroy).  m may be NULL. */
void fwd_mgr_drop_sandbox(struct fwd_mgr *m, const char *id);

#endif
