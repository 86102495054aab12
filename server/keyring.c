/* The HTTP listener's credentials (keyring.h): the token, then the API keys
 * of the store, then each key's rate limit, then the scope the route asks.
 * Windows are fixed, as Agent Sandbox's: a key's first request opens one of
 * key_rate_window seconds, and a request past its rateLimit in it is 429
 * with retryAfter the window's length (waiting that long always clears it). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/keys/keys.h"
#include "lib/log.h"
#include "lib/util.h"
#include "server/keyring.h"

#define WINDOWS_MAX	4096	/* keys with a window open; the oldest go first */

struct window {
	char	 id[KEY_ID_LEN + 1];
	int64_t	 start;		/* monotonic ms */
	int64_t	 count;
};

struct keyring {
	char			*token;
	struct keys_cache	*cache;
	int64_t			 window_ms;
	pthread_mutex_t		 mu;
	struct window		 w[WINDOWS_MAX];
	size_t			 n;
};

struct keyring *
keyring_new(const char *token, int64_t window_s)
{
	struct keyring *kr = xcalloc(1, sizeof *kr);

	kr->token = token ? xstrdup(token) : NULL;
	kr->cache = keys_cache_new();
	kr->window_ms = (window_s > 0 ? window_s : 60) * 1000;
	pthread_mutex_init(&kr->mu, NULL);
	return kr;
}

void
keyring_free(struct keyring *kr)
{
	if (kr == NULL)
		return;
	if (kr->token != NULL)
		explicit_bzero(kr->token, strlen(kr->token));
	free(kr->token);
	keys_cache_free(kr->cache);
	pthread_mutex_destroy(&kr->mu);
	free(kr);
}

/* One more request of key id, whose limit is limit: 0, or the seconds to
 * wait when it is over. */
static int
count(struct keyring *kr, const char *id, int64_t limit)
{
	int64_t now = now_ms();
	struct window *w = NULL, *oldest = NULL;
	int over;

	pthread_mutex_lock(&kr->mu);
	for (size_t i = 0; i < kr->n && w == NULL; i++) {
		if (strcmp(kr->w[i].id, id) == 0)
			w = &kr->w[i];
		else if (oldest == NULL || kr->w[i].start < oldest->start)
			oldest = &kr->w[i];
	}
	if (w == NULL) {
		w = kr->n < WINDOWS_MAX ? &kr->w[kr->n++] : oldest;
		snprintf(w->id, sizeof w->id, "%s", id);
		w->start = now;
		w->count = 0;
	}
	if (now - w->start >= kr->window_ms) {
		w->start = now;
		w->count = 0;
	}
	over = ++w->count > limit;
	pthread_mutex_unlock(&kr->mu);
	return over ? (int)(kr->window_ms / 1000) : 0;
}

static const char *
header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

void
keyring_admit(struct keyring *kr, struct MHD_Connection *conn, unsigned need,
    struct mcp_http_caller *who, struct mcp_http_refusal *no)
{
	static const char *const from_names[] = { "", "Authorization", "X-API-Key",
	    "the query string" };
	enum key_from from;
	const char *cred = key_credential(header(conn, "Authorization"),
	    header(conn, "X-API-Key"), MHD_lookup_connection_value(conn,
	    MHD_GET_ARGUMENT_KIND, "api_key"), &from);
	struct key_auth a;
	enum key_verdict v;
	int wait;

	memset(who, 0, sizeof *who);
	memset(no, 0, sizeof *no);
	if (kr->token == NULL || (cred != NULL && ct_streq(cred, kr->token))) {
		who->scopes = KEY_SCOPES_ALL;	/* the operator's */
	} else if (cred == NULL) {
		no->status = MHD_HTTP_UNAUTHORIZED;
		snprintf(no->message, sizeof no->message, "API key required");
		return;
	} else if ((v = keys_check(kr->cache, cred, wall_ms(), &a)) != KEY_VALID) {
		/* Which key it was, never what it was. */
		if (v == KEY_UNKNOWN)
			log_debug("http: an unknown API key (in %s)", from_names[from]);
		else
			log_info("http: refused API key %s ('%s'): %s", a.id, a.name,
			    v == KEY_REVOKED ? "revoked" : "expired");
		no->status = MHD_HTTP_UNAUTHORIZED;
		no->key_given = 1;
		snprintf(no->message, sizeof no->message, "Invalid API key");
		return;
	} else {
		snprintf(who->key_id, sizeof who->key_id, "%s", a.id);
		snprintf(who->key_name, sizeof who->key_name, "%s", a.name);
		who->scopes = a.scopes;
		if ((wait = count(kr, a.id, a.rate_limit)) > 0) {
			no->status = MHD_HTTP_TOO_MANY_REQUESTS;
			no->retry_after = wait;
			snprintf(no->message, sizeof no->message, "Rate limit exceeded");
			return;
		}
	}
	if (need != 0 && !(who->scopes & need)) {
		no->status = MHD_HTTP_FORBIDDEN;
		snprintf(no->message, sizeof no->message, "Missing required scope: %s",
		    key_scope_name(need) ? key_scope_name(need) : "?");
	}
}
