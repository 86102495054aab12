# OCI images: a pull of a ~100 MB image from a registry on loopback (Debian's
# docker-registry) beside skopeo copying the same image from the same registry
# (and beside skopeo + umoci unpack for a pull that also unpacks); a create
# from the image beside a create on the host's root; and the disk two images
# that share a base take in the store.  Needs root (umoci keeps owners) and
# the test packages (scripts/deps.sh --test).
set -eu
BUILD=${BUILD:-build}
N=${BENCH_IMAGE_N:-20}
TOP=$(pwd)
for t in docker-registry skopeo umoci htpasswd; do
	command -v "$t" > /dev/null 2>&1 || { echo "images: $t is not installed (scripts/deps.sh --test): skipped"; exit 0; }
done
[ "$(id -u)" -eq 0 ] || { echo "images: needs root (umoci keeps owners): skipped"; exit 0; }
T=$(mktemp -d /tmp/sbxbench.XXXXXX)
export XDG_STATE_HOME="$T/state" XDG_RUNTIME_DIR="$T/run" XDG_CONFIG_HOME="$T/config" \
	XDG_DATA_HOME="$T/data" XDG_CACHE_HOME="$T/cache" HOME="$T/home"
mkdir -p "$XDG_RUNTIME_DIR" "$HOME" && chmod 700 "$XDG_RUNTIME_DIR"
S="$BUILD/sbxtop"
ids=""
_cleanups=""
at_exit() { _cleanups="$1; $_cleanups"; }
trap 'for i in $ids; do "$S" destroy "$i" >/dev/null 2>&1; done; "$S" serve --stop >/dev/null 2>&1; eval "$_cleanups"; rm -rf "$T"' EXIT
. "$TOP/tests/tools/oci.sh"

now_us() { echo $(( $(date +%s%N) / 1000 )); }
stats() { sort -n "$1" | awk '{v[NR]=$1} END {p50=v[int((NR+1)/2)]; p99=v[int(NR*0.99+0.999)]; printf "%10.2f %10.2f", p50/1000, p99/1000}'; }
p50() { sort -n "$1" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
mb() { echo "$1" | awk '{printf "%.1f", $1 / 1048576}'; }
du_b() { du -sb "$@" 2>/dev/null | awk '{s += $1} END {print s + 0}'; }

registry_start bench htpasswd > /dev/null
skopeo login --tls-verify=false -u "$REG_USER" -p "$REG_PASS" "$REG" > /dev/null 2>&1
# The base: a busybox root and the host's gcc and Python libraries (about
# 300 MB of files, about 100 MB gzip'd); two images on it, a layer each.
rootfs_busybox "$T/root"
mkdir -p "$T/root/usr/lib"
cp -a /usr/lib/gcc /usr/lib/python3.11 "$T/root/usr/lib/"
oci_from_dir "$T/L" base "$T/root" --config.env PATH=/bin > /dev/null
rm -rf "$T/root"
oci_change "$T/L" base app1 'mkdir -p app && head -c 8000000 /dev/urandom > app/one' > /dev/null
oci_change "$T/L" base app2 'mkdir -p app && head -c 8000000 /dev/urandom > app/two' > /dev/null
for t in base app1 app2; do push "$T/L:$t" "bench/$t:1" > /dev/null; done
blob=$(skopeo inspect --tls-verify=false --raw "docker://$REG/bench/base:1" |
	python3 -c 'import json,sys; print(sum(l["size"] for l in json.load(sys.stdin)["layers"]))')

# A pull: download and verify (sbxtop with --platform does not unpack), then
# the whole pull (unpacked for the ns backend) beside skopeo copy + umoci unpack.
: > "$T/pull"; : > "$T/skopeo"; : > "$T/pullu"; : > "$T/umoci"
for i in 1 2 3; do
	"$S" image rm "$REG/bench/base:1" > /dev/null 2>&1 || true
	"$S" image gc > /dev/null 2>&1
	t=$(now_us); "$S" image pull --platform linux/amd64 "$REG/bench/base:1" > /dev/null 2>&1
	echo $(( $(now_us) - t )) >> "$T/pull"
	rm -rf "$T/sk"
	t=$(now_us); skopeo copy --quiet --src-tls-verify=false "docker://$REG/bench/base:1" "oci:$T/sk:b"
	echo $(( $(now_us) - t )) >> "$T/skopeo"
	"$S" image rm "$REG/bench/base:1" > /dev/null 2>&1; "$S" image gc > /dev/null 2>&1
	t=$(now_us); "$S" image pull "$REG/bench/base:1" > /dev/null 2>&1
	echo $(( $(now_us) - t )) >> "$T/pullu"
	rm -rf "$T/sk" "$T/skb"
	t=$(now_us); skopeo copy --quiet --src-tls-verify=false "docker://$REG/bench/base:1" "oci:$T/sk:b" &&
		umoci unpack --image "$T/sk:b" "$T/skb" > /dev/null
	echo $(( $(now_us) - t )) >> "$T/umoci"
done
rm -rf "$T/sk" "$T/skb"
printf '%-48s %10s %10s\n' "pull a $(mb "$blob") MB image from loopback (3 runs)" "p50 ms" "p99 ms"
printf '  %-46s %s\n' "sbxtop image pull --platform (fetch, verify)" "$(stats "$T/pull")"
printf '  %-46s %s\n' "peer: skopeo copy docker:// oci:" "$(stats "$T/skopeo")"
printf '  %-46s %s\n' "sbxtop image pull (fetch, verify, unpack)" "$(stats "$T/pullu")"
printf '  %-46s %s\n' "peer: skopeo copy + umoci unpack" "$(stats "$T/umoci")"

# Create from the image beside a create on the host's root, through the core
# server, as `sbxtop create` is timed in 15-ns.sh.
"$S" create --image "$REG/bench/base:1" > "$T/warm" 2>/dev/null && "$S" destroy "$(cat "$T/warm")" > /dev/null
"$S" create > "$T/warm" 2>/dev/null && "$S" destroy "$(cat "$T/warm")" > /dev/null
: > "$T/ci"; : > "$T/ch"
for i in $(seq "$N"); do
	t=$(now_us); id=$("$S" create --image "$REG/bench/base:1" </dev/null); echo $(( $(now_us) - t )) >> "$T/ci"
	ids="$ids $id"
	t=$(now_us); id=$("$S" create </dev/null); echo $(( $(now_us) - t )) >> "$T/ch"
	ids="$ids $id"
done
for id in $ids; do "$S" destroy "$id" > /dev/null 2>&1; done
ids=""
printf '%-48s %10s %10s\n' "sbxtop create, to a ready agent ($N each)" "p50 ms" "p99 ms"
printf '  %-46s %s\n' "from the image (--image REF)" "$(stats "$T/ci")"
printf '  %-46s %s\n' "on the host's root (the default)" "$(stats "$T/ch")"
awk -v a="$(p50 "$T/ci")" -v b="$(p50 "$T/ch")" \
	'BEGIN {printf "  %-46s %10.2fx   (target <= 1.2x)\n", "image / host root, p50", a / b}'

# Two images sharing the base: what the store holds, against the two as
# separate copies.
"$S" image pull "$REG/bench/app1:1" > /dev/null 2>&1
"$S" image pull "$REG/bench/app2:1" > /dev/null 2>&1
"$S" image rm "$REG/bench/base:1" > /dev/null 2>&1; "$S" image gc > /dev/null 2>&1
store="$XDG_DATA_HOME/sbxtop/images/oci"
blobs=$(du_b "$store/blobs") unp=$(du_b "$store/layers")
one=$(python3 -c 'import json,sys
d = json.load(sys.stdin)
print(" ".join(str(int(i["size"] + i["unpacked"])) for i in d if i.get("kind") == "oci"))' \
	<< EOF
$("$S" image ls --json)
EOF
)
sep=$(echo "$one" | awk '{print $1 + $2}')
printf '%-48s %10s\n' "two images on one base, in the store" "MB"
printf '  %-46s %10s\n' "blobs + unpacked layers, as stored (du)" "$(mb $((blobs + unp)))"
printf '  %-46s %10s\n' "the two images counted apart" "$(mb "$sep")"
