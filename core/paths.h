/* Where this instance keeps things, from the XDG base directory variables, so two
 * instances with different XDG directories never see each other:
 *   state   $XDG_STATE_HOME/sbxtop   (~/.local/state/sbxtop)  registry, sandboxes, logs
 *   config  $XDG_CONFIG_HOME/sbxtop  (~/.config/sbxtop)       sbxtop.conf
 *   data    $XDG_DATA_HOME/sbxtop    (~/.local/share/sbxtop)  images
 *   cache   $XDG_CACHE_HOME/sbxtop   (~/.cache/sbxtop)        scratch files
 *   runtime $XDG_RUNTIME_DIR/sbxtop  (/run/user/UID/sbxtop, else /tmp/sbxtop-UID)
 *                                                             sockets
 * A relative XDG value is ignored, as the XDG specification says. */
#ifndef SBX_PATHS_H
#define SBX_PATHS_H

#include "lib/err.h"

enum paths_kind { PATHS_STATE, PATHS_CONFIG, PATHS_DATA, PATHS_CACHE, PATHS_RUNTIME };

/* The directory of kind k, not created; caller frees.  NULL with e when neither
 * the XDG variable nor a home directory is known. */
char *paths_dir(enum paths_kind k, struct sbx_err *e);
/* The same, created (with its parents) mode 0700 when missing.  A runtime
 * directory owned by another user, or one that is a symlink, is refused. */
char *paths_ensure(enum paths_kind k, struct sbx_err *e);
/* name inside the directory of kind k (created when create_dir); caller frees. */
char *paths_file(enum paths_kind k, const char *name, int create_dir, struct sbx_err *e);
/* The host directory a backend keeps sandbox id in: STATE/sandboxes/ID (not
 * created); caller frees. */
char *paths_sandbox_dir(const char *id, struct sbx_err *e);
/* The label of this state directory on this machine, 16 hex digits (a hash of
 * /etc/machine-id and the directory's real path): what the sandboxes it
 * records carry where a sweep finds them (their agents' --tag ID@LABEL), so
 * that gc takes no other state directory's. */
#define PATHS_LABEL_LEN 16
int paths_state_label(char out[PATHS_LABEL_LEN + 1], struct sbx_err *e);
/* The runtime directory in /tmp this process fell back to (XDG_RUNTIME_DIR unset
 * and no private /run/user/UID), or NULL; a warning was logged when it did. */
const char *paths_runtime_fallback(void);
/* Human name of a kind ("state", "config", ...). */
const char *paths_kind_name(enum paths_kind k);
/* $HOME when it is an absolute path, else NULL. */
const char *paths_home_env(void);
/* The user's home directory from the password database, NULL if none is
 * known (core/paths-passwd.c; the thin sbxtop execs the full one instead). */
const char *paths_passwd_home(void);
/* The agent bundle (made by `make agent-bundle`) that backends put in sandboxes:
 * SBXTOP_AGENT_BUNDLE, else next to this executable, else ../lib/sbxtop; caller
 * frees. */
char *paths_agent_bundle(struct sbx_err *e);
/* The command that gives the sbxtop-core at exe (its absolute path) an AppArmor
 * profile granting user namespaces: `sudo make apparmor` in its build tree,
 * apparmor_parser -r for an installed one; caller frees. */
char *paths_apparmor_fix(const char *exe);

#endif
