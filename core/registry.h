/* The registry: every sandbox this instance knows, in
 * $XDG_STATE_HOME/sbxtop/sandboxes.json (file 0600, directory 0700).
 * Reads take a shared flock on sandboxes.lock; every change is a transaction under
 * an exclusive one (read, change, write a temp file, fsync, rename), so any number
 * of processes can create and destroy at once without losing a record (the fsync
 * only when a record is of a sandbox that outlives this machine).  A corrupt
 * file is renamed aside (sandboxes.json.corrupt-TIME) with a warning naming both
 * paths, and the registry starts empty: never silently dropped. */
#ifndef SBX_REGISTRY_H
#define SBX_REGISTRY_H

#include <stddef.h>

#include "lib/err.h"
#include "core/sandbox.h"

struct registry;

/* A snapshot of the registry (read under a shared lock). */
struct registry *registry_load(struct sbx_err *e);
void registry_free(struct registry *r);
size_t registry_count(const struct registry *r);
/* The i-th record (owned by r). */
struct sandbox *registry_at(const struct registry *r, size_t i);
/* The record with exactly this id, a warm pool's members among them; NULL
 * when there is none. */
struct sandbox *registry_get(const struct registry *r, const char *id);
/* The record with id key, the only id starting with key, or the only one named
 * key; NULL with SBX_ENOTFOUND ("unknown sandbox 'x'") or SBX_EINVAL (ambiguous). */
struct sandbox *registry_find(const struct registry *r, const char *key, struct sbx_err *e);
/* Take ownership of s, replacing a record with the same id. */
void registry_put(struct registry *r, struct sandbox *s);
/* Drop the record with this id; 1 when there was one. */
int registry_remove(struct registry *r, const char *id);

/* Run fn on the current registry under the exclusive lock and, when it returns
 * 0, write the result atomically.  fn returning < 0 (with e filled) changes
 * nothing.  The return value is fn's (or -1 when reading or writing failed). */
typedef int (*registry_txn_fn)(struct registry *r, void *arg, struct sbx_err *e);
int registry_update(registry_txn_fn fn, void *arg, struct sbx_err *e);

/* Transactions for the common cases: store a copy of s; drop id. */
int registry_store(const struct sandbox *s, struct sbx_err *e);
int registry_delete(const char *id, struct sbx_err *e);


/* The registry file's path (caller frees). */
char *registry_path(struct sbx_err *e);

/* Remove the temporary files of writers that were killed mid-write (named by
 * the writer's pid: nobody else removes them), saying so in the log; how many. */
int registry_tidy(struct sbx_err *e);

#endif
