/* struct sbx_err helpers. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/err.h"

static int __attribute__((format(printf, 5, 0)))
sbx_verror(struct sbx_err *e, enum sbx_errcode code, const char *hint, int err,
    const char *fmt, va_list ap)
{
	if (e == NULL)
		return -1;
	e->code = code;
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	if (err) {
		size_t n = strlen(e->msg);
		snprintf(e->msg + n, sizeof e->msg - n, ": %s", strerror(err));
	}
	snprintf(e->hint, sizeof e->hint, "%s", hint ? hint : "");
	return -1;
}

int
sbx_error(struct sbx_err *e, enum sbx_errcode code, const char *hint, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sbx_verror(e, code, hint, 0, fmt, ap);
	va_end(ap);
	return -1;
}

int
sbx_error_errno(struct sbx_err *e, enum sbx_errcode code, const char *hint,
    const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	sbx_verror(e, code, hint, err, fmt, ap);
	va_end(ap);
	errno = err;
	return -1;
}

void
sbx_err_clear(struct sbx_err *e)
{
	e->code = SBX_OK;
	e->msg[0] = e->hint[0] = '\0';
}

const char *
sbx_errcode_name(enum sbx_errcode code)
{
	static const char *const names[] = {
		[SBX_OK] = "ok", [SBX_EINVAL] = "invalid", [SBX_ENOTFOUND] = "not_found",
		[SBX_ESTATE] = "wrong_state", [SBX_EUNSUPPORTED] = "unsupported",
		[SBX_EBACKEND] = "backend", [SBX_EAGENT] = "agent", [SBX_ETIMEOUT] = "timeout",
		[SBX_EDENIED] = "denied", [SBX_EIO] = "io", [SBX_EINTERNAL] = "internal",
	};
	return (unsigned)code < sizeof names / sizeof names[0] ? names[code] : "internal";
}

int
sbx_err_exit_status(const struct sbx_err *e)
{
	return e->code == SBX_EINVAL || e->code == SBX_ENOTFOUND ? 2 : 1;
}
