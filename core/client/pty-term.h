/* This process's terminal on a sandbox's PTY: the agent's frames
 * ([type][u32 length][payload], docs/agent-api.md) spoken over a connection
 * that core_pty_open or client_pty_open made.  The console's `s`, `sbxtop
 * shell` and `sbxtop exec -t` share it; it needs libc only, so the thin
 * sbxtop has it. */
#ifndef SBX_PTY_TERM_H
#define SBX_PTY_TERM_H

#include <stdint.h>

/* One PTY frame: write type and payload to fd (-1 with errno on error). */
int core_pty_send(int fd, int type, const void *data, uint32_t len);

/* The terminal's size (80x24 when fd 0 is not a terminal). */
void pty_term_size(int *cols, int *rows);

/* Relay to the frames on fd until the shell's exit frame or the end of the
 * connection: standard input (when input is set) as its input, its output to
 * standard output, the terminal in raw mode meanwhile (when standard input is
 * one) and its size passed on as it changes (SIGWINCH).  Returns the shell's
 * status (its exit code, or 128+N when signal N ended it), or -1 when the
 * connection ended without saying. */
int pty_term_relay(int fd, int input);

#endif
