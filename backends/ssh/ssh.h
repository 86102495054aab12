/* SSH to remote hosts with libssh2 (backends/ssh/ssh.c): one session per host, shared by
 * everything this process does there (commands, SFTP, the relays to its
 * sandboxes' agents), host keys checked against ~/.ssh/known_hosts, public-key
 * auth from a key file or ssh-agent, keepalives.  Only backends/ssh/backend-ssh.c and
 * backends/ssh/hosts.c call these. */
#ifndef SBX_SSH_H
#define SBX_SSH_H

#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

/* Where and how to reach a host. */
struct ssh_target {
	const char	*name;		/* the host's name in sbxtop (for messages) */
	const char	*user;
	const char	*addr;		/* DNS name or IP address */
	int		 port;
	const char	*identity;	/* private key file, or NULL: ssh-agent, then ~/.ssh/id_* */
	int		 accept_new;	/* trust an unknown host key and record it */
};

struct ssh_conn;

/* The live session to t (made, verified and authenticated on first use, made
 * again when it broke); owned by this module, valid until ssh_drop.  Errors name
 * the host and the fix: refused connection, unknown or changed host key, a key
 * the server refused. */
struct ssh_conn *ssh_get(const struct ssh_target *t, struct sbx_err *e);
/* Close the session to host name (if any), with its relays. */
void ssh_drop(const char *name);

/* Run cmd on the host with in (may be NULL) on its stdin; *out gets stdout (NUL
 * terminated, at most 4 MiB, caller frees), *status the exit status (-1 when
 * killed by a signal).  Stderr's tail goes into e when the status is not 0 and
 * errout is set. */
int ssh_run(struct ssh_conn *c, const char *cmd, const char *in, size_t inlen, char **out,
    int *status, char *errout, size_t errlen, struct sbx_err *e);

/* Copy the regular files of local_dir (recursively, modes kept; symlinks are
 * followed) to remote_dir, which must not exist, over SFTP. */
int ssh_upload_dir(struct ssh_conn *c, const char *local_dir, const char *remote_dir,
    struct sbx_err *e);

/* Read the regular file path on the host from offset off: up to max bytes into
 * buf, *got how many, *size the file's size then (max 0: only the size).  Never
 * through a symlink: path is lstat'ed first and refused (SBX_EDENIED) unless a
 * regular file, and the opened file must have the same owner, group and mode as
 * what was lstat'ed.  SBX_ENOTFOUND when it does not exist. */
int ssh_read_file(struct ssh_conn *c, const char *path, uint64_t off, char *buf, size_t max,
    size_t *got, uint64_t *size, struct sbx_err *e);

/* A local unix socket (path in *local, caller frees) whose connections this
 * process relays over the session to the unix socket remote_path on the host
 * (direct-streamlocal), while the process lives.  key names the relay: the
 * same key gives the same socket. */
int ssh_relay(struct ssh_conn *c, const char *key, const char *remote_path, char **local,
    struct sbx_err *e);

#endif
