/* Command execution: buffered, streamed and background execs, the exec journal,
 * and the HTTP routes over them (exec_routes in http.h).
 *
 * Every exec runs `bash -c COMMAND` (or `/bin/sh -c`) in its own process group and
 * is pumped by a thread of its own, which reads its output, feeds its stdin,
 * enforces its timeout and records numbered output chunks that any number of
 * clients can replay and follow.  The journal keeps the last EXEC_JOURNAL_MAX
 * execs; running ones are never dropped. */
#ifndef AGENT_EXEC_H
#define AGENT_EXEC_H

#define EXEC_JOURNAL_MAX	128
#define EXEC_TIMEOUT_DEFAULT_S	600
#define EXEC_TIMEOUT_MAX_S	86400
#define EXEC_OUTPUT_DEFAULT	(1 << 20)	/* per stream */
#define EXEC_OUTPUT_MAX		(64 << 20)
#define EXEC_KILL_GRACE_MS	2000		/* TERM, then KILL after this */
#define EXEC_LOG_DIR		"/tmp/sbxtop"	/* background logs, kept output, inside the sandbox */
/* Each buffered or streamed exec's whole output is kept in EXEC_LOG_DIR (a
 * file per stream, removed with the exec's journal entry) up to this much per
 * stream, and all of them together up to EXEC_KEEP_TOTAL or an eighth of the
 * filesystem's size (/tmp is memory in most sandboxes), the oldest exited
 * exec's files going first to make room. */
#define EXEC_KEEP_STREAM	(16u << 20)
#define EXEC_KEEP_TOTAL		(64u << 20)

/* Signal every process group the agent started (shutdown, AWS terminate hook). */
void exec_signal_all(int sig);
/* Remove every exec's kept output (the agent is stopping: nobody can ask for it
 * any more). */
void exec_keep_clear(void);
/* How many execs are running; foreground_only leaves background jobs out. */
int exec_count_running(int foreground_only);

#endif
