/* Path resolution inside the sandbox's root.  Every file the API touches is opened
 * with openat2(RESOLVE_IN_ROOT) below a descriptor of agent.root, so "..", absolute
 * symlinks and relative symlinks all resolve as if agent.root were "/": nothing
 * outside it is ever reached, whatever the path or the links inside say. */
#ifndef AGENT_PATH_H
#define AGENT_PATH_H

#include <sys/types.h>

#define PATH_MAX_LEN 4096

/* The sandbox-absolute form of path: relative paths are taken against the
 * workspace; "." and ".." are folded lexically (".." at the root stays at the
 * root); repeated and trailing slashes are dropped.  NULL (errno EINVAL) for an
 * empty path, a NUL, or one longer than PATH_MAX_LEN.  Caller frees. */
char *path_normalize(const char *workspace, const char *path);

/* Open agent.root once, as the agent, for every resolution after: a call
 * acting as the sandbox's user (agent_act_as) starts at the root as any
 * process in the sandbox does, whatever lies above it on the host.  0, or -1
 * with errno. */
int path_root_open(void);

/* Open path inside the root (flags and mode as for open(2); O_CLOEXEC is added).
 * Symlinks in the last component are followed unless flags has O_NOFOLLOW.
 * Returns a descriptor or -1 with errno. */
int path_open(const char *path, int flags, mode_t mode);

/* Open the directory that holds path (O_PATH|O_DIRECTORY) and give the last
 * component in *name (caller frees): for mkdirat, unlinkat, renameat, fstatat.
 * -1 with errno EINVAL when path is the root itself. */
int path_open_parent(const char *path, char **name);

/* Create the directories leading to path (not path itself), mode 0755, owned by
 * whoever runs this.  0 or -1 with errno. */
int path_mkdir_parents(const char *path);

#endif
