/* Stand-ins for core/client.c until the core server is merged: weak
 * definitions that say it is not built, so the console links and runs
 * standalone.  Delete this file when core/client.c lands. */
#include "core/client.h"

__attribute__((weak)) struct client *
client_connect(const char *kind, int autostart, struct sbx_err *e)
{
	sbx_error(e, SBX_EUNSUPPORTED, "run `sbxtop --standalone`",
	    "the core server is not built yet");
	return NULL;
}

__attribute__((weak)) void
client_close(struct client *c)
{
}

__attribute__((weak)) int
client_call(struct client *c, const char *method, cJSON *params, cJSON **result,
    struct sbx_err *e)
{
	return sbx_error(e, SBX_EUNSUPPORTED, NULL, "the core server is not built yet");
}

__attribute__((weak)) int
client_subscribe(struct client *c, uint64_t from, client_event_fn fn, void *arg,
    struct sbx_err *e)
{
	return sbx_error(e, SBX_EUNSUPPORTED, NULL, "the core server is not built yet");
}

__attribute__((weak)) void
client_on_disconnect(struct client *c, void (*fn)(void *arg), void *arg)
{
}
