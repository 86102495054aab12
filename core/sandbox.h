/* The sandbox record: what the registry stores and every front end shows. */
#ifndef SBX_SANDBOX_H
#define SBX_SANDBOX_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "lib/err.h"

enum sbx_state {
	SBX_CREATING, SBX_RUNNING, SBX_SUSPENDED, SBX_STOPPING, SBX_TERMINATED, SBX_ERROR,
	/* Its host (ssh) does not answer: not known to be gone, asked again later. */
	SBX_UNREACHABLE,
};

struct sbx_limits {
	int64_t	memory_mib;	/* 0: none */
	double	cpus;		/* 0: none */
	int64_t	pids;		/* 0: none */
	int64_t	disk_mib;	/* 0: none */
};

struct sandbox {
	char		 id[32];		/* "sbx-7f3a9c" */
	char		*name;
	char		*backend;		/* "ns", "qemu", "lambda", "ssh" */
	char		*host;			/* the remote host it runs on (ssh), or NULL */
	char		*image;			/* NULL: the backend's default; a directory,
						 * or an OCI image's canonical reference */
	char		*image_id;		/* that image's manifest digest, or NULL */
	cJSON		*image_spec;		/* at create only, never stored: the OCI
						 * image's layer directories (top first), env,
						 * user and workdir (core/core-image.c) */
	enum sbx_state	 state;
	char		*state_reason;		/* human-readable, may be NULL */
	int64_t		 created_at;		/* wall clock, ms */
	int64_t		 expires_at;		/* wall clock, ms; 0 none */
	int64_t		 max_duration_s;
	int64_t		 idle_s;		/* 0: no idle policy */
	int64_t		 idle_suspend_s;	/* 0: never suspended for idleness */
	struct sbx_limits limits;
	char		*limits_note;		/* limits asked for but not enforced, and why */
	char		*network;		/* "none", "egress" or "rules" */
	cJSON		*net;			/* rules: {allow, deny, ask, ask_timeout_s,
						 * grants, limit} (core/net.h), or NULL */
	char		*owner;			/* who created it: "cli", an MCP client name */
	char		*api_key;		/* the id of the HTTP listener's API key it
						 * was made with (core_act_for), or NULL */
	char		*pool;			/* a warm pool's member, not yet claimed: its
						 * profile (core/core-pool.c); else NULL */
	char		*from_pool;		/* claimed from that pool's profile, or NULL */
	char		*agent_endpoint;	/* "unix:/path/agent.sock" or "https://..." */
	char		*agent_secret;
	cJSON		*agent_headers;		/* extra headers for the agent, or NULL */
	cJSON		*env;			/* object of strings given at create, or NULL */
	cJSON		*backend_data;		/* backend-private, or NULL */
	cJSON		*forwards;		/* array of port forward records (core/core-forward.c
						 * owns their shape and every change), or NULL */
	cJSON		*usage;			/* live use (core/core-usage.c fills it in
						 * listings; never stored), or NULL */
};

/* The one rule for ids, which name directories and appear in messages: 1 to 31
 * lowercase letters, digits and '-', not starting with '-' ("sbx-7f3a9c"). */
int sandbox_id_valid(const char *id);
struct sandbox *sandbox_new(void);
void sandbox_free(struct sandbox *s);
/* A fresh unique-looking id "sbx-" + 6 hex digits from getrandom. */
void sandbox_new_id(char *out, size_t len);
/* A fresh agent secret: 256 bits from getrandom as 64 hex digits; caller frees. */
char *sandbox_new_secret(void);

const char *sbx_state_name(enum sbx_state st);
int sbx_state_parse(const char *name, enum sbx_state *out);
/* Why a sandbox in state st cannot do something: SBX_R_SUSPENDED, SBX_R_GONE
 * (terminated or error), else otherwise. */
enum sbx_reason sbx_state_reason(enum sbx_state st, enum sbx_reason otherwise);

/* JSON forms.  with_secrets adds agent_secret and agent_headers (registry only). */
cJSON *sandbox_to_json(const struct sandbox *s, int with_secrets);

struct buf;
/* "3h41m", "5m03s", "12s" for a span in seconds (negative: "-")
 * (sandbox-text.c). */
void sandbox_span(int64_t s, char *buf, size_t len);
/* s as `sbxtop status` shows it, "label:    value" lines appended to out,
 * what a sandbox could have written with its control characters escaped;
 * with asked, the agent line says whether health (its /health, or NULL)
 * came. */
void sandbox_describe(const struct sandbox *s, int asked, const cJSON *health, int64_t now,
    struct buf *out);
struct sandbox *sandbox_from_json(const cJSON *o, struct sbx_err *e);

/* The extra headers every request to s's agent carries (agent_headers: a
 * backend's proxy token, say) as "Name: value\r\n" lines in out, leaving out any
 * that could break a request head; an error when they do not fit in len. */
int sandbox_agent_header_lines(const struct sandbox *s, char *out, size_t len,
    struct sbx_err *e);

/* Open the which ("agent", "console") log of a sandbox at path for reading, as
 * open_regular_nofollow does (never through a link the sandbox put there); -1
 * with e saying what to do. */
int sandbox_log_open(const char *path, const char *which, struct sbx_err *e);

/* A deep copy of a record. */
struct sandbox *sandbox_dup(const struct sandbox *s);

#endif
