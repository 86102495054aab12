/* Logging to stderr or a file, never stdout (stdout may carry a protocol).
 * log_warn appends strerror(errno); log_warnx does not, as in tmux and OpenBSD. */
#ifndef SBX_LOG_H
#define SBX_LOG_H

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Send logs to path (appended, 0600) instead of stderr; NULL for stderr. */
int log_open(const char *prog, const char *path);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* A sink for the calling thread's messages up to level (in addition to the log
 * itself, which keeps its own level): the core server hands what a client's
 * call logs back to that client.  fn NULL removes it. */
typedef void (*log_hook_fn)(enum log_level level, const char *msg, void *arg);
void log_set_thread_hook(log_hook_fn fn, enum log_level level, void *arg);

void log_msg(enum log_level level, int with_errno, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_warn(...)  log_msg(LOG_WARN, 1, __VA_ARGS__)
#define log_warnx(...) log_msg(LOG_WARN, 0, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, 0, __VA_ARGS__)
#define log_errx(...)  log_msg(LOG_ERROR, 0, __VA_ARGS__)

#endif
