/* The few fields sbxtop reads from AWS's XML answers (IAM and STS, which speak
 * the Query protocol, and S3's errors and configurations): a small bounded
 * extractor, not an XML parser.  It finds an element by name and returns its
 * text with the five predefined entities and character references decoded;
 * markup inside the element, CDATA, or a value longer than the caller's buffer
 * is an error, never a truncated answer. */
#ifndef SBX_AWS_XML_H
#define SBX_AWS_XML_H

#include <stddef.h>

/* The text of the first element named tag in xml[0..len) (the input need not be
 * NUL-terminated), decoded, NUL-terminated in out (outsz > 0).  An empty element
 * (<tag/>) is "".  1 found, 0 no such element, -1 malformed or too long for out. */
int aws_xml_text(const char *xml, size_t len, const char *tag, char *out, size_t outsz);

/* The same, looking only inside the first element named parent. */
int aws_xml_text_in(const char *xml, size_t len, const char *parent, const char *tag,
    char *out, size_t outsz);

/* Decode %XX escapes (and '+' as a space when form) in place; -1 for a malformed
 * escape or one that decodes to NUL.  IAM answers carry policy documents so. */
int aws_pct_decode(char *s, int form);

#endif
