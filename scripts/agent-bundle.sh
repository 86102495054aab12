#!/bin/sh
# Make the agent bundle: the agent binary plus every shared object it loads and the
# dynamic loader, so it runs in any rootfs (a busybox image, a distro image, an AWS
# MicroVM image) whatever libraries that rootfs has.
#   scripts/agent-bundle.sh BINARY OUTDIR
#   LIBDIRS="/usr/lib/aarch64-linux-gnu ..." scripts/agent-bundle.sh BINARY OUTDIR
# The second form is for a binary of another architecture, which ldd cannot
# inspect: its DT_NEEDED entries (readelf) are looked up in LIBDIRS, recursively.
# OUTDIR/sbxtop-agent is the entry point: it runs the bundled loader on the bundled
# libraries only, never the rootfs's.
set -eu
bin=$1
out=$2
rm -rf "$out.tmp"
mkdir -p "$out.tmp/lib" "$out.tmp/bin"
cp "$bin" "$out.tmp/bin/sbxtop-agent"
if [ -n "${LIBDIRS:-}" ]; then
	# The loader named in PT_INTERP, then each needed library and what it needs.
	interp=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
	[ -n "$interp" ] || { echo "agent-bundle: $bin has no program interpreter" >&2; exit 1; }
	cp -L "$interp" "$out.tmp/lib/"
	todo=$bin
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
else
	ldd "$bin" | while read -r a b c d; do
		case "$a" in
		linux-vdso*) ;;
		/*) cp -L "$a" "$out.tmp/lib/" ;;		# the loader: /lib64/ld-linux-x86-64.so.2
		*) [ -n "${c:-}" ] && [ "$c" != "not" ] && cp -L "$c" "$out.tmp/lib/" ;;
		esac
	done
fi
loader=$(cd "$out.tmp/lib" && ls ld-linux-* ld-musl-* 2>/dev/null | head -n 1)
[ -n "$loader" ] || { echo "agent-bundle: no dynamic loader found for $bin" >&2; exit 1; }
cat > "$out.tmp/sbxtop-agent" <<EOS
#!/bin/sh
d=\$(dirname "\$0")
exec "\$d/lib/$loader" --library-path "\$d/lib" "\$d/bin/sbxtop-agent" "\$@"
EOS
chmod 0755 "$out.tmp/sbxtop-agent" "$out.tmp/lib/$loader"
rm -rf "$out"
mv "$out.tmp" "$out"
