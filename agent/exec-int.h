/* What the pieces of the exec module share: exec.c (the exec object, the journal
 * and the routes), exec-spawn.c (starting the child) and exec-pump.c (the thread
 * that moves its output into the chunk ring).  Nothing outside agent/exec*.c
 * includes this; the module's interface is agent/exec.h.
 *
 * Locking: ex_mu guards the journal and every exec's shared fields.  Lock order is
 * children_lock() before ex_mu (the exit callback runs with children_lock held). */
#ifndef AGENT_EXEC_INT_H
#define AGENT_EXEC_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "lib/buf.h"

#define RETAIN_RUNNING	(1u << 20)	/* chunk bytes a running exec keeps for replay */
#define RETAIN_DONE	(256u << 10)	/* ... and once it has exited */
#define ORIGIN_MAX	32

enum mode { MODE_BUFFERED, MODE_STREAM, MODE_BACKGROUND };
enum term_reason { TERM_NONE, TERM_TIMEOUT, TERM_DISCONNECT };

struct chunk {
	char	*line;		/* a whole NDJSON line, '\n'-terminated */
	size_t	 len;
};

struct exec {
	/* Fixed once the exec is started. */
	char		 id[24];
	char		*command;	/* as shown: at most COMMAND_SHOWN bytes */
	char		 origin[ORIGIN_MAX + 1];
	pid_t		 pid;		/* also the process group id */
	enum mode	 mode;
	int		 as_root;
	int64_t		 started_wall, started_mono;
	int64_t		 deadline;	/* monotonic ms, 0: none */
	size_t		 out_max;	/* per stream; not for background */
	char		*log_path;	/* background only */
	int		 wake_fd;	/* eventfd that breaks the pump's poll */

	/* Under ex_mu. */
	int		 refs;
	pthread_cond_t	 cv;
	int		 leader_exited;
	int		 status;
	int64_t		 exit_mono;
	int		 done;		/* output drained, result final */
	int		 draining;	/* the pump still reads pipes someone holds */
	int		 timed_out, truncated;
	enum term_reason term;
	int		 exit_code, signo;	/* -1 when not applicable */
	int64_t		 oom_base;	/* the OOM-kill count at the start, -1 unknown */
	int		 oom;		/* the OOM killer ended it */
	int64_t		 duration_ms;
	char		*exit_line;
	struct chunk	*chunks;	/* ring of the newest chunks, oldest at head */
	size_t		 chead, ccount, ccap, retained;
	uint64_t	 next_seq;	/* seq of the next chunk; seqs start at 1 */
	int		 primary;	/* the streaming request is attached */
	uint64_t	 primary_seq;	/* next seq it has not taken yet */

	/* Buffered result: written by the pump only, read after done. */
	struct buf	 out[2];

	/* The whole output, kept in a file per stream inside the sandbox for a
	 * client to read back by offset (buffered and streamed execs): written
	 * by the pump, the rest under ex_mu.  keep_path is NULL until the first
	 * byte, and again once the file was removed to make room. */
	char		*keep_path[2];
	uint64_t	 kept[2];	/* bytes in each file */
	uint64_t	 bytes[2];	/* every byte of each stream */
};

extern pthread_mutex_t ex_mu;

/* --- exec.c ---------------------------------------------------------------------- */

/* How a finished exec ended: "exit", "signal", "timeout" or "oom" (ex_mu held). */
const char *exec_reason(const struct exec *e);
/* Take a reference (ex_mu held). */
void exec_ref_locked(struct exec *e);
/* Drop a reference; the last one frees the exec. */
void exec_unref(struct exec *e);
/* Signal the exec's process group if its leader has not been reaped yet (so the
 * group id cannot have been reused).  0, or -1 when it has exited. */
int exec_kill(struct exec *e, int sig);
/* The child_watch callback of an exec's leader (main thread, children_lock held). */
void exec_reaped(pid_t pid, int status, void *arg);
/* Drop the oldest exited execs beyond EXEC_JOURNAL_MAX. */
void journal_trim(void);
/* How many of want bytes of stream s e may add to its kept file (ex_mu held):
 * within EXEC_KEEP_STREAM and the agent's total, making room by removing the
 * kept files of the oldest exited execs; counted as kept. */
size_t keep_reserve(struct exec *e, int s, size_t want);
/* Give back what keep_reserve counted but could not be written. */
void keep_unreserve(struct exec *e, int s, size_t n);
/* The total the kept files may hold, from the size of their filesystem (the
 * first file's): at most EXEC_KEEP_TOTAL and an eighth of it. */
void keep_set_cap(uint64_t fs_bytes);
/* The kept output's fields ({stdout,stderr}_bytes, and _path and _kept for a
 * file still there) added to o (ex_mu held). */
void keep_json_locked(const struct exec *e, cJSON *o);
/* A signal as a result field: its name, its number as a string, or null (sig <= 0). */
cJSON *signal_json(int sig);
/* Append s (n bytes of valid UTF-8, NULs allowed) as a quoted JSON string. */
void json_quote(struct buf *b, const char *s, size_t n);
/* o printed as one '\n'-terminated line (o is deleted; caller frees the line). */
char *json_line(cJSON *o);
/* Wait on cv (ex_mu held) for at most ms; the pthread_cond_timedwait result. */
int cond_wait_ms(pthread_cond_t *cv, int ms);

/* --- exec-pump.c ----------------------------------------------------------------- */

struct pump;

/* A pump for e (taking a reference to it) over the parent's ends of the pipes:
 * out_fd, err_fd (read, non-blocking), in_fd (write, non-blocking, or -1) which
 * gets a copy of in (NULL: nothing), and log_fd (background: where the output
 * goes, or -1); the pump owns the descriptors. */
struct pump *pump_new(struct exec *e, int out_fd, int err_fd, int in_fd, const char *in,
    int log_fd);
/* The pump thread: runs until the exec is done and its pipes are let go, then
 * frees p and drops its reference. */
void *pump_main(void *arg);
/* Drop the oldest chunk of the ring (ex_mu held). */
void ring_drop_oldest(struct exec *e);
/* Close *fd unless it is -1, and set it to -1. */
void pump_close(int *fd);

/* --- exec-spawn.c ---------------------------------------------------------------- */

struct spawn {
	const char	*shell;
	char		*argv[4];
	char		**envp;
	char		*direct;	/* the plain command's file (spawn_plain), or NULL */
	char		**words;	/* and its argv */
	int		 cwd_fd;
	int		 in_fd, out_fd, err_fd;	/* the child's ends */
	int		 as_root;
};

/* bash when the sandbox has it, else /bin/sh. */
const char *spawn_shell(void);
/* When command is plain words that a shell would only split and look up in
 * PATH (no quoting, expansion, redirection, assignment, builtin or keyword):
 * set sp->direct and sp->words, so the child execs it without the shell, which
 * it still falls back to should that exec fail.  Adds PWD to sp->envp, for
 * either way.  spawn_plain_free undoes it. */
void spawn_plain(struct spawn *sp, const char *command);
void spawn_plain_free(struct spawn *sp);
/* The child's environment: the clean base, then env's (which wins); strv_free it. */
char **spawn_env(int as_root, const cJSON *env);
/* Fork and exec; e->pid is set and the child watched.  0, or -1 with a message
 * in err and *client 1 when the request is at fault (too large for execve), 2
 * when the command cannot be started where it asked (the cwd), 0 otherwise. */
int spawn_child(struct exec *e, const struct spawn *sp, const char *cwd, char *err,
    size_t errlen, int *client);
/* A new file EXEC_LOG_DIR/exec-ID.EXT ("log": a background job's; "stdout",
 * "stderr": a command's kept output): the descriptor with *path set (caller
 * frees) and *fs_bytes (may be NULL) the size of its filesystem, or -1 with err. */
int spawn_open_file(const char *id, const char *ext, char **path, uint64_t *fs_bytes,
    char *err, size_t errlen);

#endif
