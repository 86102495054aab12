/* Errors that carry context: a code, a reason, a message, and hints that tell the
 * human or the agent exactly what to do next.  Fallible functions return < 0 and
 * fill the struct sbx_err their caller owns (crun's libcrun_error_t, plus the
 * hints).  Callers branch on the code and the reason, never on the message. */
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

/* What exactly went wrong, for callers that act on it (a front end choosing its
 * hint, a backend deciding to stop waiting).  SBX_R_NONE for everything else. */
enum sbx_reason {
	SBX_R_NONE = 0,
	SBX_R_UNKNOWN_SANDBOX,	/* no sandbox has that id, prefix or name */
	SBX_R_AMBIGUOUS,	/* an id prefix that matches several */
	SBX_R_SUSPENDED,	/* the sandbox is suspended */
	SBX_R_GONE,		/* the sandbox is terminated or in error */
	SBX_R_NOT_RUNNING,	/* only a running sandbox can do that */
	SBX_R_NOT_SUSPENDED,	/* only a suspended sandbox can do that */
	SBX_R_NAME_TAKEN,	/* another live sandbox has that name */
	SBX_R_NOT_FOUND,	/* a path, exec or object inside the sandbox */
	SBX_R_IS_DIR,		/* a directory where a file is wanted */
	SBX_R_NOT_DIR,		/* a file where a directory is wanted */
	SBX_R_NOT_EMPTY,	/* a non-empty directory to delete */
	SBX_R_NOT_TEXT,		/* content that is not UTF-8 text */
	SBX_R_BAD_BASE64,	/* content that is not valid base64 */
	SBX_R_NO_SPACE,		/* no space left (a disk, an image) */
	SBX_R_NO_SEED,		/* a qemu sandbox without a seed disk */
	SBX_R_UNTRUSTED,	/* a TLS certificate that is not trusted */
	SBX_R_EXEC_FAILED,	/* the sandbox could not start a command: its working
				 * directory, its shell or its user */
	SBX_R_SHA256_MISMATCH,	/* what arrived is not what was sent (its sha256) */
	SBX_R_COUNT
};

struct sbx_err {
	enum sbx_errcode code;
	enum sbx_reason	 reason;
	char		 msg[512];
	char		 hint[256];	/* for a person: `sbxtop ...` commands */
	char		 tool_hint[256];/* for an agent: MCP tool names (mcp/ fills it) */
};

/* Fill e (when not NULL) and return -1.  hint may be NULL. */
int sbx_error(struct sbx_err *e, enum sbx_errcode code, const char *hint,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same, with ": strerror(errno)" appended to the message. */
int sbx_error_errno(struct sbx_err *e, enum sbx_errcode code, const char *hint,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* sbx_error with a reason. */
int sbx_error_reason(struct sbx_err *e, enum sbx_errcode code, enum sbx_reason reason,
    const char *hint, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void sbx_err_clear(struct sbx_err *e);
/* A stable lower-case name for the code ("not_found", "invalid", ...). */
const char *sbx_errcode_name(enum sbx_errcode code);
/* The code of a name from sbx_errcode_name; SBX_EINTERNAL for any other. */
enum sbx_errcode sbx_errcode_by_name(const char *name);
/* A stable lower-case name for the reason ("unknown_sandbox", ...; "" for none). */
const char *sbx_reason_name(enum sbx_reason reason);
/* The reason of a name from sbx_reason_name; SBX_R_NONE for NULL or any other. */
enum sbx_reason sbx_reason_by_name(const char *name);
/* The CLI's exit status for an error: 2 for bad input and unknown things, else 1. */
int sbx_err_exit_status(const struct sbx_err *e);

#endif
