/* Errors that carry context: a code, a message, and a hint that tells the human or
 * the agent exactly what to do next.  Fallible functions return < 0 and fill the
 * struct sbx_err their caller owns (crun's libcrun_error_t, plus the hint). */
#ifndef SBX_ERR_H
#define SBX_ERR_H

enum sbx_errcode {
	SBX_OK = 0,
	SBX_EINVAL,		/* bad input: a flag, a field, a value out of range */
	SBX_ENOTFOUND,		/* no such sandbox, file, image, exec */
	SBX_ESTATE,		/* the sandbox is in the wrong state for this */
	SBX_EUNSUPPORTED,	/* this backend or host cannot do it */
	SBX_EBACKEND,		/* the backend failed (namespaces, qemu, AWS) */
	SBX_EAGENT,		/* the agent failed or could not be reached */
	SBX_ETIMEOUT,
	SBX_EDENIED,		/* refused: policy, permissions, an operator */
	SBX_EIO,		/* local files: registry, state directories, disk */
	SBX_EINTERNAL,
};

struct sbx_err {
	enum sbx_errcode code;
	char		 msg[512];
	char		 hint[256];
};

/* Fill e (when not NULL) and return -1.  hint may be NULL. */
int sbx_error(struct sbx_err *e, enum sbx_errcode code, const char *hint,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same, with ": strerror(errno)" appended to the message. */
int sbx_error_errno(struct sbx_err *e, enum sbx_errcode code, const char *hint,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void sbx_err_clear(struct sbx_err *e);
/* A stable lower-case name for the code ("not_found", "invalid", ...). */
const char *sbx_errcode_name(enum sbx_errcode code);
/* The CLI's exit status for an error: 2 for bad input and unknown things, else 1. */
int sbx_err_exit_status(const struct sbx_err *e);

#endif
