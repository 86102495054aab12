/* sbxtop/logs: one sandbox's log followed for one connection of the core
 * server (docs/core-protocol.md).  The tail is replayed first, then what is
 * appended, as sbxtop/log notifications, from a thread of its own that looks at
 * the file ten times a second. */
#ifndef SBX_SERVER_LOGS_H
#define SBX_SERVER_LOGS_H

#include <stddef.h>

#include "core/core.h"

struct logs;

/* Writes one notification line (without its newline) to the connection; called
 * on the follower's thread. */
typedef void (*logs_write_fn)(void *arg, const char *text, size_t len);

/* Log which ("agent" or "console") of sandbox key, to be followed with its
 * last lines lines (at most its last MiB) replayed first.  NULL with e when the
 * sandbox or the log is unknown; a log that does not exist yet is waited for.
 * Nothing is written before logs_start. */
struct logs *logs_open(struct core *c, const char *key, const char *which, int lines,
    logs_write_fn fn, void *arg, struct sbx_err *e);
/* Start following (after the request's answer went out); -1 with e when no
 * thread could be started (l is then freed). */
int logs_start(struct logs *l, struct sbx_err *e);
/* Stop, wait for the thread and free: nothing is written after this returns.
 * NULL is fine. */
void logs_stop(struct logs *l);

#endif
