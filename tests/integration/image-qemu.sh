# OCI images on the qemu backend, from the same store as ns: a create with
# --backend qemu --image REF boots the default VM image's kernel on an ext4
# made of the image's layers (mke2fs -d of their overlay, in a user namespace
# mapped as the ns sandboxes are, so the files keep the image's owners), with
# the agent and its init on top; the image's Env, User and WorkingDir apply.
# The disk is made once per image; gc removes it with the image.  Under TCG
# here.  Every QEMU started is killed on exit.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/tools/oci.sh"

if [ "$(id -u)" -ne 0 ]; then echo "ok 1 # SKIP needs root (umoci keeping owners)"; exit 0; fi
command -v qemu-system-x86_64 > /dev/null 2>&1 || { echo "ok 1 # SKIP qemu is not installed"; exit 0; }
oci_need mke2fs
export HOME="$T/home" SBXTOP_STANDALONE=1
mkdir -p "$HOME"
SDIR="$XDG_STATE_HOME/sbxtop/sandboxes"
at_exit 'for f in "$SDIR"/*/qemu.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")"; done'
destroy_left_at_exit
sbx() { "$SBXTOP" "$@"; }

registry_start main htpasswd || { not_ok "the registry starts"; exit 1; }
rootfs_busybox "$T/rootfs"
echo from-the-image > "$T/rootfs/etc/marker"
ln -s bin "$T/rootfs/sbin"	# as a merged /usr image's: a link the init must not hide
oci_from_dir "$T/L" base "$T/rootfs" --config.env PATH=/bin --config.env GREETING=hi \
	--config.workingdir /home/app --config.user app && push "$T/L:base" test/vm:1 ||
	{ not_ok "the image"; exit 1; }
skopeo login --tls-verify=false -u "$REG_USER" -p "$REG_PASS" "$REG" > /dev/null 2>&1
sbx image build > /dev/null 2> "$T/err" || { not_ok "image build"; diag "$(cat "$T/err")"; exit 1; }
ok "the default VM image (its kernel boots the OCI image's disk)"

t0=$(date +%s)
id=$(sbx create --backend qemu --image "$REG/test/vm:1" --max-duration 600 2> "$T/err")
case "$id" in sbx-*) ok "create --backend qemu --image REF ($(( $(date +%s) - t0 )) s, pulled, disk made, booted)" ;;
*) not_ok "create --backend qemu --image REF"; diag "$(cat "$T/err")"; exit 1 ;; esac
is "the guest's root is the image's" "$(sbx exec "$id" -- cat /etc/marker)" "from-the-image"
is "...with the image's owners" "$(sbx exec "$id" -- stat -c %u:%g /home/app /bin/busybox | tr '\n' ' ')" \
	"1000:1000 0:0 "
is "...its /sbin link kept" "$(sbx exec "$id" -- readlink /sbin)" "bin"
is "the image's User runs commands" "$(sbx exec "$id" -- id -u)" 1000
is "its WorkingDir and Env" "$(sbx exec "$id" -- 'pwd; echo $GREETING')" "/home/app
hi"
like "it is a VM: its own kernel" "$(sbx exec "$id" -- uname -r)" "$(sbx image ls --json | python3 -c '
import json,sys; print([i["kernel_version"] for i in json.load(sys.stdin) if i.get("kind") == "vm"][0])')"
disks=$(ls "$XDG_DATA_HOME"/sbxtop/images/oci/disks/*/)
is "one disk was made" "$(echo "$disks" | wc -l)" 1
sbx destroy "$id" > /dev/null 2>&1
id=$(sbx create --backend qemu --image "$REG/test/vm:1" --max-duration 600 2> "$T/err")
case "$id" in sbx-*) ok "a second create" ;; *) not_ok "a second create"; diag "$(cat "$T/err")" ;; esac
is "...takes the same disk" "$(ls "$XDG_DATA_HOME"/sbxtop/images/oci/disks/*/)" "$disks"
sbx destroy "$id" > /dev/null 2>&1
sbx image rm "$REG/test/vm:1" > /dev/null 2>&1
sbx image gc > /dev/null 2>&1
is "gc removes the disk with the image" "$(ls "$XDG_DATA_HOME"/sbxtop/images/oci/disks/*/ | wc -l)" 0
done_testing
