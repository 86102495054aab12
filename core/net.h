/* Network policy of sandboxes under `--network rules` (docs/network.md): the
 * core functions front ends call (core-net.c), the network log (net/log.c) and
 * the proxy (net/proxy.c).
 *
 * Every sandbox with rules has a directory STATE/net/ID (0700, on the host,
 * out of the sandbox's reach) holding
 *   policy.json   what the proxy enforces, copied from the record on each change
 *   net.log       one JSON object a line: connections and asks (net.log.1 before)
 *   counts.json   totals, rewritten by the proxy after each connection
 *   proxy.pid     the proxy's pid
 *   ask/REQ.json  a request held for the operator; ask/REQ.answer its answer
 * so the proxy (a process of its own that outlives the command that made the
 * sandbox) and the commands that change or answer it need no connection to
 * each other. */
#ifndef SBX_NET_H
#define SBX_NET_H

#include <stdint.h>
#include <sys/types.h>
#include <cjson/cJSON.h>

#include "core/core.h"
#include "lib/err.h"

/* Where the proxy listens inside the sandbox. */
#define NET_PROXY_PORT 3128

/* --- for front ends ----------------------------------------------------- */

/* The policy, the proxy, the counts, what waits for an answer and the last
 * connections (up to recent) of sandbox key: {id, network, policy, proxy:{pid,
 * running}, counts, pending:[...], recent:[...]}. */
int core_net_show(struct core *c, const char *key, int recent, cJSON **out,
    struct sbx_err *e);
/* verb "allow" or "deny" adds rule (moved from the other list when there),
 * "remove" drops it from both; the running proxy applies it to the next
 * connection.  Logs it (net.policy).  By the operator only: no MCP tool calls it. */
int core_net_change(struct core *c, const char *key, const char *verb, const char *rule,
    struct sbx_err *e);
/* Each entry of the log of sandbox key in turn to entry (which returns < 0 to
 * stop: the reader went away); with follow, go on with new ones until the
 * sandbox stops or *stop.  The entries hold what the sandbox sent (hosts,
 * reasons): a front end escapes them for a terminal. */
int core_net_log(struct core *c, const char *key, int follow,
    int (*entry)(void *arg, const cJSON *o), void *arg, volatile int *stop, struct sbx_err *e);
/* Requests waiting for the operator, of sandbox key or (NULL) of every
 * sandbox: an array of {req, sandbox, kind ("connection" or "request"), host,
 * port, reason?, origin?, time_ms, expires_ms}. */
int core_net_pending(struct core *c, const char *key, cJSON **out, struct sbx_err *e);
/* Answer request req of sandbox key: "once" (this connection; a request made
 * with core_net_request: ten minutes), "always" (an allow entry for its host
 * and port, added to the policy) or "deny".  Logs it (net.decided). */
int core_net_decide(struct core *c, const char *key, const char *req, const char *answer,
    const char *by, struct sbx_err *e);
/* An agent asks ahead for destination dest ("host:port" or "host") with a
 * reason: answered at once when the policy already allows it, refused at once
 * when it is denied or beyond the configured agent limit, else held for the
 * operator like a connection (net.ask) until answered or the ask timeout.
 * *out: {verdict: "allowed"|"denied", rule, asked: bool, message}. */
int core_net_request(struct core *c, const char *key, const char *dest, const char *reason,
    const char *origin, int (*cancelled)(void *), void *arg, cJSON **out,
    struct sbx_err *e);

/* Events (core_events_emit), for the console's Network tab:
 *   net.connection  {host, addr, port, kind, verdict, rule, up, down, ms, error?}
 *   net.ask         {req, kind, host, port, reason?, origin?, expires_ms}
 *   net.decided     {req, answer, by}
 *   net.policy      {allow, deny, ask}
 * All four are lines of the sandboxes' logs first (whichever process wrote
 * them: the proxy, a CLI command, the core server) and become events in every
 * core that has subscribers, through a watcher thread the first subscriber
 * starts (core_net_watch: net_watch with a hook that emits them), about 200 ms
 * after they were written. */
void core_net_watch(struct core *c);
void core_net_watch_stop(struct core *c);

/* --- for core.c --------------------------------------------------------- */

/* At create: resolve the policy from o->net and the configuration into
 * s->network and s->net (rules), with the agent limit when owner is an agent,
 * and put the proxy variables in s->env. */
int core_net_prepare(struct core *c, const struct core_create_opts *o, struct sandbox *s,
    struct sbx_err *e);
/* After the backend made s: start its proxy (rules only; nothing otherwise). */
int core_net_start(struct core *c, struct sandbox *s, struct sbx_err *e);
/* Once s is recorded: put its CA (secrets) where its programs look. */
void core_net_ready(struct core *c, const struct sandbox *s);
/* At destroy: stop the proxy and remove STATE/net/ID. */
void core_net_forget(const char *id);

/* --- secrets (net/secret.c): CONFIG/sbxtop/secrets/NAME.json, 0600 --------- */

/* The header a secret's value goes into when its store names none. */
#define NET_SECRET_HEADER "Authorization: Bearer {}"
/* Store secret name (an environment variable's name) bound to host, with the
 * header its value goes into ("X-Api-Key: {}"; NULL: NET_SECRET_HEADER). */
int net_secret_set(const char *name, const char *host, const char *header,
    const char *value, struct sbx_err *e);
/* {name, host, header?, value? (with_value)}; caller frees; NULL with e. */
cJSON *net_secret_get(const char *name, int with_value, struct sbx_err *e);
/* Every stored secret without its value. */
int net_secret_list(cJSON **out, struct sbx_err *e);
int net_secret_rm(const char *name, struct sbx_err *e);
/* Make sandbox id's CA (STATE/net/ID/ca.key, ca.pem); *pem its certificate. */
int net_ca_make(const char *id, char **pem, struct sbx_err *e);
/* The proxy's TLS termination for a host secrets are bound to: TLS with the
 * sandbox on cfd (a certificate for host from the CA in ca_dir), TLS to the
 * upstream on ufd (verified against the system's CAs, or SBXTOP_NET_CA_FILE),
 * each secret's header set with its value (the sandbox's own of that name
 * dropped; the value nowhere else), the answer asked for uncompressed and
 * scrubbed of every value on its way back (net/scrub.h), one request per
 * connection.  secrets: [{placeholder, header?, value}]. */
int net_tls_intercept(int cfd, int ufd, const char *host, const char *ca_dir,
    const cJSON *secrets, uint64_t *up, uint64_t *down, char *err, size_t errlen);

/* --- shared by core-net.c, net/log.c and net/proxy.c ----------------------- */

/* STATE/net/ID (created when mk), caller frees; NULL with e. */
char *net_dir(const char *id, int mk, struct sbx_err *e);
/* The totals of id's proxy (counts.json: {allowed, denied, asked, bytes_up,
 * bytes_down}), or NULL when it has none yet; caller frees. */
cJSON *net_counts(const char *id);
/* Write the policy file of id from the record's net object (tmp + rename). */
int net_policy_write(const char *id, const cJSON *net, struct sbx_err *e);
/* Append one JSON line to id's log (taken: o is freed), rotating it to
 * net.log.1 beyond NET_LOG_MAX bytes. */
#define NET_LOG_MAX (1024 * 1024)
void net_log_append(const char *id, cJSON *o);
/* One log entry as a line of text (no newline) in buf. */
void net_log_format(const cJSON *o, char *buf, size_t len);
/* How net/ reports upward without calling the core: the watcher hands each
 * new entry of a sandbox's log to fn, with the event's type (net.connection,
 * net.ask, net.decided, net.policy), the sandbox's id and the entry (taken). */
typedef void (*net_event_fn)(void *arg, const char *type, const char *id, cJSON *data);
/* Start the watcher of arg (once per arg: a second call does nothing): a
 * thread that reads every sandbox's new log lines into fn. */
void net_watch(net_event_fn fn, void *arg);
/* Stop arg's watcher and wait for its thread. */
void net_watch_stop(void *arg);
/* 1 when addr (any spelling: net_addr_normalize) is one of this host's: an
 * address of one of its interfaces (getifaddrs, asked each time), or
 * loopback, link-local or unspecified (net_addr_hostlocal). */
int net_addr_own(int family, const uint8_t addr[16]);
/* The proxy process: serve lfd (the listener in the sandbox) for sandbox id
 * until init exits.  Does not return. */
void netproxy_main(const char *id, pid_t init, int lfd) __attribute__((noreturn));
/* Start the proxy for sandbox s on listener lfd (taken) as a process of its
 * own; *pid gets it. */
int netproxy_spawn(const char *id, pid_t init, int lfd, pid_t *pid, struct sbx_err *e);

#endif
