/* The lambda backend's options (see backends/backend-options.h). */
#include <stddef.h>

#include "backends/backend-options.h"

const struct config_option lambda_options[] = {
	{ "lambda_image", CONFIG_STRING, "", 0, 0, NULL, "lambda-image", "SBXTOP_LAMBDA_IMAGE",
	  NULL, "ARN of the MicroVM image of lambda sandboxes (`sbxtop setup aws` makes one)" },
	{ "lambda_image_version", CONFIG_STRING, "", 0, 0, NULL, "lambda-image-version",
	  "SBXTOP_LAMBDA_IMAGE_VERSION", NULL,
	  "version of that image (empty: its latest active version)" },
	{ "lambda_region", CONFIG_STRING, "", 0, 0, NULL, "region", "SBXTOP_LAMBDA_REGION", NULL,
	  "AWS region of lambda sandboxes (empty: the image ARN's, AWS_REGION, the profile's)" },
	{ "lambda_endpoint_url", CONFIG_STRING, "", 0, 0, NULL, "endpoint-url",
	  "SBXTOP_LAMBDA_ENDPOINT_URL", NULL,
	  "Lambda MicroVMs API endpoint (empty: AWS_ENDPOINT_URL or the region's)" },
	{ "lambda_token_minutes", CONFIG_INT, "60", 1, 60, NULL, "lambda-token-minutes",
	  "SBXTOP_LAMBDA_TOKEN_MINUTES", "minutes",
	  "lifetime of the endpoint tokens sbxtop mints (re-minted before they expire)" },
	{ "lambda_shell_ingress", CONFIG_INT, "0", 0, 1, NULL, "lambda-shell-ingress",
	  "SBXTOP_LAMBDA_SHELL_INGRESS", NULL,
	  "1: run MicroVMs with the SHELL_INGRESS connector, so shells use shell tokens "
	  "(unconfirmed on AWS; 0: shells use the endpoint token)" },
	{ NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL },
};
