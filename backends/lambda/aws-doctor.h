/* `sbxtop doctor --backend lambda`: read-only checks of what a create (and a
 * rebuild of the image) will need: the credentials and where they came from,
 * the region, the identity, the endpoint, the MicroVMs there, the image and its
 * active version, and the bucket and build role that version was built from
 * (those `sbxtop setup aws` made). */
#ifndef SBX_AWS_DOCTOR_H
#define SBX_AWS_DOCTOR_H

#include "backends/backend.h"

/* image may be NULL (not configured); region and endpoint NULL: the usual chains. */
void aws_doctor(const char *image, const char *image_version, const char *region,
    const char *endpoint, check_fn report, void *arg);

#endif
