/* Watching one sandbox's execs for a front end: every exec in its agent's
 * journal (the recent ones at once, new ones as the agent announces them,
 * whoever started them) and the live output of each.  The console's in-process
 * source and the core server's sbxtop/follow both use it. */
#ifndef SBX_CORE_WATCH_H
#define SBX_CORE_WATCH_H

#include <stdint.h>
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

/* Following a sandbox live, for the console: the agent's event stream, one
 * exec's output from a sequence number, and a PTY connection for a shell.
 * These are core functions (front ends never call the agent client). */
/* Called with each NDJSON line of a followed stream; < 0 stops it. */
typedef int (*core_line_fn)(const cJSON *line, void *arg);

/* The agent's events of sandbox key from seq from (GET /v1/events), live, until
 * the stream ends, fn returns < 0 or *stop becomes non-zero (looked at about
 * once a second and with each line).  0 when stopped or ended. */
int core_agent_events(struct core *c, const char *key, uint64_t from, core_line_fn fn,
    void *arg, volatile int *stop, struct sbx_err *e);

/* The output of exec exec_id of sandbox key from chunk seq from: the journal's
 * "start", "stdout"/"stderr" (seq, data or data_b64), "gap" and "exit" lines,
 * live until the exec exits; stops as core_agent_events does. */
int core_exec_follow(struct core *c, const char *key, const char *exec_id, uint64_t from,
    core_line_fn fn, void *arg, volatile int *stop, struct sbx_err *e);

/* A login shell on a PTY in sandbox key (command NULL: interactive bash -l):
 * a connected, blocking socket past the agent's 101 answer, carrying the
 * agent's PTY frames ([type][u32 length][payload], docs/agent-api.md).  The
 * caller closes it. */
int core_pty_open(struct core *c, const char *key, int cols, int rows, const char *command,
    const char *origin, struct sbx_err *e);

/* core_pty_send, the frames' writer, and the terminal's side: core/client/pty-term.h. */

#endif
