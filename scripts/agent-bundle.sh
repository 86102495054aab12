#!/bin/sh
# Make the agent bundle: the agent binary plus every shared object it loads and the
# dynamic loader, so it runs in any rootfs (a busybox image, a distro image, an AWS
# MicroVM image) whatever libraries that rootfs has.
#   scripts/agent-bundle.sh BINARY OUTDIR [EXTRA-BINARY...]
#   LIBDIRS="/usr/lib/aarch64-linux-gnu ..." scripts/agent-bundle.sh BINARY OUTDIR
# The second form is for binaries of another architecture, which ldd cannot
# inspect: their DT_NEEDED entries (readelf) are looked up in LIBDIRS, recursively.
# OUTDIR/sbxtop-agent is the entry point: it runs the bundled loader on the bundled
# libraries only, never the rootfs's.  Each extra binary (the ns launcher,
# sbxtop-launch, which remote hosts run) gets an entry point of the same kind.
set -eu
bin=$1
out=$2
shift 2
rm -rf "$out.tmp"
mkdir -p "$out.tmp/lib" "$out.tmp/bin"
# Copy the loader named in PT_INTERP, then each library $1 needs and what those
# need, found in LIBDIRS.
foreign_libs() {
	interp=$(readelf -l "$1" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
	[ -n "$interp" ] || { echo "agent-bundle: $1 has no program interpreter" >&2; exit 1; }
	cp -L "$interp" "$out.tmp/lib/"
	todo=$1
	while [ -n "$todo" ]; do
		next=""
		for f in $todo; do
			for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
				[ -e "$out.tmp/lib/$n" ] && continue
				found=""
				for d in $LIBDIRS; do
					[ -e "$d/$n" ] && { found="$d/$n"; break; }
				done
				[ -n "$found" ] || { echo "agent-bundle: $n (needed by $f) not in $LIBDIRS" >&2; exit 1; }
				cp -L "$found" "$out.tmp/lib/$n"
				next="$next $out.tmp/lib/$n"
			done
		done
		todo=$next
	done
}

for b in "$bin" "$@"; do
	cp "$b" "$out.tmp/bin/"
	if [ -n "${LIBDIRS:-}" ]; then
		foreign_libs "$b"
		continue
	fi
	ldd "$b" | while read -r a _ c _; do
		case "$a" in
		linux-vdso*) ;;
		/*) cp -L "$a" "$out.tmp/lib/" ;;	# the loader: /lib64/ld-linux-x86-64.so.2
		*) [ -n "${c:-}" ] && [ "$c" != "not" ] && cp -L "$c" "$out.tmp/lib/" ;;
		esac
	done
done
loader=$(cd "$out.tmp/lib" && ls ld-linux-* ld-musl-* 2>/dev/null | head -n 1)
[ -n "$loader" ] || { echo "agent-bundle: no dynamic loader found for $bin" >&2; exit 1; }
for b in "$bin" "$@"; do
	name=$(basename "$b")
	cat > "$out.tmp/$name" <<EOS
#!/bin/sh
d=\$(dirname "\$0")
exec "\$d/lib/$loader" --library-path "\$d/lib" "\$d/bin/$name" "\$@"
EOS
	chmod 0755 "$out.tmp/$name"
done
chmod 0755 "$out.tmp/lib/$loader"
rm -rf "$out"
mv "$out.tmp" "$out"
