/* Where the console's data comes from, and where its actions go: the console is
 * written against this interface only.  Two implementations: the core in this
 * process (--standalone, source-local.c) and the core server through
 * core/client/client.h (source-remote.c).
 *
 * Updates arrive as messages (cJSON objects with "k", the kind) queued by the
 * source's threads; the wake descriptor becomes readable when there are some, so
 * the console polls it together with the terminal and never spins.  Kinds:
 *   list      {sandboxes: [record...]}            every known sandbox
 *   forwards  {forwards: [{sandbox,bind,local,remote,conns,bytes_in,bytes_out,live}]}
 *   event     {seq,time_ms,type,sandbox,data}      a core event (tool calls, state)
 *   exec      {sandbox, id, command, origin, state, exit_code, signal,
 *              started_ms, duration_ms}           an exec seen in the journal
 *   output    {sandbox, exec, data}                output of an exec, in order
 *   exit      {sandbox, exec, exit_code, signal, duration_ms}
 *   result    {what, ok, message, data, sandbox?}  an asynchronous action's end (the
 *             sandbox its arguments named)
 *   approvals {approvals: [{id, client, tool, sandbox, arguments}], mode}
 *   sessions  {mcp: N}
 *   log       {sandbox, data, reset?, exists?}     the selected sandbox's log
 *             (core server: reset starts it over, exists says whether there is
 *             a file; standalone reads the file itself, see source_log_path)
 *   core      {state: "connected"|"lost", pid, reconnected}   the core server
 *   net       {verb, ok, message?, data}           source_net_async's answer (show:
 *             core_net_show's object of the selected sandbox)
 *   net_pending {pending: [...]}                   core_net_pending of every sandbox,
 *             fetched again on net.ask, net.decided and an operator's verdict
 */
#ifndef SBX_TUI_SOURCE_H
#define SBX_TUI_SOURCE_H

#include <cjson/cJSON.h>

#include "core/config.h"
#include "lib/err.h"

struct source;

#define NET_RECENT	200	/* log lines of the Network tab's first paint */

/* The core in this process, over configuration cfg (taken). */
struct source *source_standalone_new(struct config *cfg, struct sbx_err *e);
/* The core server (started when none runs). */
struct source *source_remote_new(struct sbx_err *e);
/* Stop every thread and free. */
void source_free(struct source *s);

/* "standalone" or "local" (the core server on this machine). */
const char *source_kind(const struct source *s);
/* Readable while messages wait. */
int source_wake_fd(const struct source *s);
/* The next message (caller frees), or NULL when none is left. */
cJSON *source_next(struct source *s);

/* Follow sandbox id (NULL: none): its execs and their output from now on. */
void source_select(struct source *s, const char *id);
/* The host path of a sandbox's agent log, or NULL when it cannot be read here
 * (caller frees). */
char *source_log_path(struct source *s, const char *id);

/* Call a tool as the MCP client "console" would (blocking; args taken).
 * *result (may be NULL) gets structuredContent (caller frees). */
int source_call(struct source *s, const char *tool, cJSON *args, cJSON **result,
    struct sbx_err *e);
/* The same on a worker thread: a "result" message tagged what follows. */
void source_call_async(struct source *s, const char *tool, cJSON *args, const char *what);

/* Approvals (core server only; SBX_EUNSUPPORTED otherwise). */
int source_approvals(struct source *s, cJSON **list, struct sbx_err *e);
int source_approve(struct source *s, const char *id, int allow, const char *reason,
    struct sbx_err *e);
int source_approve_mode(struct source *s, const char *mode, struct sbx_err *e);

/* The network policy (core/net.h), as `sbxtop net` reaches it: verb "show"
 * {sandbox, recent}, "pending" {sandbox?}, "decide" {sandbox, req, answer:
 * once|always|deny}, "change" {sandbox, verb: allow|deny|remove, entry}
 * (params taken; *result, may be NULL, the answer: caller frees). */
int source_net(struct source *s, const char *verb, cJSON *params, cJSON **result,
    struct sbx_err *e);
/* The same on a worker thread: a "net" message follows. */
void source_net_async(struct source *s, const char *verb, cJSON *params);

/* A PTY connection (core-follow.h's frames) to a login shell in sandbox id. */
int source_pty_open(struct source *s, const char *id, int cols, int rows,
    struct sbx_err *e);

#endif
