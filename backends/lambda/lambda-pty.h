/* Shells on lambda sandboxes: the agent's PTY through the MicroVM's HTTPS
 * endpoint (see lambda-pty.c). */
#ifndef SBX_LAMBDA_PTY_H
#define SBX_LAMBDA_PTY_H

#include "core/sandbox.h"
#include "lib/err.h"

/* Open the agent's GET /v1/pty?query of s through its endpoint, authorised by
 * a shell token (minutes long) when the MicroVM has SHELL_INGRESS, else by the
 * endpoint token.  Returns an fd carrying the agent's PTY frames in the clear
 * (a thread relays them over TLS), or -1 with e. */
int lambda_pty_open(struct sandbox *s, const char *query, const char *origin, int minutes,
    struct sbx_err *e);

#endif
