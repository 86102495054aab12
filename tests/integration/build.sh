# The build: each binary links only the libraries it uses (the agent bundle
# carries what the agent links; under -fsanitize nothing trims the link), also in
# a sanitizer build made here; a packager's CFLAGS and CPPFLAGS are added to the
# build's own (-I., the warnings), not put in their place; a missing library
# stops the build before any compile, naming the Debian package; pkg-config is
# always $(PKG_CONFIG); make test installs its packages before it compiles.
. "$(dirname "$0")/../lib.sh"

mk() { env -u MAKEFLAGS -u MAKELEVEL -u SANITIZE make --no-print-directory -C "$TOP" "$@"; }
# needed BINARY: every library it loads, its own and theirs (ldd).
needed() { ldd "$1" | awk '{print $1}' | sed 's/\.so.*//' | sort | tr '\n' ' '; }
# libs_of WHAT BINARY ALLOWED-REGEX: every library the binary itself links
# (DT_NEEDED) matches ALLOWED.
libs_of() {
	_bad=$(readelf -d "$2" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -Ev "$3" | tr '\n' ' ')
	if [ -z "$_bad" ]; then ok "$1"; else not_ok "$1"; diag "also links: $_bad"; fi
}
BASE='^(libc\.so|libm\.so|libpthread|libutil|libasan|libubsan|libgcc_s|libstdc\+\+|libdl|librt)'
# libarchive, zlib, libzstd, nettle and http-parser are linked in statically
# where their archives exist (Debian ships them); cJSON has none.
AGENT_OK="$BASE|^libcjson\\.so"

# The thin sbxtop is static (cli/cjson.c in place of cJSON) but under the
# sanitizers, whose runtimes are shared.
libs_of "sbxtop (thin) links no shared library but libc's" "$BUILD/sbxtop" "$BASE"
libs_of "sbxtop-launch links cjson and seccomp only" "$BUILD/sbxtop-launch" "$BASE|^lib(cjson|seccomp)\\.so"
libs_of "sbxtop-agent links cjson only (the rest is linked in)" "$BUILD/sbxtop-agent" "$AGENT_OK"
for l in libcurl libssl libncursesw libpcre2-8 libssh2 libmicrohttpd libgnutls libp11-kit; do
	case " $(needed "$BUILD/sbxtop-agent")" in
	*" $l "*) not_ok "the agent does not load $l" ;;
	*) ok "the agent does not load $l" ;;
	esac
done
like "sbxtop-core links them all" "$(needed "$BUILD/sbxtop-core")" \
	'libcurl .*libmicrohttpd .*libncursesw .*libpcre2-8 .*libseccomp .*libssh2 .*libssl'

# A sanitizer build of the agent and the thin sbxtop, with a packager's flags.
S="$T/san"
if mk BUILD="$S" SANITIZE=address,undefined CFLAGS="-O1 -g" CPPFLAGS=-DSBX_BUILD_TEST=1 \
    "$S/sbxtop-agent" "$S/sbxtop" > "$T/san.log" 2>&1; then
	ok "make SANITIZE=address,undefined CFLAGS='-O1 -g' CPPFLAGS=... builds the agent and sbxtop"
else
	not_ok "make SANITIZE=address,undefined CFLAGS='-O1 -g' CPPFLAGS=... builds the agent and sbxtop"
	sed 's/^/# /' "$T/san.log" | tail -n 30
fi
line=$(grep -m1 ' -c -o .*/obj/agent/http\.o' "$T/san.log")
like "... compiling with -I. and the warnings still" "$line" ' -I\. .*-Werror'
like "... and the packager's CPPFLAGS and CFLAGS" "$line" '-DSBX_BUILD_TEST=1 .*-O1 -g'
like "... and the sanitizer" "$line" '-fsanitize=address,undefined'
if [ -x "$S/sbxtop-agent" ]; then
	like "the sanitizer agent loads libasan" "$(needed "$S/sbxtop-agent")" 'libasan'
	libs_of "the sanitizer agent links no library it does not use" "$S/sbxtop-agent" "$AGENT_OK"
	libs_of "the sanitizer sbxtop links cjson only" "$S/sbxtop" "$BASE|^libcjson\\.so"
	is "the sanitizer agent runs" "$("$S/sbxtop-agent" --version 2>&1)" \
		"sbxtop-agent $(sed -n 's/^#define SBX_VERSION "\(.*\)"/\1/p' "$TOP/lib/util.h")"
fi

# Binaries without their agent bundle (a half-copied install): create fails
# with exit status 1 (a runtime error; 2 is bad usage) and says what to do.
mkdir -p "$T/bin"
cp "$BUILD/sbxtop" "$BUILD/sbxtop-core" "$T/bin/"
at_exit "'$T/bin/sbxtop' serve --stop"
out=$(env -u SBXTOP_AGENT_BUNDLE "$T/bin/sbxtop" create --name nobundle 2>&1); rc=$?
like "create with no agent bundle: exit status 1, naming the fix" "$rc:$out" \
	"^1:.*no agent bundle next to this executable \\($T/bin/agent-bundle\\).*make"
"$T/bin/sbxtop" serve --stop >/dev/null 2>&1

# Missing libraries: the build stops before compiling, naming the packages.
mkdir -p "$T/pc-none" "$T/pc-most"
for d in $(pkg-config --variable pc_path pkg-config | tr ':' ' '); do
	for pc in "$d"/*.pc; do
		[ -e "$pc" ] || continue
		case "$(basename "$pc")" in libssh2.pc) ;; *) ln -sf "$pc" "$T/pc-most/" ;; esac
	done
done
mk BUILD="$T/b-none" PKG_CONFIG="env PKG_CONFIG_LIBDIR=$T/pc-none pkg-config" all > "$T/o" 2>&1; rc=$?
out=$(tr '\n' ' ' < "$T/o")
like "no libraries: make fails, naming the Debian packages" "$rc:$out" \
	'^[1-9].*install the Debian packages: libmicrohttpd-dev libcjson-dev libcurl4-openssl-dev .*libssh2-1-dev \(scripts/deps.sh does\)'
check "... before compiling anything" test ! -e "$T/b-none/obj"
mk BUILD="$T/b-most" PKG_CONFIG="env PKG_CONFIG_LIBDIR=$T/pc-most pkg-config" all > "$T/o" 2>&1; rc=$?
out=$(tr '\n' ' ' < "$T/o")
like "libssh2 missing: the message names libssh2 and libssh2-1-dev only" "$rc:$out" \
	'the library libssh2 is missing.*install the Debian packages: libssh2-1-dev \('
# http-parser has no pkg-config module: its archive (or shared object) is looked
# for where the compiler's multiarch directory says.
mk BUILD="$T/b-hp" MULTIARCH=nonexistent all > "$T/o" 2>&1; rc=$?
like "http-parser missing: the message names libhttp-parser-dev" "$rc:$(tr '\n' ' ' < "$T/o")" \
	"^[1-9].*http-parser is missing.*install the Debian packages: libhttp-parser-dev \\("
check "... before compiling anything" test ! -e "$T/b-hp/obj"
out=$(mk BUILD="$T/b-pc" PKG_CONFIG=/nonexistent/pkg-config all 2>&1); rc=$?
like "no pkg-config: the message names it" "$rc:$out" '^[1-9].*pkg-config is missing: install the Debian package pkg-config'

# $(PKG_CONFIG) everywhere: pkg-config appears only where PKG_CONFIG is set.
bare=$(grep -n 'pkg-config --' "$TOP/Makefile")
if [ -z "$bare" ]; then ok "no bare pkg-config in the Makefile"; else not_ok "no bare pkg-config in the Makefile"; diag "$bare"; fi

# make test: the package check comes first, the build in a second make.
out=$(mk -n -j2 test 2>&1 | grep -n -E 'scripts/deps.sh|^make .*all unit' | head -n 2 | tr '\n' ' ')
like "make -j2 test checks the packages before it builds" "$out" \
	'^1:scripts/deps.sh --check --test.*2:make .*all unit'
out=$(mk -n run 2>&1 | grep -n -E 'scripts/deps.sh|^make .*all' | head -n 2 | tr '\n' ' ')
like "make run installs only the build and run set (no --test)" "$out" \
	'^1:scripts/deps.sh --check >/dev/null 2>&1 \|\| scripts/deps.sh 2:'
like "make all builds the agent bundle" "$(mk -n -p all 2>/dev/null | grep -m1 '^all:')" 'agent-bundle'
# clang with the same -Werror set: every object and binary of the tree.
if command -v clang >/dev/null 2>&1; then
	if mk CC=clang BUILD="$T/clang" -j2 all > "$T/clang.log" 2>&1; then
		ok "make CC=clang builds every binary with -Werror"
	else
		not_ok "make CC=clang builds every binary with -Werror"
		grep -E 'error:|warning:' "$T/clang.log" | head -n 20 | sed 's/^/# /'
	fi
else
	ok "# SKIP no clang"
fi
done_testing
