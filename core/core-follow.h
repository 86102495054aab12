/* Following a sandbox live, for the console: the agent's event stream, one
 * exec's output from a sequence number, and a PTY connection for a shell.
 * These are core functions (front ends never call the agent client). */
#ifndef SBX_CORE_FOLLOW_H
#define SBX_CORE_FOLLOW_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "core/core.h"

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

/* One PTY frame: write type and payload to fd (-1 with errno on error). */
int core_pty_send(int fd, int type, const void *data, uint32_t len);

#endif
