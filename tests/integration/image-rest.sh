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

registry_start main htpasswd || { not_ok "the registry starts"; exit 1; }
rootfs_busybox "$T/rootfs"
echo "made by image-rest.sh" > "$T/rootfs/etc/marker"
oci_from_dir "$T/L" tool "$T/rootfs" --config.env PATH=/bin && push "$T/L:tool" test/tool:1 ||
	{ not_ok "the image"; exit 1; }
skopeo login --tls-verify=false -u "$REG_USER" -p "$REG_PASS" "$REG" > /dev/null 2>&1
export REG SBXTOP SBXTOP_TEMPLATES="tool=$REG/test/tool:1"
node_tests "$TOP/tests/rest/images.mjs"
done_testing
