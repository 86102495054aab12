# Helpers for the image tests and the image bench (source after tests/lib.sh):
# a real registry on loopback (Debian's docker-registry, the distribution
# project's server) with htpasswd or token auth, and images made here with
# umoci from small root filesystems, pushed with skopeo.

# oci_need: skip the test (exit 0) when a tool it needs is missing.
oci_need() {
	for _t in docker-registry skopeo umoci htpasswd openssl python3 "$@"; do
		command -v "$_t" > /dev/null 2>&1 || {
			echo "ok 1 # SKIP $_t is not installed (scripts/deps.sh --test installs it)"; exit 0; }
	done
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# registry_start NAME htpasswd|token: a registry with its own storage, its
# address in $REG (127.0.0.1:PORT), user $REG_USER / $REG_PASS; stopped at
# exit.  With token, a token service (tests/tools/registry-token.py) issues the
# registry's JWTs, as Docker Hub's auth.docker.io does; $REG_TOKEN_LOG has a
# line per token.
REG_USER=alice REG_PASS=s3cret-pw
registry_start() {
	_rd="$T/registry-$1"
	mkdir -p "$_rd/data"
	_port=$(free_port)
	if [ "$2" = token ]; then
		openssl req -x509 -newkey rsa:2048 -nodes -keyout "$_rd/key.pem" -out "$_rd/cert.pem" \
			-subj /CN=sbxtest-token -days 2 > /dev/null 2>&1 || return 1
		python3 "$TOP/tests/tools/registry-token.py" "$_rd/token.port" "$_rd/key.pem" \
			"$_rd/cert.pem" sbxtest-issuer "$REG_USER:$REG_PASS" &
		at_exit "kill $!"
		for _i in $(seq 100); do [ -s "$_rd/token.port" ] && break; sleep 0.05; done
		REG_TOKEN_LOG="$_rd/token.port.log"
		_auth="  token:
    realm: http://127.0.0.1:$(cat "$_rd/token.port")/token
    service: sbxtest-registry
    issuer: sbxtest-issuer
    rootcertbundle: $_rd/cert.pem"
	else
		htpasswd -Bbn "$REG_USER" "$REG_PASS" > "$_rd/htpasswd" 2> /dev/null || return 1
		_auth="  htpasswd:
    realm: sbxtest
    path: $_rd/htpasswd"
	fi
	cat > "$_rd/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $_rd/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$_port
auth:
$_auth
EOF
	docker-registry serve "$_rd/config.yml" > "$_rd/log" 2>&1 &
	at_exit "kill $!"
	REG=127.0.0.1:$_port
	for _i in $(seq 100); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$REG/v2/")" = 401 ] && return 0
		sleep 0.05
	done
	sed 's/^/# /' "$_rd/log"
	return 1
}

# registry_with_marker NAME:TAG TEXT: a registry ($REG, htpasswd), logged in
# to, holding NAME:TAG, a busybox image whose /etc/marker says TEXT; or the
# test fails and ends.
registry_with_marker() {
	registry_start main htpasswd || { not_ok "the registry starts"; exit 1; }
	rootfs_busybox "$T/rootfs"
	echo "$2" > "$T/rootfs/etc/marker"
	oci_from_dir "$T/L" marker "$T/rootfs" --config.env PATH=/bin && push "$T/L:marker" "$1" ||
		{ not_ok "the image $1"; exit 1; }
	skopeo login --tls-verify=false -u "$REG_USER" -p "$REG_PASS" "$REG" > /dev/null 2>&1
}

# push LAYOUT:TAG NAME:TAG [--all]: into $REG with skopeo.
push() {
	skopeo copy --quiet ${3:-} --dest-tls-verify=false --dest-creds "$REG_USER:$REG_PASS" \
		"oci:$1" "docker://$REG/$2"
}

# rootfs_busybox DIR: a small root (busybox and its applets, passwd, group),
# with a user app (1000) whose home is its own.
rootfs_busybox() {
	mkdir -p "$1/bin" "$1/etc" "$1/tmp" "$1/root" "$1/home/app"
	cp /bin/busybox "$1/bin/"
	for _a in sh ls cat id echo touch rm mkdir find stat sha256sum wc sort diff grep sed mv \
	    cp ln chmod chown readlink env head tail sleep whoami pwd true false; do
		ln -sf busybox "$1/bin/$_a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n' > "$1/etc/passwd"
	printf 'root:x:0:\napp:x:1000:\n' > "$1/etc/group"
	chown 1000:1000 "$1/home/app"
	chmod 0755 "$1"
}

# rootfs_dpkg DIR: rootfs_busybox plus dpkg (the host's binaries and the
# libraries they load) and an empty dpkg database: `dpkg -i` works inside.
rootfs_dpkg() {
	rootfs_busybox "$1"
	mkdir -p "$1/usr/bin" "$1/sbin" "$1/lib/x86_64-linux-gnu" "$1/lib64" \
		"$1/var/lib/dpkg/info" "$1/var/lib/dpkg/updates" "$1/var/lib/dpkg/triggers"
	rm -f "$1/bin/tar"
	cp /usr/bin/dpkg /usr/bin/dpkg-deb /usr/bin/dpkg-query /usr/bin/dpkg-split "$1/usr/bin/"
	cp /bin/tar "$1/bin/tar"
	cp /sbin/ldconfig /sbin/start-stop-daemon "$1/sbin/"
	for _l in $(ldd /usr/bin/dpkg /usr/bin/dpkg-deb /usr/bin/dpkg-query /usr/bin/dpkg-split \
	    /sbin/start-stop-daemon /bin/tar | grep -o '/lib[^ ]*' | sort -u); do
		case $_l in
		/lib64/*) cp -L "$_l" "$1/lib64/" ;;
		*) cp -L "$_l" "$1/lib/x86_64-linux-gnu/" ;;
		esac
	done
	: > "$1/var/lib/dpkg/status"
	: > "$1/var/lib/dpkg/available"
}

# oci_from_dir LAYOUT TAG DIR [umoci config args...]: DIR's tree as a new
# image LAYOUT:TAG (one layer, owners kept), with the config args given.
oci_from_dir() {
	_l=$1 _tag=$2 _dir=$3
	shift 3
	[ -d "$_l" ] || umoci init --layout "$_l" || return 1
	umoci new --image "$_l:$_tag" || return 1
	rm -rf "$T/bundle"
	umoci unpack --image "$_l:$_tag" "$T/bundle" > /dev/null || return 1
	cp -a "$_dir/." "$T/bundle/rootfs/"
	umoci repack --image "$_l:$_tag" "$T/bundle" || return 1
	rm -rf "$T/bundle"
	[ $# -eq 0 ] || umoci config --image "$_l:$_tag" "$@"
}

# oci_change LAYOUT FROM TO SCRIPT: a new layer over FROM, tagged TO: SCRIPT
# (sh) runs in the unpacked root; what it removes becomes whiteouts.
oci_change() {
	rm -rf "$T/bundle"
	umoci unpack --image "$1:$2" "$T/bundle" > /dev/null || return 1
	(cd "$T/bundle/rootfs" && sh -c "$4") || return 1
	umoci repack --image "$1:$3" "$T/bundle" || return 1
	rm -rf "$T/bundle"
}

# tar_layer OUT.tar PYTHON: a layer tar made by Python's tarfile, for what
# umoci does not write (opaque directories, hostile entries): PYTHON gets
# `t` (an open TarFile) and `add(name, data=b"", **TarInfo fields)`.
tar_layer() {
	python3 - "$1" "$2" <<'EOF'
import io, sys, tarfile
t = tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT)
def add(name, data=b"", **kw):
    ti = tarfile.TarInfo(name)
    ti.size = len(data) if kw.get("type", tarfile.REGTYPE) == tarfile.REGTYPE else 0
    ti.mtime = 1700000000
    for k, v in kw.items():
        setattr(ti, k, v)
    t.addfile(ti, io.BytesIO(data) if ti.size else None)
exec(sys.argv[2])
t.close()
EOF
}

# oci_index LAYOUT TAG ARCH=TAG...: an image index tagged TAG in LAYOUT naming
# the images tagged there, each as linux/ARCH.
oci_index() {
	python3 - "$@" <<'EOF'
import hashlib, json, os, sys
layout, tag = sys.argv[1], sys.argv[2]
ipath = os.path.join(layout, "index.json")
idx = json.load(open(ipath))
by_tag = {m["annotations"]["org.opencontainers.image.ref.name"]: m for m in idx["manifests"]}
ms = []
for spec in sys.argv[3:]:
    arch, t = spec.split("=")
    m = dict(by_tag[t])
    m.pop("annotations", None)
    m["platform"] = {"os": "linux", "architecture": arch}
    if arch == "arm64":
        m["platform"]["variant"] = "v8"
    ms.append(m)
body = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                   "manifests": ms}).encode()
d = hashlib.sha256(body).hexdigest()
open(os.path.join(layout, "blobs", "sha256", d), "wb").write(body)
idx["manifests"].append({"mediaType": "application/vnd.oci.image.index.v1+json",
                         "digest": "sha256:" + d, "size": len(body),
                         "annotations": {"org.opencontainers.image.ref.name": tag}})
json.dump(idx, open(ipath, "w"))
EOF
}

# tree_list ROOT: every path under ROOT with type, mode, owner, size, link
# target and content digest, one a line, sorted; hard links as one inode
# (the digest of their names' group), for comparing an unpacked image with
# what a sandbox shows.  Mount points of sbxtop's own are left out.
tree_list() {
	python3 - "$1" <<'EOF'
import hashlib, os, stat, sys
root = sys.argv[1]
skip = {"proc", "dev", "sys", "tmp", "workspace", "run", "opt"}
inodes = {}
out = []
for d, dirs, files in os.walk(root):
    rel = os.path.relpath(d, root)
    if rel == ".":
        dirs[:] = [x for x in dirs if x not in skip]
        files = [x for x in files if x not in skip]
    for n in sorted(dirs + files):
        p = os.path.join(d, n)
        st = os.lstat(p)
        r = os.path.normpath(os.path.join(rel, n))
        line = "%s %o %d:%d" % (r, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
        if stat.S_ISDIR(st.st_mode):
            line += " dir"
        elif stat.S_ISLNK(st.st_mode):
            line += " link " + os.readlink(p)
        elif stat.S_ISREG(st.st_mode):
            h = hashlib.sha256(open(p, "rb").read()).hexdigest()[:16]
            line += " file %d %s" % (st.st_size, h)
            if st.st_nlink > 1:
                inodes.setdefault(st.st_ino, []).append(r)
                line += " nlink%d" % st.st_nlink
        else:
            line += " other"
        out.append(line)
print("\n".join(sorted(out)))
EOF
}
