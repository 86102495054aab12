# OCI images from a real registry on loopback (Debian's docker-registry, with
# htpasswd auth and with token auth), made here with umoci and pushed with
# skopeo: `sbxtop image pull` with the credentials `skopeo login` wrote, every
# blob the one skopeo copies (the oracle), an index picking this machine's
# platform, a damaged blob and a damaged download refused, hostile layers
# refused or contained with nothing written outside the store, `image
# import` of an OCI layout and a docker-save archive, ls, rm and gc.
# The unpacked trees against umoci's unpack of skopeo's copy are in
# image-ns.sh, where sandboxes show them.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/tools/oci.sh"

if [ "$(id -u)" -ne 0 ]; then echo "ok 1 # SKIP needs root (umoci keeps owners)"; exit 0; fi
oci_need

export SBXTOP_STANDALONE=1 HOME="$T/home"
mkdir -p "$HOME"
sbx() { "$SBXTOP" "$@"; }
STORE="$XDG_DATA_HOME/sbxtop/images/oci"
L="$T/layout"

registry_start main htpasswd || { not_ok "the registry starts"; exit 1; }
ok "a docker-registry with htpasswd auth on $REG"

# --- images ------------------------------------------------------------------
rootfs_busybox "$T/rootfs"
oci_from_dir "$L" base "$T/rootfs" --config.env PATH=/bin --config.env GREETING=hi \
	--config.workingdir /home/app --config.user app || { not_ok "umoci builds the base"; exit 1; }
oci_change "$L" base multi 'mkdir -p data/sub && echo a > data/a && ln data/a data/a-link &&
	echo b > data/sub/b && echo x > etc/gone && chown -R 1000:1000 data/sub' || not_ok "layer 2"
oci_change "$L" multi multi 'rm etc/gone data/a-link' || not_ok "layer 3 (whiteouts)"
tar_layer "$T/opq.tar" 'add("data/", type=b"5", mode=0o755); add("data/.wh..wh..opq"); add("data/new", b"new\n")'
umoci raw add-layer --image "$L:multi" "$T/opq.tar" || not_ok "layer 4 (opaque)"
push "$L:base" test/base:1 && push "$L:multi" test/multi:1 || { not_ok "skopeo pushes"; exit 1; }
cp -r "$L" "$T/arm" && umoci config --image "$T/arm:base" --architecture arm64 > /dev/null &&
	skopeo copy --quiet "oci:$T/arm:base" "oci:$L:base-arm64" && oci_index "$L" multiarch amd64=multi arm64=base-arm64 &&
	push "$L:multiarch" test/multiarch:1 --all || not_ok "an index with a foreign architecture"
ok "images made with umoci and pushed with skopeo"

# --- credentials ---------------------------------------------------------------
sbx image pull "$REG/test/multi:1" > "$T/out" 2> "$T/err"; rc=$?
is "pull without credentials: exit 1" "$rc" 1
like "it says the registry wants credentials and how to log in" "$(cat "$T/err")" \
	"wants credentials.*skopeo login"
skopeo login --tls-verify=false -u "$REG_USER" -p "$REG_PASS" "$REG" > /dev/null 2>&1
check "skopeo login wrote \$XDG_RUNTIME_DIR/containers/auth.json" test -s "$XDG_RUNTIME_DIR/containers/auth.json"

sbx image pull "$REG/test/multi:1" > "$T/out" 2> "$T/err"; rc=$?
is "pull: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || diag "$(cat "$T/err")"
id=$(cat "$T/out")
like "pull prints the image's id" "$id" '^sha256:[0-9a-f]{64}$'
like "and says what it pulled" "$(cat "$T/err")" "pulled $REG/test/multi:1 \(linux/amd64, 4 layers"

# skopeo's copy of the same reference is the oracle of what a pull fetches.
skopeo copy --quiet --src-tls-verify=false "docker://$REG/test/multi:1" "oci:$T/oracle:m" || not_ok "skopeo copy"
want=$(python3 -c "import json;print([m['digest'] for m in json.load(open('$T/oracle/index.json'))['manifests']][0])")
is "the id is the manifest digest skopeo copies" "$id" "$want"
missing=""
for b in "$T"/oracle/blobs/sha256/*; do
	cmp -s "$b" "$STORE/blobs/sha256/${b##*/}" || missing="$missing ${b##*/}"
done
is "every blob skopeo copies is in the store, byte for byte" "$missing" ""
for b in "$STORE"/blobs/sha256/*; do
	[ "$(sha256sum < "$b" | cut -d' ' -f1)" = "${b##*/}" ] || missing="$missing ${b##*/}"
done
is "every blob in the store has its name's digest" "$missing" ""
is "no download is left on its way" "$(ls "$STORE/tmp")" ""
short=${id#sha256:}
like "image ls lists it" "$(sbx image ls)" "$REG/test/multi:1 +$(printf %.12s "$short") +linux/amd64 +4 "
sbx image pull "$REG/test/multi:1" > /dev/null 2>&1
is "a second pull of the same image: still one image" \
	"$(json_get "$(sbx image ls --json)" "len([i for i in d if i['kind'] == 'oci'])")" 1

# --- an index -------------------------------------------------------------------
amd=$(python3 -c "
import json
for m in json.load(open('$L/index.json'))['manifests']:
    if m['annotations']['org.opencontainers.image.ref.name'] == 'multi': print(m['digest'])")
is "an index: the pull picks this machine's (amd64) image" "$(sbx image pull "$REG/test/multiarch:1" 2> /dev/null)" "$amd"
arm=$(sbx image pull --platform linux/arm64 "$REG/test/multiarch:1" 2> "$T/err")
like "--platform linux/arm64 picks the other" "$arm" '^sha256:'
check "...which differs" test "$arm" != "$amd"
sbx image pull --platform linux/s390x "$REG/test/multiarch:1" > /dev/null 2> "$T/err"; rc=$?
is "a platform the index lacks: exit 2" "$rc" 2
like "it names the platforms there are" "$(cat "$T/err")" "no linux/s390x build; it has: linux/amd64, linux/arm64/v8"

# --- bad references and a damaged registry --------------------------------------
sbx image pull 'Not A Ref' > /dev/null 2> "$T/err"; rc=$?
is "a bad reference: exit 2" "$rc" 2
like "it says how to name an image" "$(cat "$T/err")" "REGISTRY/.NAME"
sbx image pull "$REG/test/nothing:1" > /dev/null 2> "$T/err"; rc=$?
is "an image the registry lacks: exit 2" "$rc" 2
like "it says so" "$(cat "$T/err")" "has no $REG/test/nothing:1"

# The registry's copy of the base layer damaged: the pull refuses it, keeps nothing.
sbx image rm "$REG/test/multi:1" > /dev/null 2>&1; sbx image rm "$REG/test/multiarch:1" > /dev/null 2>&1
sbx image gc > /dev/null 2>&1
is "gc emptied the store" "$(ls "$STORE/blobs/sha256" | wc -l)" 0
base_layer=$(python3 -c "
import json
m = json.load(open('$T/oracle/blobs/sha256/${want#sha256:}'))
print(m['layers'][0]['digest'][7:])")
data=$(find "$T/registry-main/data" -path "*/blobs/sha256/*/$base_layer/data")
cp "$data" "$T/good-layer"
printf 'X' | dd of="$data" bs=1 seek=100 conv=notrunc 2> /dev/null
sbx image pull "$REG/test/multi:1" > /dev/null 2> "$T/err"; rc=$?
is "a damaged blob in the registry: exit 1" "$rc" 1
like "it says the digest differs" "$(cat "$T/err")" "arrived with digest .*discarded"
check "the damaged blob is not in the store" test ! -e "$STORE/blobs/sha256/$base_layer"
is "nor on its way" "$(ls "$STORE/tmp" | grep -c "$base_layer")" 0
cp "$T/good-layer" "$data"
# A download that stopped half-way: resumed, and its first half checked too.
head -c 300000 "$T/good-layer" > "$STORE/tmp/$base_layer.partial"
sbx image pull "$REG/test/multi:1" > /dev/null 2> "$T/err"; rc=$?
is "a pull resumes a download left half-way: exit 0" "$rc" 0
cmp -s "$T/good-layer" "$STORE/blobs/sha256/$base_layer"; is "the blob is whole" "$?" 0
sbx image rm "$REG/test/multi:1" > /dev/null 2>&1; sbx image gc > /dev/null 2>&1
head -c 300000 /dev/urandom > "$STORE/tmp/$base_layer.partial"
sbx image pull "$REG/test/multi:1" > /dev/null 2> "$T/err"; rc=$?
is "a half download that was wrong: the pull says so (exit 1)" "$rc" 1
like "and discards it" "$(cat "$T/err")" "discarded"
sbx image pull "$REG/test/multi:1" > /dev/null 2> "$T/err"; rc=$?
is "the next pull starts over and succeeds" "$rc" 0

# --- hostile layers ---------------------------------------------------------------
# Each one a base image with one more layer; nothing may land outside the
# layer's directory, and the message names the entry.
mkdir -p "$T/outside"
hostile() {	# hostile NAME PYTHON: push test/hostile-NAME:1
	tar_layer "$T/h-$1.tar" "$2" && umoci new --image "$L:h-$1" > /dev/null 2>&1 &&
	umoci raw add-layer --image "$L:h-$1" "$T/h-$1.tar" && push "$L:h-$1" "test/hostile-$1:1"
}
hostile dotdot 'add("../../../../outside/escaped", b"x")'
hostile link-dir "add(\"lnk\", type=b\"2\", linkname=\"$T/outside\"); add(\"lnk/pwned\", b\"x\")"
hostile link-rel 'add("d/", type=b"5", mode=0o755); add("d/up", type=b"2", linkname="../../../../../.."); add("d/up/tmp/pwned", b"x")'
hostile hardlink "add(\"h\", type=b\"1\", linkname=\"../../../../outside/target\")"
hostile hardlink-abs 'add("h", type=b"1", linkname="/etc/passwd")'
hostile absolute "add(\"$T/outside/abs\", b\"x\")"
hostile devices 'add("dev-null", type=b"3", devmajor=1, devminor=3); add("blk", type=b"4", devmajor=8, devminor=0); add("fine", b"ok")'
hostile setuid 'add("suid", b"#!/bin/sh\n", mode=0o4755); add("sgid", b"#!/bin/sh\n", mode=0o2755)'
echo "outside, $(date +%s%N)" > "$T/outside/target"
cp "$T/outside/target" "$T/target.was"
for h in dotdot link-dir link-rel hardlink; do
	sbx image pull "$REG/test/hostile-$h:1" > /dev/null 2> "$T/err"; rc=$?
	is "hostile $h: refused (exit 1)" "$rc" 1
	like "hostile $h: the message names the entry" "$(cat "$T/err")" "layer refused: entry '"
done
sbx image pull "$REG/test/hostile-hardlink-abs:1" > /dev/null 2> "$T/err"; rc=$?
like "a hard link to /etc/passwd: refused, not made to the host's" "$rc/$(cat "$T/err")" \
	"^1/.*hard link to a file the image does not have"
sbx image pull "$REG/test/hostile-absolute:1" > /dev/null 2> "$T/err"; rc=$?
is "an absolute name: taken as relative (exit 0)" "$rc" 0
abs=$(find "$STORE/layers" -path "*${T#/}/outside/abs" | head -1)
check "...inside its layer" test -n "$abs"
is "nothing was written outside the store" "$(ls "$T/outside")" "target"
check "the link target outside is untouched" cmp -s "$T/outside/target" "$T/target.was"
check "no partial layer is left" sh -c "! find '$STORE/layers' -maxdepth 2 -name '.*.tmp.*' | grep -q ."
sbx image pull "$REG/test/hostile-devices:1" > /dev/null 2> "$T/err"; rc=$?
is "device nodes: the layer is taken (exit 0)" "$rc" 0
dl=$(ls -d "$STORE"/layers/*/* | while read d; do [ -e "$d/fine" ] && echo "$d"; done)
check "...without them" test -e "$dl/fine" -a ! -e "$dl/dev-null" -a ! -e "$dl/blk"
sbx image pull "$REG/test/hostile-setuid:1" > /dev/null 2>&1
sl=$(ls -d "$STORE"/layers/*/* | while read d; do [ -e "$d/suid" ] && echo "$d"; done)
is "as root the setuid bits stay (the store is root's alone)" "$(stat -c %a "$sl/suid" "$sl/sgid" | tr '\n' ' ')" "4755 2755 "
check "the store is private" test "$(stat -c %a "$XDG_DATA_HOME/sbxtop/images")" = 700

# A decompression bomb: 256 MiB of zeros, a few hundred KB of gzip.
head -c 268435456 /dev/zero | gzip -9 > "$T/bomb.tar.gz.data"
python3 - "$T/bomb.tar.gz.data" "$T/bomb.tar" <<'EOF'
import sys, tarfile, io, gzip
t = tarfile.open(sys.argv[2], "w")
ti = tarfile.TarInfo("zeros"); ti.size = 268435456
t.addfile(ti, gzip.open(sys.argv[1])); t.close()
EOF
umoci new --image "$L:bomb" > /dev/null 2>&1 && umoci raw add-layer --image "$L:bomb" "$T/bomb.tar" &&
	push "$L:bomb" test/bomb:1 || not_ok "the bomb image"
rm -f "$T/bomb.tar" "$T/bomb.tar.gz.data"
SBXTOP_IMAGE_MAX_LAYER=64 sbx image pull "$REG/test/bomb:1" > /dev/null 2> "$T/err"; rc=$?
is "a layer over image_max_layer: refused (exit 1)" "$rc" 1
like "it names the cap and the setting" "$(cat "$T/err")" "more than 64 MiB.*image_max_layer"
check "no partial layer is left" sh -c "! find '$STORE/layers' -maxdepth 2 -name '.*.tmp.*' | grep -q ."

# --- import -------------------------------------------------------------------------
skopeo copy --quiet --src-tls-verify=false "docker://$REG/test/base:1" "oci:$T/imp:base" || not_ok "skopeo copy to a layout"
out=$(sbx image import "$T/imp:base" local/base:imported 2> "$T/err"); rc=$?
is "import of an OCI layout: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || diag "$(cat "$T/err")"
is "...the same image as the registry's" "$out" "$(sbx image pull "$REG/test/base:1" 2> /dev/null)"
like "...recorded under the name given" "$(sbx image ls)" "docker.io/local/base:imported"
skopeo copy --quiet --src-tls-verify=false "docker://$REG/test/multi:1" "docker-archive:$T/saved.tar:saved/multi:7" ||
	not_ok "skopeo copy to a docker-save archive"
out=$(sbx image import "$T/saved.tar" 2> "$T/err"); rc=$?
is "import of a docker-save archive: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || diag "$(cat "$T/err")"
like "...under the name it carries" "$(sbx image ls)" "docker.io/saved/multi:7"
sbx image import "$T/nothing-here" > /dev/null 2> "$T/err"; rc=$?
is "import of nothing: exit 2" "$rc" 2
sbx image import podman:x > /dev/null 2> "$T/err"; rc=$?
like "import from podman without podman says so" "$rc/$(cat "$T/err")" "^[12]/.*podman is not installed"

# --- rm and gc --------------------------------------------------------------------
n=$(json_get "$(sbx image ls --json)" "len([i for i in d if i['kind'] == 'oci'])")
sbx image rm docker.io/saved/multi:7 2> "$T/err"; rc=$?
is "image rm: exit 0" "$rc" 0
is "...one image fewer" "$(json_get "$(sbx image ls --json)" "len([i for i in d if i['kind'] == 'oci'])")" "$((n - 1))"
sbx image rm docker.io/saved/multi:7 2> "$T/err"; rc=$?
is "image rm of what is not there: exit 2" "$rc" 2
out=$(sbx image gc 2>&1); rc=$?
is "image gc: exit 0" "$rc" 0
like "...it removed the blobs only that archive had" "$out" "removed [1-9][0-9]* blobs? and 0 unpacked layers"
check "...and kept the layers another image shares (by diff_id)" test -n "$(sbx image ls | grep "$REG/test/multi:1")"
for r in $(json_get "$(sbx image ls --json)" "' '.join(i['name'] for i in d if i['kind'] == 'oci')"); do
	sbx image rm "$r" 2> /dev/null
done
out=$(sbx image gc 2>&1)
like "with no image left, gc removes the unpacked layers too" "$out" "and [1-9][0-9]* unpacked layers?"
is "...and the store is empty" "$(find "$STORE/blobs" "$STORE/layers" -mindepth 2 -maxdepth 2 | wc -l)" 0

# --- token auth -----------------------------------------------------------------
registry_start tok token || { not_ok "the token registry starts"; exit 1; }
push "$L:base" test/base:1 || not_ok "skopeo pushes through token auth"
: > "$REG_TOKEN_LOG"
sbx image pull "$REG/test/base:1" > /dev/null 2> "$T/err"; rc=$?
is "a registry with token auth and no login: exit 1" "$rc" 1
like "...the registry refused the anonymous token" "$(cat "$T/err")" "wants credentials|refused access"
skopeo login --tls-verify=false -u "$REG_USER" -p "$REG_PASS" "$REG" > /dev/null 2>&1
: > "$REG_TOKEN_LOG"
sbx image pull "$REG/test/base:1" > "$T/out" 2> "$T/err"; rc=$?
is "pull through the token service: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || diag "$(cat "$T/err")"
like "...with a token for alice to pull test/base" "$(cat "$REG_TOKEN_LOG")" "^alice repository:test/base:pull"

# --- lambda -------------------------------------------------------------------------
# Lambda MicroVMs builds its images on a managed base image: refused, saying
# why, before any AWS call (no credentials or endpoint here to call).
AWS_ACCESS_KEY_ID= AWS_SECRET_ACCESS_KEY= sbx setup aws --yes --region us-east-1 \
	--endpoint-url http://127.0.0.1:9 --image "$REG/test/base:1" > /dev/null 2> "$T/err"; rc=$?
is "setup aws --image: exit 1" "$rc" 1
like "...it says what the service takes instead" "$(cat "$T/err")" \
	"managed base image \(baseImageArn.*takes no container image as the root"
done_testing
