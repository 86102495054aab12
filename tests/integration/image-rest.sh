# The REST routes of the image store and seed 2's templates, with node's test
# runner (tests/rest/images.mjs) against `sbxtop serve --listen`, every answer
# validated against docs/openapi.json; the image comes from a registry on
# loopback, pushed there with skopeo.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/tools/oci.sh"

if [ "$(id -u)" -ne 0 ]; then echo "ok 1 # SKIP needs root (umoci keeping owners)"; exit 0; fi
oci_need node
npm_ready rest openapi-fetch ajv
destroy_left_at_exit
export HOME="$T/home"
mkdir -p "$HOME"

registry_with_marker test/tool:1 "made by image-rest.sh"
export REG SBXTOP SBXTOP_TEMPLATES="tool=$REG/test/tool:1"
node_tests "$TOP/tests/rest/images.mjs"
done_testing
