/* The agent client: HTTP to a sandbox's sbxtop-agent over libcurl, whether the
 * endpoint is a unix socket ("unix:/path/agent.sock") or a URL ("https://...")
 * with extra headers (the AWS proxy's token).  Every request carries the
 * sandbox secret.  Agent errors become struct sbx_err with the agent's message
 * and a hint; an agent that is not there becomes SBX_EAGENT.  Only idempotent
 * requests (GET) are retried, with backoff. */
#ifndef SBX_AGENTC_H
#define SBX_AGENTC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cjson/cJSON.h>

#include "lib/err.h"
#include "core/sandbox.h"

#define AGENTC_JSON_MAX		(160u << 20)	/* a JSON answer (64 MiB file as base64) */
#define AGENTC_LINE_MAX		(4u << 20)	/* one NDJSON line */
#define AGENTC_CONNECT_MS	5000

struct agentc;

/* The CA file (PEM) https agent endpoints are verified against from now on, in
 * this process (NULL or "": the system's store); the lambda backend sets it from
 * AWS_CA_BUNDLE.  Verification is never turned off. */
void agentc_set_ca_file(const char *path);
/* That file, or NULL; the string stays valid until the next agentc_set_ca_file. */
const char *agentc_ca_file(void);
/* The hint for an endpoint certificate that is not trusted (names AWS_CA_BUNDLE). */
extern const char agentc_untrusted_hint[];

/* A client for sandbox s (its endpoint, secret and headers are copied). */
struct agentc *agentc_new(const struct sandbox *s, struct sbx_err *e);
void agentc_free(struct agentc *a);
/* Name who makes the following requests (X-Sbx-Origin: "cli", "mcp", ...); characters
 * the agent does not take become '.' and it is cut at 32. */
void agentc_set_origin(struct agentc *a, const char *origin);
/* Mark the following requests as a watcher's (X-Sbx-Watch): looks that are no
 * activity, so the agent's idle policy goes on counting. */
void agentc_set_watch(struct agentc *a);
/* Called about once a second during every following request (and as bytes move)
 * with the bytes transferred so far; returning non-zero aborts the request (an
 * SBX_EIO "stopped" error).  fn NULL removes it. */
typedef int (*agentc_progress_fn)(void *arg, uint64_t down, uint64_t up);
void agentc_set_progress(struct agentc *a, agentc_progress_fn fn, void *arg);

/* method path with an optional JSON body; on a 2xx answer *out (may be NULL) gets
 * the parsed JSON (caller frees).  timeout_ms 0: none.  Returns the HTTP status,
 * or -1 with e (a non-2xx answer included). */
int agentc_call(struct agentc *a, const char *method, const char *path,
    const cJSON *body, int64_t timeout_ms, cJSON **out, struct sbx_err *e);

/* GET /health: 0 when the agent answers, its JSON in *out when out is given. */
int agentc_health(struct agentc *a, cJSON **out, struct sbx_err *e);

/* An NDJSON stream (Accept: application/x-ndjson): fn is called with each line,
 * parsed; fn returning < 0 stops the stream (fn fills e).  Lines longer than
 * AGENTC_LINE_MAX are an error.  Returns 0 at the end of the stream. */
typedef int (*agentc_line_fn)(const cJSON *line, void *arg, struct sbx_err *e);
int agentc_stream(struct agentc *a, const char *method, const char *path,
    const cJSON *body, agentc_line_fn fn, void *arg, struct sbx_err *e);

/* POST the size bytes read from fd (from its current offset) as the body of
 * path, with Content-Type ctype and optional extra header ("Name: value"). */
int agentc_upload_fd(struct agentc *a, const char *path, const char *ctype, int fd,
    uint64_t size, const char *extra_header, cJSON **out, struct sbx_err *e);

/* POST what is read from fd until its end (a pipe, say) as the chunked body of
 * path; trailer (may be NULL), called once the body has ended, gives the trailer
 * line "X-Content-Sha256: HEX" (or NULL to abort the request). */
typedef const char *(*agentc_trailer_fn)(void *arg);
int agentc_upload_stream(struct agentc *a, const char *path, const char *ctype, int fd,
    agentc_trailer_fn trailer, void *targ, cJSON **out, struct sbx_err *e);

/* GET path, handing the body to fn as it arrives (fn returning < 0 stops, with e
 * filled).  The X-Content-Sha256 header or trailer, when sent, is copied to
 * sha256 (else it is left ""). */
typedef int (*agentc_data_fn)(const char *data, size_t len, void *arg, struct sbx_err *e);
int agentc_download(struct agentc *a, const char *path, agentc_data_fn fn, void *arg,
    char sha256[65], struct sbx_err *e);

/* URL-escape s for a query string (caller frees). */
char *agentc_escape(const char *s);

/* Connecting to an agent's unix socket on the host.  The socket lies in a
 * directory the sandbox's root writes (the ns backend's run/, the sandbox's
 * /run/sbxtop), so the name may have been replaced by a link to another socket
 * of the host user: such a name is never followed. */
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
