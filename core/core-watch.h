/* Watching one sandbox's execs for a front end: every exec in its agent's
 * journal (the recent ones at once, new ones as the agent announces them,
 * whoever started them) and the live output of each.  The console's in-process
 * source and the core server's sbxtop/follow both use it. */
#ifndef SBX_CORE_WATCH_H
#define SBX_CORE_WATCH_H

#include <cjson/cJSON.h>

#include "core/core.h"

/* Called on the watch's threads with kind "exec" {sandbox, id, command, origin,
 * state, exit_code, signal, started_ms, duration_ms}, "output" {sandbox, exec,
 * data} or "exit" {sandbox, exec, exit_code, signal, duration_ms}; msg is taken. */
typedef void (*core_watch_fn)(const char *kind, cJSON *msg, void *arg);

struct core_watch;

/* A watch over core c (not owned) with nothing selected yet. */
struct core_watch *core_watch_new(struct core *c, core_watch_fn fn, void *arg);
/* Watch sandbox id from now on (NULL or "": none); the previous one stops. */
void core_watch_select(struct core_watch *w, const char *id);
/* Stop every thread (within about a second) and free. */
void core_watch_free(struct core_watch *w);

#endif
