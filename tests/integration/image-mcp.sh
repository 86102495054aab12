# An agent creates sandboxes from OCI images through sandbox_create, with the
# official MCP SDK client (tests/mcp/image-agent.mjs), as root and as an
# ordinary user: images_allowed bounds it (an image not named is refused
# before anything is pulled), the sbx://images resource says what it may use,
# the allowed image is pulled from a registry on loopback and a package
# installs inside with dpkg.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/tools/oci.sh"

if [ "$(id -u)" -ne 0 ]; then echo "ok 1 # SKIP needs root (users, umoci keeping owners)"; exit 0; fi
oci_need useradd runuser newuidmap dpkg-deb node
npm_ready mcp @modelcontextprotocol/sdk
destroy_left_at_exit
L="$T/layout"

registry_start main htpasswd || { not_ok "the registry starts"; exit 1; }
rootfs_dpkg "$T/debroot"
oci_from_dir "$L" deb "$T/debroot" --config.env PATH=/usr/sbin:/usr/bin:/sbin:/bin &&
	push "$L:deb" test/deb:1 && push "$L:deb" other/deb:1 || { not_ok "the dpkg image"; exit 1; }
mkdir -p "$T/debs/pkg/DEBIAN" "$T/debs/pkg/usr/bin"
printf 'Package: hello-sbx\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: test\n' \
	> "$T/debs/pkg/DEBIAN/control"
printf '#!/bin/sh\necho hello from a package\n' > "$T/debs/pkg/usr/bin/hello-sbx"
chmod 0755 "$T/debs/pkg/usr/bin/hello-sbx"
dpkg-deb --root-owner-group --build "$T/debs/pkg" "$T/debs/hello-sbx.deb" > /dev/null
rm -rf "$T/debs/pkg"
chmod -R a+rX "$T/debs"

# agent_checks WHO RUN DEBS: the agent's flow as WHO (RUN prefixes each
# command), the package in DEBS.
agent_checks() {
	who=$1 run=$2 debs=$3
	$run skopeo login --tls-verify=false -u "$REG_USER" -p "$REG_PASS" "$REG" > /dev/null 2>&1
	$run env SBXTOP_IMAGES_ALLOWED="$REG/test/*" node "$TOP/tests/mcp/image-agent.mjs" "$S" \
		"$REG/test/deb:1" "$REG/other/deb:1" "$debs" > "$T/out" 2> "$T/err"
	step() { grep "\"step\":\"$1\"" "$T/out"; }
	like "$who: resources/list has sbx://images" "$(step list)" '"images_resource":true'
	like "$who: sbx://images names the pattern, not pulled yet" "$(step read)" \
		"\"pattern\":\"$REG/test/\\*\",\"pulled\":false"
	like "$who: an image images_allowed does not name is refused" "$(step refused)" \
		'"isError":true.*not among the images the operator allows agents'
	check "$who: ...and was not pulled" sh -c "! $run $S image ls 2>/dev/null | grep -q other/deb"
	like "$who: sandbox_create with an allowed image" "$(step create)" \
		"\"isError\":false.*\"image\":\"$REG/test/deb:1\""
	[ -n "$(step create)" ] || sed 's/^/# /' "$T/err" | tail -n 20
	like "$who: sandbox_upload_dir of a package" "$(step upload)" '"isError":false'
	like "$who: dpkg -i through sandbox_exec installs and runs it" "$(step exec)" \
		'"exit_code":0.*hello from a package.*ii  hello-sbx'
	like "$who: sandbox_destroy" "$(step destroy)" '"isError":false'
	is "$who: no sandbox is left" "$($run $S ls 2> /dev/null | awk 'NR > 1' | wc -l)" 0
}

export HOME="$T/home"
mkdir -p "$HOME"
S=$SBXTOP
agent_checks root "" "$T/debs"
"$SBXTOP" serve --stop > /dev/null 2>&1

users_init
u=sbxim$$
user_make "$u" yes || { not_ok "useradd $u"; exit 1; }
cp -r "$T/debs" "$U/$u/debs" && chown -R "$u:" "$U/$u/debs"
agent_checks "$u" "$U/run-$u" "$U/$u/debs"
"$U/run-$u" "$S" serve --stop > /dev/null 2>&1
done_testing
