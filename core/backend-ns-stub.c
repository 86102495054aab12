/* STUB, to be deleted when core/backend-ns.c lands: a backend_ns whose every
 * operation says it is not built yet, so the core and the CLI link and their
 * tests can tell "no backend" apart from a failure. */
#include "core/backend.h"

#define NOT_YET(e) sbx_error(e, SBX_EUNSUPPORTED, "build a tree that has core/backend-ns.c", \
    "ns backend not built yet")

static int stub_create(struct sandbox *s, struct sbx_err *e) { return NOT_YET(e); }
static int stub_suspend(struct sandbox *s, struct sbx_err *e) { return NOT_YET(e); }
static int stub_resume(struct sandbox *s, struct sbx_err *e) { return NOT_YET(e); }
static int stub_destroy(struct sandbox *s, struct sbx_err *e) { return NOT_YET(e); }
static int stub_status(struct sandbox *s, struct sbx_err *e) { return NOT_YET(e); }

static char *
stub_log_path(const struct sandbox *s, const char *which, struct sbx_err *e)
{
	NOT_YET(e);
	return NULL;
}

static void
stub_doctor(check_fn report, void *arg)
{
	report(arg, CHECK_FAIL, "ns backend", "ns backend not built yet",
	    "build a tree that has core/backend-ns.c");
}

static int
stub_gc(char *const *known, size_t nknown, struct sbx_err *e)
{
	return 0;
}

const struct backend backend_ns = {
	.name = "ns",
	.description = "Linux namespaces (not built yet)",
	.create = stub_create,
	.suspend = stub_suspend,
	.resume = stub_resume,
	.destroy = stub_destroy,
	.status = stub_status,
	.log_path = stub_log_path,
	.doctor = stub_doctor,
	.gc = stub_gc,
};
