/* Fault injection for tests: each step of an operation that a crash or a
 * failed system call could interrupt calls fault_point with its name
 * ("create.ns.clone").  Inert unless the environment asks:
 *
 *   SBXTOP_FAULT=POINT[:N][:ACTION]   the Nth time (1: the default) this process
 *                                     reaches POINT, ACTION: kill (the default:
 *                                     SIGKILL to this process, as a crash) or
 *                                     fail (the step fails, as if its system
 *                                     call had: EIO)
 *   SBXTOP_FAULT_TRACE=FILE           append every point reached to FILE, one
 *                                     name a line (how a test learns the steps)
 *
 * The variables are read once, at the first point; with neither set a point
 * costs one test of a flag. */
#ifndef SBX_FAULT_H
#define SBX_FAULT_H

#include "lib/err.h"

/* 0, or -1 with e filled (and errno EIO) when the point is asked to fail;
 * does not return when it is asked to kill. */
int fault_point(const char *name, struct sbx_err *e);
/* Read the environment now (before a clone whose child must not). */
void fault_init(void);

#endif
