/* Fuzz target: what a registry sends about an image (core/image/ref.c and
 * meta.c): a reference, a manifest, an index, a config, a WWW-Authenticate
 * challenge, a record of the store.  The first byte picks which; the rest is
 * the input.  A reference that parses formats to one that parses to the same;
 * what a manifest and a config say stays within their bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/image/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, out[700], dig[IMAGE_DIGEST_LEN], mt[128];
	struct image_ref r, r2;
	struct image_info img;
	struct sbx_err e;
	cJSON *o;

	if (size < 1 || size > (1 << 16))
		return 0;
	s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	memset(&img, 0, sizeof img);
	switch (data[0] % 6) {
	case 0:
		if (image_ref_parse(s, &r, &e) == 0) {
			image_ref_format(&r, out, sizeof out);
			if (image_ref_parse(out, &r2, &e) < 0 || memcmp(&r, &r2, sizeof r) != 0)
				abort();
			if (r.digest[0] && !image_digest_valid(r.digest))
				abort();
		}
		break;
	case 1:
		if (image_manifest_parse(s, size - 1, &img, &e) == 0) {
			if (img.nlayers > 256 || !image_digest_valid(img.config))
				abort();
			for (size_t i = 0; i < img.nlayers; i++)
				if (!image_digest_valid(img.layers[i].digest) || img.layers[i].size < 0)
					abort();
			/* The same text as a config: diff_ids for each layer. */
			if (image_config_apply(s, size - 1, &img, &e) == 0)
				for (size_t i = 0; i < img.nlayers; i++)
					if (!image_digest_valid(img.layers[i].diff_id))
						abort();
		}
		free(img.layers);
		for (char **p = img.env; p != NULL && *p != NULL; p++)
			free(*p);
		free(img.env);
		free(img.user);
		free(img.workdir);
		break;
	case 2:
		if (image_index_pick(s, size - 1, "linux", "amd64", "", dig, mt, sizeof mt, &e) == 0 &&
		    !image_digest_valid(dig))
			abort();
		(void)image_kind_of(mt, s, size - 1);
		break;
	case 3: {
		char scheme[32], realm[1024], service[256], scope[512];
		(void)image_challenge_parse(s, scheme, sizeof scheme, realm, sizeof realm, service,
		    sizeof service, scope, sizeof scope);
		break;
	}
	case 4:
		if ((o = cJSON_ParseWithLength(s, size - 1)) != NULL) {
			struct image_info *p = image_info_from_json(o, &e);
			if (p != NULL) {
				cJSON *back = image_info_to_json(p);
				struct image_info *q = image_info_from_json(back, &e);
				if (q == NULL || q->nlayers != p->nlayers || strcmp(q->id, p->id) != 0)
					abort();
				image_info_free(q);
				cJSON_Delete(back);
				image_info_free(p);
			}
			cJSON_Delete(o);
		}
		break;
	default:
		(void)image_kind_of(s, s, size - 1);
		break;
	}
	free(s);
	return 0;
}
