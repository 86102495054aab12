/* Signal names, one table for the agent (results, the signal and PTY routes)
 * and the host (128+N exit statuses): sigabbrev_np is glibc only, and the agent
 * is also built against musl. */
#ifndef SBX_SIG_H
#define SBX_SIG_H

/* "HUP" for SIGHUP; NULL for a signal the table does not name. */
const char *sig_name(int sig);
/* "INT", "SIGINT", "int" or "2" to 2; 0 when it names no signal. */
int sig_number(const char *s);

#endif
