/* Command execution: buffered, streamed and background execs, the exec journal,
 * and the HTTP routes over them (exec_routes in http.h). */
#ifndef AGENT_EXEC_H
#define AGENT_EXEC_H

/* Signal every process group the agent started (shutdown, AWS terminate hook). */
void exec_signal_all(int sig);
/* How many execs are running; foreground_only leaves background jobs out. */
int exec_count_running(int foreground_only);

#endif
