/* The console's model, apart from drawing (htop's habit): what the source says
 * is folded in here, and each change returns flags naming the parts of the
 * screen that must be redrawn.  Only the console's thread touches it. */
#ifndef SBX_TUI_MODEL_H
#define SBX_TUI_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

/* What changed: the parts of the screen to redraw. */
enum {
	DIRTY_TITLE	= 1 << 0,
	DIRTY_LIST	= 1 << 1,
	DIRTY_FWD	= 1 << 2,
	DIRTY_RIGHT	= 1 << 3,
	DIRTY_PROMPT	= 1 << 4,
	DIRTY_KEYS	= 1 << 5,
	DIRTY_ALL	= 0xff,
};

/* Lines kept, oldest dropped first. */
struct lines {
	char	**v;
	int64_t	 *ts;		/* when each line came (wall clock ms) */
	unsigned char *err;	/* 1: the line came on stderr */
	int	 stream_err;	/* what lines_append marks the lines it makes with */
	size_t	 start, n, cap;
	uint64_t dropped;
	int	 open;		/* the last line has no newline yet */
};
void lines_init(struct lines *l, size_t cap);
void lines_free(struct lines *l);
/* Append text, split at newlines (a line longer than 4 KiB is split too). */
void lines_append(struct lines *l, const char *text, size_t len);
const char *lines_at(const struct lines *l, size_t i);
int64_t lines_ts(const struct lines *l, size_t i);
int lines_err(const struct lines *l, size_t i);
void lines_clear(struct lines *l);

struct m_sandbox {
	char	 id[32];
	char	 name[68];
	char	 backend[16];
	char	 state[16];
	int64_t	 created_ms, expires_ms;
	int64_t	 memory_mib, disk_mib;
	double	 cpus;
	int	 nfwd;
	int	 running;	/* execs running, where known (-1: not known) */
	int	 journal;	/* running is from the agent's journal (the listing's
				 * usage), not only from the events seen */
	double	 cpu_pct;	/* live use, -1 where not known */
	int64_t	 mem_bytes, pids, disk_bytes, oom_kills;
	char	 now[96];	/* what is running now, where known */
	cJSON	*rec;		/* the whole record, for Info */
};

struct m_exec {
	char		 id[32];
	char		 origin[40];
	char		*command;
	int		 running;
	int		 exit_code;	/* -1 when signalled or unknown */
	char		 signal[16];
	int		 oom;		/* the agent says the OOM killer ended it */
	int64_t		 started_ms, duration_ms;
	struct lines	 out;
	int		 kill_sent;	/* 0, 1 TERM, 2 KILL */
	int64_t		 oom_base;	/* the sandbox's oom_kills when it was first seen */
};

struct m_forward {
	char	 sandbox[32];
	char	 bind[64];
	int	 local, remote, live;
	uint64_t conns, bytes_in, bytes_out, failures;
	char	 last_error[160];
};

struct m_activity {
	int64_t	 time_ms;
	char	 sandbox[32];
	char	 client[48];
	char	 key[72];	/* the API key's name it came with, or "" */
	char	 tool[40];
	char	*args;
	int64_t	 duration_ms;	/* -1 while running */
	char	 outcome[24];
	char	*message;
	char	*result;	/* the result as the journal gave it, or NULL */
	char	 request[48];	/* to match started and finished */
};

#define MODEL_EXECS_MAX		64	/* of the selected sandbox */
#define MODEL_EXEC_LINES	5000
#define MODEL_ACTIVITY_MAX	500
#define MODEL_LOG_LINES		10000

struct model {
	struct m_sandbox	*sb;
	size_t			 nsb;
	struct m_forward	*fwd;
	size_t			 nfwd;
	char			 sel[32];	/* the selected sandbox's id */

	struct m_exec		*execs[MODEL_EXECS_MAX];
	size_t			 nexecs;

	struct m_activity	 act[MODEL_ACTIVITY_MAX];
	size_t			 act_start, nact;

	struct lines		 logs;
	char			*log_path;
	uint64_t		 log_off;
	int			 log_state;	/* streamed: 1 a file, -1 none yet, 0 unknown */

	int			 core_lost;	/* the core server is gone (reconnecting) */
	int			 core_pid;
	int			 core_reconnects;
	int			 orphans;	/* sandboxes no record names (gc's) */

	cJSON			*approvals;	/* array, or NULL */
	cJSON			*net;		/* the selected sandbox's core_net_show, its
						 * recent connections kept up to date by the
						 * net.* events, or NULL */
	cJSON			*net_asks;	/* what every sandbox's policy holds for the
						 * operator (core_net_pending), or NULL */
	char			 approve_mode[16];
	int			 sessions;	/* MCP sessions, -1 unknown */

	char			 watch_exec[32];	/* the command x started: its end is said */
	char			 watch_sandbox[32];

	char			 message[256];	/* the last result, for the prompt line */
	int			 message_err;
	int64_t			 message_ms;
};

void model_init(struct model *m);
void model_free(struct model *m);
/* Fold one source message in; returns DIRTY_* flags. */
int model_apply(struct model *m, const cJSON *msg);
/* Select sandbox id: its execs and logs start afresh. */
int model_select(struct model *m, const char *id);
struct m_sandbox *model_sandbox(struct model *m, const char *id);
/* The sandbox key names as the tools resolve it: an id, a name, or an id
 * prefix that only one id has; NULL when none or several match. */
const struct m_sandbox *model_find(const struct model *m, const char *key);
/* What pending approval a (an item of m->approvals) asks for, said for the
 * operator: "sandbox_destroy on sbx-1a2b3c (via-mcp)", the sandbox taken
 * from its arguments and named when the model knows it. */
void model_approval_what(const struct model *m, const cJSON *a, char *buf, size_t len);
/* Every argument of approval a, one "name: value" line each (a string as it is,
 * anything else as JSON), the host's paths and ports (local_*, host) first, so
 * a long sandbox path cannot push them out of sight.  Caller frees. */
char *model_approval_args(const cJSON *a);
/* Fold a net or net_pending message, or a net.* event, in (model-net.c). */
int model_net(struct model *m, const char *k, const cJSON *msg);
/* The operator's queue: held tool calls first, then held connections and
 * requests; item i (NULL past the end), *net set when it is a network ask. */
size_t model_queue_n(const struct model *m);
const cJSON *model_queue_at(const struct model *m, size_t i, int *net);
/* "pypi.org:443" ("[::1]:443") for a log line or ask o. */
void model_net_dest(const cJSON *o, char *buf, size_t len);
/* The index of sandbox's ask req in asks, or -1. */
int model_net_ask_find(const cJSON *asks, const char *sandbox, const char *req);
/* "sbx-7f3a9c wants pypi.org:443" for network ask a. */
void model_net_ask_what(const struct model *m, const cJSON *a, char *buf, size_t len);
struct m_exec *model_exec(struct model *m, const char *id);
/* Say on the prompt line how the command x started ends, now if it has
 * (exec exec_id of sandbox), else when it does. */
int model_watch_exec(struct model *m, const char *sandbox, const char *exec_id);
/* The i-th activity entry, oldest first. */
const struct m_activity *model_activity(const struct model *m, size_t i);
/* Read what was appended to the selected sandbox's log; DIRTY_RIGHT when any. */
int model_poll_logs(struct model *m);
/* Say something on the prompt line. */
int model_say(struct model *m, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
