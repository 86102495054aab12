# Sandboxes from OCI images on the ns backend, as root and as two ordinary
# users (one with a subordinate range, one without), through the core server:
# the root's tree is what umoci unpacks from skopeo's copy of the same image
# (the oracle: types, modes, owners, sizes, contents, link targets, whiteouts,
# an opaque directory, a hard link), the image's Env, User and WorkingDir
# apply to commands, a package installs inside with dpkg, fork copies an
# image sandbox, and gc keeps an image while a sandbox runs on it.  Nothing
# may be left: sandboxes, processes, users, files outside the store.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/tools/oci.sh"

if [ "$(id -u)" -ne 0 ]; then echo "ok 1 # SKIP needs root (users, umoci keeping owners)"; exit 0; fi
oci_need useradd runuser newuidmap dpkg-deb
destroy_left_at_exit
L="$T/layout"

registry_start main htpasswd || { not_ok "the registry starts"; exit 1; }
rootfs_busybox "$T/rootfs"
oci_from_dir "$L" base "$T/rootfs" --config.env PATH=/bin --config.env GREETING=hi \
	--config.workingdir /home/app --config.user app || { not_ok "umoci builds the base"; exit 1; }
oci_change "$L" base multi 'mkdir -p data/sub opq && echo a > data/a && ln data/a data/a-link &&
	echo b > data/sub/b && chown -R 1000:1000 data/sub && echo x > data/x && echo o1 > opq/old1 &&
	echo gone > etc/gone && chmod 0640 data/x && ln -s ../etc/passwd data/pw' || not_ok "layer 2"
oci_change "$L" multi multi 'rm etc/gone data/x' || not_ok "layer 3 (whiteouts)"
tar_layer "$T/opq.tar" 'add("opq/", type=b"5", mode=0o755); add("opq/.wh..wh..opq"); add("opq/new", b"new\n")'
umoci raw add-layer --image "$L:multi" "$T/opq.tar" || not_ok "layer 4 (opaque)"
rootfs_dpkg "$T/debroot"
oci_from_dir "$L" deb "$T/debroot" --config.env PATH=/usr/sbin:/usr/bin:/sbin:/bin || not_ok "the dpkg image"
push "$L:multi" test/multi:1 && push "$L:deb" test/deb:1 || { not_ok "skopeo pushes"; exit 1; }
ok "images made with umoci and pushed with skopeo to $REG"

# Two packages: one whose files are root's, one with a file of another user.
mkdir -p "$T/pkg/DEBIAN" "$T/pkg/usr/bin" "$T/pkg/usr/share/hello-sbx"
printf 'Package: hello-sbx\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: test\n' \
	> "$T/pkg/DEBIAN/control"
printf '#!/bin/sh\necho hello from a package\n' > "$T/pkg/usr/bin/hello-sbx"
chmod 0755 "$T/pkg/usr/bin/hello-sbx"
echo data > "$T/pkg/usr/share/hello-sbx/data"
dpkg-deb --root-owner-group --build "$T/pkg" "$T/hello-sbx.deb" > /dev/null || not_ok "dpkg-deb"
sed -i 's/hello-sbx/owned-sbx/' "$T/pkg/DEBIAN/control"
mv "$T/pkg/usr/bin/hello-sbx" "$T/pkg/usr/bin/owned-sbx"
chown 5:60 "$T/pkg/usr/share/hello-sbx/data"
dpkg-deb --build "$T/pkg" "$T/owned-sbx.deb" > /dev/null || not_ok "dpkg-deb (owned)"
chmod 0644 "$T"/*.deb

# The oracle's tree: umoci unpacks skopeo's copy of the same reference.
skopeo copy --quiet --src-tls-verify=false --src-creds "$REG_USER:$REG_PASS" \
	"docker://$REG/test/multi:1" "oci:$T/oracle:m" || not_ok "skopeo copy"
umoci unpack --image "$T/oracle:m" "$T/oracle-b" > /dev/null || not_ok "umoci unpack"
LIST='cd / && find . -xdev \( -path ./proc -o -path ./dev -o -path ./tmp -o -path ./workspace \
	-o -path ./run -o -path ./opt -o -path ./sys \) -prune -o -print | sort | while IFS= read -r p; do
	if [ -L "$p" ]; then echo "$p link $(readlink "$p") $(stat -c %u:%g "$p")";
	elif [ -d "$p" ]; then echo "$p dir $(stat -c "%a %u:%g" "$p")";
	elif [ -f "$p" ]; then echo "$p file $(stat -c "%a %u:%g %s" "$p") $(sha256sum < "$p" | cut -c1-16)";
	else echo "$p other"; fi; done'
chroot "$T/oracle-b/rootfs" /bin/sh -c "$LIST" > "$T/want" 2> "$T/err" || not_ok "the oracle's listing"
check "the oracle: the whiteout removed etc/gone" sh -c "! grep -q '^./etc/gone ' '$T/want'"
check "the oracle: the opaque directory hides opq/old1" sh -c "! grep -q '^./opq/old1 ' '$T/want' && grep -q '^./opq/new ' '$T/want'"

# image_checks WHO RUN SQUASH: every check as WHO (RUN runs a command as it);
# SQUASH yes: every owner inside is root (an ordinary user with one id).
image_checks() {
	who=$1 run=$2 squash=$3
	R() { $run "$@"; }
	R skopeo login --tls-verify=false -u "$REG_USER" -p "$REG_PASS" "$REG" > /dev/null 2>&1 ||
		not_ok "$who: skopeo login"
	id=$(R "$S" create --name "$who-multi" --image "$REG/test/multi:1" 2> "$T/err")
	case "$id" in sbx-*) ok "$who: create --image (pulled by the core server)" ;;
	*) not_ok "$who: create --image"; diag "$(cat "$T/err")"; return ;; esac
	R "$S" exec --root "$id" -- "$LIST" > "$T/got" 2> "$T/err"
	if [ "$squash" = yes ]; then
		sed 's/ [0-9][0-9]*:[0-9][0-9]*/ 0:0/' "$T/want" > "$T/want-$who"
	else
		cp "$T/want" "$T/want-$who"
	fi
	if cmp -s "$T/got" "$T/want-$who"; then
		ok "$who: the sandbox's root is umoci's unpack of the image ($(wc -l < "$T/got") entries)"
	else
		not_ok "$who: the sandbox's root is umoci's unpack of the image"
		diff "$T/want-$who" "$T/got" | head -n 20 | sed 's/^/# /'
	fi
	is "$who: the hard link is one file" \
		"$(R "$S" exec "$id" -- 'stat -c %i /data/a /data/a-link | sort -u | wc -l')" 1
	like "$who: ls shows the image" "$(R "$S" ls)" "$id .*running"
	is "$who: status names the image" \
		"$(json_get "$(R "$S" status --json "$id")" 'd["image"]')" "$REG/test/multi:1"
	if [ "$squash" = yes ]; then want_uid=0; else want_uid=1000; fi
	is "$who: the image's User runs commands (uid $want_uid)" "$(R "$S" exec "$id" -- id -u)" "$want_uid"
	is "$who: its WorkingDir is their cwd" "$(R "$S" exec "$id" -- pwd)" /home/app
	is "$who: its Env is theirs" "$(R "$S" exec "$id" -- 'echo $GREETING $PATH')" "hi /bin"
	is "$who: --env still wins over it" "$(R "$S" exec --env GREETING=yo "$id" -- 'echo $GREETING')" yo
	is "$who: --root is root" "$(R "$S" exec --root "$id" -- id -u)" 0
	R "$S" exec "$id" -- 'echo w > /workspace/w && echo changed > /home/app/c' > /dev/null 2>&1; rc=$?
	is "$who: the image's user writes /workspace and its home" "$rc" 0
	R "$S" exec --root "$id" -- 'echo new > /etc/new && echo sbx-changed >> /etc/passwd; rm /data/a' \
		> /dev/null 2>&1
	check "$who: the image's files never change in the store" \
		sh -c "! grep -rqs 'sbx-changed' '$D/sbxtop/images/oci/layers' 2>/dev/null"
	check "$who: ...and its file removed in the sandbox is still there" \
		test -n "$(find "$D/sbxtop/images/oci/layers" -path '*/data/a' 2> /dev/null)"
	forks=$(R "$S" fork "$id" 2> "$T/err")
	case "$forks" in sbx-*) ok "$who: fork of an image sandbox" ;;
	*) not_ok "$who: fork"; diag "$(cat "$T/err")" ;; esac
	is "$who: the fork has the source's changes and the image" \
		"$(R "$S" exec "$forks" -- 'cat /etc/new /workspace/w; ls /data; echo $GREETING' 2>&1 | tr '\n' ' ')" \
		"new w a-link pw sub hi "
	is "$who: ...and the same image id" "$(json_get "$(R "$S" status --json "$forks")" 'd["image_id"]')" \
		"$(json_get "$(R "$S" status --json "$id")" 'd["image_id"]')"
	out=$(R "$S" image gc 2>&1)
	R "$S" exec "$id" -- true; rc=$?
	is "$who: gc keeps what a running sandbox needs" "$rc" 0
	R "$S" destroy "$forks" "$id" > /dev/null 2>&1

	# A package installs inside, as the sandbox's root.
	dd=$(R "$S" create --image "$REG/test/deb:1" 2> "$T/err")
	case "$dd" in sbx-*) ok "$who: a sandbox of the dpkg image" ;;
	*) not_ok "$who: create of the dpkg image"; diag "$(cat "$T/err")"; return ;; esac
	cp "$T/hello-sbx.deb" "$T/owned-sbx.deb" "$H/" && chmod 0644 "$H"/*.deb && chown "$owner" "$H"/*.deb
	R "$S" cp "$H/hello-sbx.deb" "$dd:/workspace/" && R "$S" cp "$H/owned-sbx.deb" "$dd:/workspace/"
	R "$S" exec "$dd" -- 'dpkg -i /workspace/hello-sbx.deb' > "$T/o" 2>&1; rc=$?
	is "$who: dpkg -i installs a package" "$rc" 0
	[ "$rc" -eq 0 ] || sed 's/^/# /' "$T/o" | tail -n 5
	is "$who: ...which runs" "$(R "$S" exec "$dd" -- hello-sbx)" "hello from a package"
	like "$who: ...and dpkg knows it" "$(R "$S" exec "$dd" -- 'dpkg -l hello-sbx')" "^ii +hello-sbx +1.0"
	R "$S" exec "$dd" -- 'dpkg -i /workspace/owned-sbx.deb' > "$T/o" 2>&1; rc=$?
	is "$who: a package with a file of another user installs" "$rc" 0
	if [ "$squash" = yes ]; then
		is "$who: ...the file is root's: one id, nobody else's" "$(R "$S" exec "$dd" -- stat -c %u:%g \
			/usr/share/hello-sbx/data)" "0:0"
	else
		is "$who: ...owned by that user inside" "$(R "$S" exec "$dd" -- stat -c %u:%g \
			/usr/share/hello-sbx/data)" "5:60"
	fi
	R "$S" destroy "$dd" > /dev/null 2>&1
	is "$who: no sandbox is left" "$(R "$S" ls 2> /dev/null | awk 'NR > 1' | wc -l)" 0
}

# --- as root ------------------------------------------------------------------------
export HOME="$T/home"
mkdir -p "$HOME"
H=$HOME D=$XDG_DATA_HOME owner=root S=$SBXTOP
image_checks root "" no
out=$("$SBXTOP" image gc 2>&1)
is "root: nothing is left in the store but images and what they need" \
	"$(ls "$XDG_DATA_HOME/sbxtop/images/oci/tmp")" ""
"$SBXTOP" serve --stop > /dev/null 2>&1

# --- an image with links where the sandbox mounts things -------------------------------
rootfs_busybox "$T/trap"
rm -rf "$T/trap/tmp"
mkdir -p "$T/trapped"
ln -s "$T/trapped" "$T/trap/workspace"
ln -s / "$T/trap/run"
echo "not a directory" > "$T/trap/tmp"
oci_from_dir "$L" trap "$T/trap" --config.env PATH=/bin && push "$L:trap" test/trap:1 ||
	not_ok "the image with links"
tid=$("$SBXTOP" create --image "$REG/test/trap:1" 2> "$T/err")
case "$tid" in sbx-*) ok "an image with links at /workspace and /run, a file at /tmp: create" ;;
*) not_ok "create of the image with links"; diag "$(cat "$T/err")" ;; esac
"$SBXTOP" exec --root "$tid" -- 'echo in > /workspace/w; echo t > /tmp/t; ls /run/sbxtop' > "$T/o" 2>&1
like "...the sandbox's own mounts are there" "$(cat "$T/o")" "agent.sock"
is "...and nothing went through the links to the host" "$(ls -A "$T/trapped"; ls /run/sbxtop 2>&1 | head -1)" \
	"ls: cannot access '/run/sbxtop': No such file or directory"
"$SBXTOP" destroy "$tid" > /dev/null 2>&1
"$SBXTOP" serve --stop > /dev/null 2>&1

# --- a warm pool of an image ----------------------------------------------------------
mkdir -p "$XDG_CONFIG_HOME/sbxtop"
echo "pool = 1 image=$REG/test/multi:1" > "$XDG_CONFIG_HOME/sbxtop/sbxtop.conf"
"$SBXTOP" serve --foreground > "$T/serve.log" 2>&1 &
srv=$!
at_exit "kill $srv 2> /dev/null"
members() { python3 -c 'import json,sys
try: print(len([s for s in json.load(open(sys.argv[1]))["sandboxes"] if s.get("pool")]))
except FileNotFoundError: print(0)' "$XDG_STATE_HOME/sbxtop/sandboxes.json"; }
one_member() { [ "$(members)" -eq 1 ]; }
check "the server keeps a member of the image's pool" until_ok 30 one_member
out=$("$SBXTOP" create --json --image "$REG/test/multi:1" 2> "$T/err")
like "a create of that image takes it" "$out" '"from_pool":[[:space:]]*"pool-1"'
pid=$(json_get "$out" 'd["sandbox_id"] if "sandbox_id" in d else d["id"]')
is "...and it is the image's" "$("$SBXTOP" exec "$pid" -- 'echo $GREETING; id -u')" "hi
1000"
out=$("$SBXTOP" create --json 2> "$T/err")
check "a create of another image (the host's) is cold" sh -c "! printf '%s' '$out' | grep -q from_pool"
"$SBXTOP" destroy "$pid" "$(json_get "$out" 'd["id"]')" > /dev/null 2>&1
"$SBXTOP" serve --stop > /dev/null 2>&1
wait "$srv" 2> /dev/null
rm -f "$XDG_CONFIG_HOME/sbxtop/sbxtop.conf"

# --- as ordinary users --------------------------------------------------------------
users_init
for r in yes no; do
	u=sbxi$r$$
	user_make "$u" "$r" || { not_ok "useradd $u"; continue; }
	H="$U/$u" D="$U/$u/data" owner=$u
	[ "$r" = yes ] && squash=no || squash=yes
	image_checks "$u" "$U/run-$u" "$squash"
	"$U/run-$u" "$S" image rm "$REG/test/multi:1" > /dev/null 2>&1
	"$U/run-$u" "$S" image rm "$REG/test/deb:1" > /dev/null 2>&1
	out=$("$U/run-$u" "$S" image gc 2>&1); rc=$?
	is "$u: image gc removes what it made (exit 0)" "$rc" 0
	is "$u: the store keeps no layer" \
		"$(find "$D/sbxtop/images/oci/layers" -mindepth 2 -maxdepth 2 2> /dev/null | wc -l)" 0
	"$U/run-$u" "$S" serve --stop > /dev/null 2>&1
	for _i in $(seq 100); do [ -z "$(user_pids "$u")" ] && break; sleep 0.05; done
	is "$u: no process of the user is left" "$(user_pids "$u" | tr '\n' ' ')" ""
done
done_testing
