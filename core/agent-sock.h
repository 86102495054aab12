/* Connecting to an agent's unix socket on the host.  The socket lies in a
 * directory the sandbox's root writes (the ns backend's run/, the sandbox's
 * /run/sbxtop), so the name may have been replaced by a link to another socket
 * of the host user: such a name is never followed. */
#ifndef SBX_AGENT_SOCK_H
#define SBX_AGENT_SOCK_H

#include <stddef.h>

/* An O_PATH descriptor of the unix socket at path, which must be a socket
 * itself (not a link to one) owned by the owner of its directory (the sandbox's
 * root, who made the listener); connect to "/proc/self/fd/N" to reach that very
 * inode.  -1 with a sentence in why otherwise. */
int agent_sock_open(const char *path, char *why, size_t len);
/* A socket connected to the unix socket at path, which must be a socket itself
 * (not a link to one) owned by the owner of its directory (the sandbox's root,
 * who made the directory's listener); flags may hold SOCK_NONBLOCK, in which case
 * EINPROGRESS is not an error.  -1 with a sentence in why otherwise. */
int agent_sock_connect(const char *path, int flags, char *why, size_t len);

#endif
