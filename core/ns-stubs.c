/* STUBS, to be deleted at merge: weak stand-ins for the core/ns.h functions that
 * ns-harden.c, ns-cgroup.c, ns-net.c and the doctor checks provide (written in
 * parallel).  Each does nothing and reports success, or "unsupported" where the
 * caller has a fallback.  The real definitions override these at link time. */
#include "core/ns.h"

#define WEAK __attribute__((weak))

WEAK int ns_net_loopback_up(struct sbx_err *e) { (void)e; return 0; }
WEAK int ns_rlimits_apply(const struct sbx_limits *l, int pids_in_cgroup, struct sbx_err *e)
{ (void)l; (void)pids_in_cgroup; (void)e; return 0; }
WEAK int ns_caps_drop(struct sbx_err *e) { (void)e; return 0; }
WEAK int ns_seccomp_apply(struct sbx_err *e) { (void)e; return 0; }

WEAK int
ns_cgroup_create(const char *id, const struct sbx_limits *l, cJSON **state, char **note,
    struct sbx_err *e)
{
	(void)id; (void)l; (void)e;
	*state = NULL;
	*note = NULL;
	return 0;
}
WEAK int ns_cgroup_attach(const cJSON *state, pid_t pid, struct sbx_err *e)
{ (void)state; (void)pid; (void)e; return 0; }
WEAK int ns_cgroup_freeze(const cJSON *state, int frozen, struct sbx_err *e)
{ (void)state; (void)frozen; return sbx_error(e, SBX_EUNSUPPORTED, NULL, "no cgroup freezer (stub)"); }
WEAK int ns_cgroup_frozen(const cJSON *state) { (void)state; return -1; }
WEAK int ns_cgroup_destroy(const cJSON *state, struct sbx_err *e) { (void)state; (void)e; return 0; }

WEAK int ns_net_egress_start(pid_t pid, pid_t *helper, struct sbx_err *e)
{
	(void)pid;
	*helper = 0;
	return sbx_error(e, SBX_EUNSUPPORTED, "use --network none", "network egress is not built yet (stub)");
}
WEAK void ns_net_egress_stop(pid_t helper) { (void)helper; }
WEAK const char *ns_net_egress_helper(void) { return NULL; }
WEAK void ns_doctor(check_fn report, void *arg) { (void)report; (void)arg; }
