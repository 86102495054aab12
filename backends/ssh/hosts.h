/* Remote hosts (backends/ssh/hosts.c): the list in CONFIG/hosts.json that `sbxtop host`
 * edits, what each host says about itself, the agent bundle kept on each, and the
 * choice of a host for `create --host auto`.  The ssh backend and the CLI's host
 * command call these. */
#ifndef SBX_HOSTS_H
#define SBX_HOSTS_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "backends/backend.h"
#include "lib/err.h"
#include "backends/ssh/ssh.h"

struct host {
	char	*name;
	char	*user;
	char	*addr;
	int	 port;
	char	*identity;	/* NULL: ssh-agent, then ~/.ssh/id_* */
	int	 max_sandboxes;	/* 0: no limit */
};

void host_free(struct host *h);
void hosts_free(struct host *v, size_t n);

/* Parse ssh://USER@HOST[:PORT] into h (user, addr, port). */
int hosts_parse_url(const char *url, struct host *h, struct sbx_err *e);
/* Connect to h (checking its host key; accept_new records an unknown one), and
 * store it; SBX_EINVAL when the name is taken. */
int hosts_add(const struct host *h, int accept_new, struct sbx_err *e);
struct registry;
/* Remove host name; refused while r records sandboxes there. */
int hosts_rm(const struct registry *r, const char *name, struct sbx_err *e);
/* The host called name (caller frees with host_free); SBX_ENOTFOUND otherwise. */
struct host *hosts_get(const char *name, struct sbx_err *e);
/* Every host, in the order added. */
int hosts_list(struct host **out, size_t *n, struct sbx_err *e);

/* The shared session to h. */
struct ssh_conn *hosts_connect(const struct host *h, int accept_new, struct sbx_err *e);
/* Facts for `host ls`: {reachable, error?, kernel, backends, sandboxes,
 * mem_free_mib, disk_free_mib} (never fails: an unreachable host says why). */
cJSON *hosts_probe(const struct host *h);
/* The ns doctor run on the host, reported through report. */
int hosts_doctor(const struct host *h, check_fn report, void *arg, struct sbx_err *e);
/* The agent bundle (with the launcher) on the host, copied over SFTP into
 * ~/.cache/sbxtop/bundle-HASH when the host has no bundle of this hash;
 * *remote gets its directory there (caller frees). */
int hosts_bundle(struct ssh_conn *c, const struct host *h, char **remote, struct sbx_err *e);
/* Run the launcher verb on h with the JSON in (may be NULL): *out gets its
 * answer (caller frees); its {"error"} becomes e, naming the host. */
int hosts_launch(const struct host *h, const char *verb, const cJSON *in, cJSON **out,
    struct sbx_err *e);
/* The host with the most headroom (free memory, sandboxes r records there under
 * its maximum), for --host auto; *name caller frees. */
int hosts_pick(const struct registry *r, char **name, struct sbx_err *e);
/* How many of r's sandboxes (not terminated) run on host name. */
int hosts_sandbox_count(const struct registry *r, const char *name);

/* The `sbxtop host` verbs (ssh-admin.c): struct backend's verbs. */
extern backend_verb_fn *const ssh_verbs[BACKEND_VERBS];

#endif
