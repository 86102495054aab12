/* Archives streamed between the host and a sandbox's agent, for core-copy.c.
 *
 * Nothing is spooled: the tar is produced by a thread as the request body is
 * sent, and extracted by a thread as the response arrives, with the sha256 of
 * the bytes on the wire computed on the way and checked at the end (a trailer
 * in each direction).  What comes out of a sandbox is extracted into a staging
 * directory beside the destination and moved into place only once the whole
 * archive has arrived intact, so a failure leaves nothing behind. */
#ifndef SBX_COPY_IO_H
#define SBX_COPY_IO_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "core/client/agentc.h"
#include "core/core.h"
#include "lib/err.h"

struct copy_stats {
	uint64_t	 files, bytes;	/* regular files and their bytes */
	char		 sha256[65];	/* of the archive (FETCH_FILE: of the file) */
};

enum copy_format { COPY_TAR, COPY_GZIP, COPY_ZSTD };

/* How archives to and from s travel: plain tar to a sandbox on this machine;
 * compressed where the link is slow (remote hosts, Lambda): zstd when the agent
 * says it has it (/health), gzip for older agents. */
enum copy_format copy_format(struct agentc *a, const struct sandbox *s);
/* The agent's format query for f: "tar", "tar.gz", "tar.zst". */
const char *copy_format_name(enum copy_format f);

/* POST the archive of the host entry dfd/name (a file, or a directory whose
 * contents are archived; named arch, or "" for the contents of a directory) to
 * the agent's upload route url, skipping the names in exclude (may be NULL).
 * *ans gets the agent's answer.  The agent's sha256 of what it received must be
 * ours; an agent that cannot check the trailer is checked here. */
int copy_send(struct agentc *a, const char *url, enum copy_format f, int dfd,
    const char *name,
    const char *arch, const char *const *exclude, struct copy_stats *st, cJSON **ans,
    struct sbx_err *e);

enum copy_fetch_mode {
	FETCH_TREE,	/* dest is a directory: made when missing, merged into otherwise */
	FETCH_FILE,	/* the archive holds one file, which becomes dest */
};

/* GET the agent's archive at url and put what it holds at dest (see the modes).
 * what names the source in messages; progress (may be NULL) sees the bytes
 * received. */
int copy_fetch(struct agentc *a, const char *url, const char *what, const char *dest,
    enum copy_fetch_mode mode, core_progress_fn progress, void *parg,
    struct copy_stats *st, struct sbx_err *e);

#endif
