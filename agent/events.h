/* The agent's event log: everything it did (exec started/exited, file written or
 * deleted, tunnel opened/closed, lifecycle), numbered, in a bounded ring that
 * clients replay and follow with GET /v1/events?from=SEQ. */
#ifndef AGENT_EVENTS_H
#define AGENT_EVENTS_H

#include <stdint.h>
#include <cjson/cJSON.h>

#define EVENTS_RING 4096

/* Record an event of the given type ("exec.started", "file.written", ...) whose
 * fields (an object, taken; may be NULL) are merged with seq, type and ts_ms.
 * Returns its sequence number (from 1). */
uint64_t events_emit(const char *type, cJSON *fields);
/* Wake every follower (used at shutdown). */
void events_shutdown(void);

#endif
