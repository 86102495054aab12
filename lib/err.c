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
	e->reason = SBX_R_NONE;
	e->tool_hint[0] = '\0';
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

int
sbx_error_reason(struct sbx_err *e, enum sbx_errcode code, enum sbx_reason reason,
    const char *hint, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sbx_verror(e, code, hint, 0, fmt, ap);
	va_end(ap);
	if (e != NULL)
		e->reason = reason;
	return -1;
}

void
sbx_err_clear(struct sbx_err *e)
{
	e->code = SBX_OK;
	e->reason = SBX_R_NONE;
	e->msg[0] = e->hint[0] = e->tool_hint[0] = '\0';
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

enum sbx_errcode
sbx_errcode_by_name(const char *name)
{
	for (int c = SBX_OK; c <= SBX_EINTERNAL; c++)
		if (name != NULL && strcmp(sbx_errcode_name((enum sbx_errcode)c), name) == 0)
			return (enum sbx_errcode)c;
	return SBX_EINTERNAL;
}

/* These names are on the wire (the core server's errors, the agent's "error"
 * field): add new ones, never rename. */
static const char *const reason_names[SBX_R_COUNT] = {
	[SBX_R_NONE] = "", [SBX_R_UNKNOWN_SANDBOX] = "unknown_sandbox",
	[SBX_R_AMBIGUOUS] = "ambiguous", [SBX_R_SUSPENDED] = "suspended",
	[SBX_R_GONE] = "gone", [SBX_R_NOT_RUNNING] = "not_running",
	[SBX_R_NOT_SUSPENDED] = "not_suspended", [SBX_R_NAME_TAKEN] = "name_taken",
	[SBX_R_NOT_FOUND] = "not_found", [SBX_R_IS_DIR] = "is_a_directory",
	[SBX_R_NOT_DIR] = "not_a_directory", [SBX_R_NOT_EMPTY] = "not_empty",
	[SBX_R_NOT_TEXT] = "not_text", [SBX_R_BAD_BASE64] = "bad_base64",
	[SBX_R_NO_SPACE] = "no_space", [SBX_R_NO_SEED] = "no_seed",
	[SBX_R_UNTRUSTED] = "untrusted_certificate", [SBX_R_EXEC_FAILED] = "exec_failed",
	[SBX_R_SHA256_MISMATCH] = "sha256_mismatch",
};

const char *
sbx_reason_name(enum sbx_reason reason)
{
	return (unsigned)reason < SBX_R_COUNT ? reason_names[reason] : "";
}

enum sbx_reason
sbx_reason_by_name(const char *name)
{
	if (name == NULL || name[0] == '\0')
		return SBX_R_NONE;
	for (int r = SBX_R_NONE + 1; r < SBX_R_COUNT; r++)
		if (strcmp(reason_names[r], name) == 0)
			return (enum sbx_reason)r;
	return SBX_R_NONE;
}

int
sbx_err_exit_status(const struct sbx_err *e)
{
	return e->code == SBX_EINVAL || e->code == SBX_ENOTFOUND ? 2 : 1;
}
