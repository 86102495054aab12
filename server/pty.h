/* sbxtop/pty: a connection of the core server turned into a sandbox's PTY
 * (docs/core-protocol.md).  After the answer, the bytes on the connection are
 * the agent's PTY frames, relayed unchanged both ways. */
#ifndef SBX_SERVER_PTY_H
#define SBX_SERVER_PTY_H

/* Relay between the client's connection cfd and the agent's PTY connection
 * afd until either ends (then the other is flushed of what was read and the
 * relay returns); neither is closed here. */
void pty_relay(int cfd, int afd);

#endif
