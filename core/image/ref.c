/* Image references as docker and podman read them (the distribution project's
 * grammar): [DOMAIN/]PATH[:TAG][@DIGEST], with docker.io and library/ filled in
 * the way every client does.  Untrusted input (an agent's argument): every
 * component is checked, and a bad one is named. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/image/image.h"

#define NAME_MAX_TOTAL	255

int
image_digest_valid(const char *s)
{
	if (s == NULL || strncmp(s, "sha256:", 7) != 0 || strlen(s) != 71)
		return 0;
	for (const char *p = s + 7; *p; p++)
		if (!isdigit((unsigned char)*p) && !(*p >= 'a' && *p <= 'f'))
			return 0;
	return 1;
}

int
image_is_path(const char *s)
{
	return s != NULL && (s[0] == '/' || s[0] == '.');
}

static int
lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* alpha-numeric (separator alpha-numeric)*, separator [_.] | __ | -+ */
static int
component_valid(const char *s, size_t n)
{
	size_t i = 0;

	if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return 0;
	while (i < n) {
		if (lower_alnum(s[i])) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < n && !lower_alnum(s[j]))
			j++;
		size_t len = j - i;
		const char *sep = s + i;
		int ok = (len == 1 && (*sep == '_' || *sep == '.' || *sep == '-')) ||
		    (len == 2 && sep[0] == '_' && sep[1] == '_') ||
		    (strspn(sep, "-") >= len);
		if (!ok)
			return 0;
		i = j;
	}
	return 1;
}

/* host[:port]: a DNS name, IPv4, or [IPv6]. */
static int
domain_valid(const char *s, size_t n)
{
	size_t hn = n;
	const char *colon;

	if (n == 0)
		return 0;
	if (s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (close == NULL)
			return 0;
		for (const char *p = s + 1; p < close; p++)
			if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
				return 0;
		hn = (size_t)(close - s) + 1;
		if (hn == n)
			return 1;
		if (s[hn] != ':')
			return 0;
	} else {
		colon = memchr(s, ':', n);
		hn = colon ? (size_t)(colon - s) : n;
		if (hn == 0)
			return 0;
		for (size_t i = 0; i < hn; i++) {
			char c = s[i];
			if (!isalnum((unsigned char)c) && c != '.' && c != '-')
				return 0;
		}
		if (s[0] == '.' || s[0] == '-' || s[hn - 1] == '.' || s[hn - 1] == '-')
			return 0;
		if (hn == n)
			return 1;
	}
	/* :port */
	if (n - hn < 2 || n - hn > 6)
		return 0;
	for (size_t i = hn + 1; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

static int
tag_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 128 || !(isalnum((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
			return 0;
	return 1;
}

int
image_ref_parse(const char *in, struct image_ref *r, struct sbx_err *e)
{
	char buf[600];
	char *name, *at, *slash, *colon;
	size_t n;
	static const char hint[] = "name an image as [REGISTRY/]NAME[:TAG][@sha256:DIGEST], "
	    "e.g. debian:12 or 127.0.0.1:5000/team/tool:1";

	memset(r, 0, sizeof *r);
	if (in == NULL || in[0] == '\0')
		return sbx_error(e, SBX_EINVAL, hint, "empty image reference");
	if (strlen(in) >= sizeof buf)
		return sbx_error(e, SBX_EINVAL, hint, "image reference is too long (%zu bytes)",
		    strlen(in));
	for (const char *p = in; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			return sbx_error(e, SBX_EINVAL, hint, "image reference '%.200s' holds a space "
			    "or a control or non-ASCII character", in);
	snprintf(buf, sizeof buf, "%s", in);
	name = buf;
	if ((at = strchr(name, '@')) != NULL) {
		*at++ = '\0';
		if (!image_digest_valid(at))
			return sbx_error(e, SBX_EINVAL, hint, "image reference '%.200s': '%.100s' is "
			    "not a sha256 digest (sha256: and 64 lowercase hex digits)", in, at);
		snprintf(r->digest, sizeof r->digest, "%s", at);
	}
	slash = strrchr(name, '/');
	colon = strrchr(name, ':');
	if (colon != NULL && (slash == NULL || colon > slash)) {
		*colon++ = '\0';
		if (!tag_valid(colon))
			return sbx_error(e, SBX_EINVAL, hint, "image reference '%.200s': tag '%.130s' "
			    "is not valid (letters, digits, '_', '.', '-'; at most 128)", in, colon);
		snprintf(r->tag, sizeof r->tag, "%s", colon);
	}
	/* The first component is a domain when it has a dot or a port, or is
	 * localhost, or has capitals (docker's own rule). */
	slash = strchr(name, '/');
	if (slash != NULL) {
		n = (size_t)(slash - name);
		int is_domain = memchr(name, '.', n) != NULL || memchr(name, ':', n) != NULL ||
		    (n == 9 && strncmp(name, "localhost", 9) == 0);
		for (size_t i = 0; i < n && !is_domain; i++)
			is_domain = isupper((unsigned char)name[i]);
		if (is_domain) {
			if (!domain_valid(name, n) || n >= sizeof r->domain)
				return sbx_error(e, SBX_EINVAL, hint, "image reference '%.200s': '%.*s' "
				    "is not a registry host[:port]", in, (int)(n > 200 ? 200 : n), name);
			memcpy(r->domain, name, n);
			name = slash + 1;
		}
	}
	if (r->domain[0] == '\0')
		snprintf(r->domain, sizeof r->domain, "docker.io");
	if (strcmp(r->domain, "index.docker.io") == 0) {
		/* Zeroed first: a parsed reference is compared as a whole. */
		memset(r->domain, 0, sizeof r->domain);
		snprintf(r->domain, sizeof r->domain, "docker.io");
	}
	if (name[0] == '\0')
		return sbx_error(e, SBX_EINVAL, hint, "image reference '%.200s' has no name", in);
	for (char *p = name, *q; *p; p = q + 1) {
		q = strchr(p, '/');
		n = q ? (size_t)(q - p) : strlen(p);
		if (!component_valid(p, n))
			return sbx_error(e, SBX_EINVAL, hint, "image reference '%.200s': '%.*s' is "
			    "not a valid name component (lowercase letters and digits, with '.', "
			    "'_', '__' or '-' between them)", in, (int)(n > 200 ? 200 : n), p);
		if (q == NULL)
			break;
	}
	n = strcmp(r->domain, "docker.io") == 0 && strchr(name, '/') == NULL ? 8 : 0;
	if (strlen(r->domain) + 1 + n + strlen(name) > NAME_MAX_TOTAL)
		return sbx_error(e, SBX_EINVAL, hint, "image reference '%.200s': the name is longer "
		    "than %d characters", in, NAME_MAX_TOTAL);
	/* Whole, never cut: the check above keeps "library/" and the name
	 * within the 255 bytes of the reference, and repo holds 256. */
	memcpy(r->repo, "library/", n);
	memcpy(r->repo + n, name, strlen(name) + 1);
	if (r->tag[0] == '\0' && r->digest[0] == '\0')
		snprintf(r->tag, sizeof r->tag, "latest");
	return 0;
}

void
image_ref_format(const struct image_ref *r, char *out, size_t len)
{
	snprintf(out, len, "%s/%s%s%s%s%s", r->domain, r->repo, r->tag[0] ? ":" : "", r->tag,
	    r->digest[0] ? "@" : "", r->digest);
}

const char *
image_ref_host(const struct image_ref *r)
{
	return strcmp(r->domain, "docker.io") == 0 ? "registry-1.docker.io" : r->domain;
}

int
image_ref_loopback(const struct image_ref *r)
{
	char host[256];
	const char *d = r->domain;
	size_t n;

	if (d[0] == '[') {
		const char *close = strchr(d, ']');
		n = close ? (size_t)(close - d - 1) : 0;
		snprintf(host, sizeof host, "%.*s", (int)n, d + 1);
		return strcmp(host, "::1") == 0;
	}
	n = strcspn(d, ":");
	snprintf(host, sizeof host, "%.*s", (int)n, d);
	if (strcmp(host, "localhost") == 0)
		return 1;
	unsigned a, b, c, x;
	char tail;
	return sscanf(host, "%u.%u.%u.%u%c", &a, &b, &c, &x, &tail) == 4 && a == 127 &&
	    b < 256 && c < 256 && x < 256;
}
